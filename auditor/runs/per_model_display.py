"""The run page's effect per model: each policy's tables per model (and per run source within a
model that has several) shaped like its run-level table, the difference of Δ between each two
models, and the forest plot of Δ with its interval per model and per category — drawn also,
one row a policy, as the run's chart of Δ per policy.

Reads only the run's summary (`policies.stats.report.ModelTables`): no table is computed here.
The forest plot is a plotly figure drawn by static/js/trace.js; its colours are CSS variables
(`var(--ok)`, …) that the script reads from the page's theme, so it is readable in light and
dark mode."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from auditor.runs.stats_display import delta_display
from policies.stats.report import NO_MODEL

#: A marker's colour per significance class (`delta_display`), as the theme's CSS variables.
COLOURS = {
    "sig-pos": "var(--ok)",
    "sig-neg": "var(--bad)",
    "nonsig": "var(--muted)",
    "none": "var(--muted)",
}
#: A forest plot row's label at most (longer ones are cut with "…"; the hover names it whole).
LABEL_CHARS = 24
#: The forest plot's height per row and around the rows, in px.
ROW_PX = 26
MARGIN_PX = 106


#: Where a name may wrap: after each separator of its words (`multi_turn_miss_param`,
#: `openai/gpt-oss-20b`), so that a narrow column wraps between words, never inside one.
_BREAK_AFTER = re.compile(r"(?<=[_/.:-])(?=.)")


def name_parts(name: str) -> list[str]:
    """``name`` cut after each word separator; the template puts a <wbr> after each part (the
    parts themselves are escaped like any text)."""
    return _BREAK_AFTER.split(name)


def _group(name: str, part: Mapping[str, Any], link: Callable[..., str]) -> dict[str, Any]:
    overall = part.get("overall") or {}
    return {
        "name": name,
        "name_parts": name_parts(name),
        "summary": part,
        "overall": overall,
        "d": delta_display(overall),
        "link": link(),
        "categories": [
            {
                "category": c,
                **row,
                "name_parts": name_parts(c),
                "d": delta_display(row),
                "link": link(category=c),
            }
            for c, row in (part.get("per_category") or {}).items()
        ],
    }


def model_groups(summary: Mapping[str, Any], link: Callable[..., str]) -> list[dict[str, Any]]:
    """Per model: its overall row and per-category rows (as `selectors.policy_tables` shapes
    the run's), with ``sources`` when it has several run sources. ``link(model=…, …)`` gives a
    traces-list URL filtered to the rows' traces."""
    out = []
    for model, part in (summary.get("per_model") or {}).items():
        named = "" if model == NO_MODEL else model  # the list's filter: all models

        def by_model(named: str = named, **kw: Any) -> str:
            return link(model=named, **kw)

        g = _group(model, part, by_model)
        g["sources"] = [_group(src, q, by_model) for src, q in (part.get("sources") or {}).items()]
        out.append(g)
    return out


def model_differences(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The difference of Δ between each two models (`policies.stats.did`) with its colour."""
    out = []
    for d in summary.get("model_differences") or []:
        ci = d.get("ci")
        if ci is None:
            significance = "none"
        elif d.get("excludes_zero"):
            significance = "sig-pos" if ci[0] > 0 else "sig-neg"
        else:
            significance = "nonsig"
        out.append(
            {
                **d,
                "significance": significance,
                "a_parts": name_parts(str(d.get("a") or "")),
                "b_parts": name_parts(str(d.get("b") or "")),
            }
        )
    return out


def _point(label: str, d: Mapping[str, Any], *, overall: bool) -> dict[str, Any] | None:
    """A row of the forest plot: Δ over known pairs with the headline interval, or the interval
    alone (``x`` None) where no pair is known."""
    x = d.get("delta_known")
    ci = d.get("ci")
    if ci is None:
        return None
    at = "no known pair" if x is None else f"Δ {x:.3f}"
    return {
        "y": label,
        "x": x,
        "ci": ci,
        "plus": max(ci[1] - x, 0.0) if x is not None else None,
        "minus": max(x - ci[0], 0.0) if x is not None else None,
        "colour": COLOURS[d.get("significance") or "none"],
        "overall": overall,
        "label": label,
        "bounds": d.get("bounds"),
        "n_unknown": d.get("n_unknown") or 0,
        "text": (
            f"{label}: {at} · interval [{ci[0]:.3f}, {ci[1]:.3f}]"
            f" · n {d.get('n_applicable') or 0} · unknown {d.get('n_unknown') or 0}"
        ),
    }


def forest_figure(
    title: str, groups: list[dict[str, Any]], *, bounds: bool = False
) -> dict[str, Any] | None:
    """A forest plot of Δ (guarded − actor, over known pairs) with its headline interval per
    group — a model, or on the run's chart a policy — (diamonds) and per category within each
    group (dots), top to bottom in the table's order; a row without a known pair shows its
    interval alone (dashed, no point). With ``bounds``, a row with unknowns also marks its
    bounds (every unknown a harm / a rescue) with open ticks. None when no row has an
    interval."""
    points = []
    for g in groups:
        points.append(_point(g["name"], g["d"], overall=True))
        for c in g["categories"]:
            points.append(_point(f"{g['name']} · {c['category']}", c["d"], overall=False))
    shown = [p for p in points if p is not None]
    if not shown:
        return None
    # Rows by position, labelled apart: a category's label is its own name, indented under its
    # model's (the hover text names both), so that labels stay short on a phone.
    ticks = []
    for i, p in enumerate(shown):
        name = p["y"] if p["overall"] else "· " + p["y"].split(" · ", 1)[1]
        ticks.append(name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…")
        p["y"] = i
    data = []
    for overall in (True, False):
        rows = [p for p in shown if p["overall"] is overall and p["x"] is not None]
        if not rows:
            continue
        colours = [p["colour"] for p in rows]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "model, all categories" if overall else "model · category",
                "x": [p["x"] for p in rows],
                "y": [p["y"] for p in rows],
                "text": [p["text"] for p in rows],
                "hoverinfo": "text",
                "marker": {
                    "symbol": "diamond" if overall else "circle",
                    "size": 12 if overall else 8,
                    "color": colours,
                },
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": [p["plus"] for p in rows],
                    "arrayminus": [p["minus"] for p in rows],
                    "color": "var(--muted)",
                    "thickness": 1.5,
                    "width": 4,
                },
            }
        )
    marked = [p for p in shown if bounds and p["bounds"] and p["n_unknown"]]
    if marked:  # first, so that the points and intervals are drawn over it
        data.insert(
            0,
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "bounds (every unknown a harm / a rescue)",
                "x": [v for p in marked for v in (*p["bounds"], None)],
                "y": [v for p in marked for v in (p["y"], p["y"], None)],
                "text": [
                    v
                    for p in marked
                    for v in (
                        *[
                            f"{p['label']}: bounds [{p['bounds'][0]:.3f}, {p['bounds'][1]:.3f}]"
                            f" with {p['n_unknown']} unknown"
                        ]
                        * 2,
                        None,
                    )
                ],
                "hoverinfo": "text",
                "line": {"color": "var(--warn)", "dash": "dot", "width": 1},
                "marker": {
                    "symbol": "line-ns-open",
                    "size": 16,
                    "color": "var(--warn)",
                    "line": {"color": "var(--warn)", "width": 2},
                },
            },
        )
    alone = [p for p in shown if p["x"] is None]
    if alone:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "interval alone (no known pair)",
                "x": [v for p in alone for v in (p["ci"][0], p["ci"][1], None)],
                "y": [v for p in alone for v in (p["y"], p["y"], None)],
                "text": [v for p in alone for v in (p["text"], p["text"], None)],
                "hoverinfo": "text",
                "line": {"color": "var(--muted)", "dash": "dot", "width": 2},
            }
        )
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 14}},
            "height": MARGIN_PX + ROW_PX * len(shown),
            "margin": {"l": 10, "r": 10, "t": 40, "b": 56},
            # two short lines: one would be cut at a phone's width, where the plot is ~200 px
            "xaxis": {"title": {"text": "Δ (guarded − actor)<br>95 % interval"}, "zeroline": True},
            "yaxis": {
                "automargin": True,
                "autorange": "reversed",
                "tickmode": "array",
                "tickvals": list(range(len(shown))),
                "ticktext": ticks,
                "zeroline": False,
                "showgrid": False,
            },
            "showlegend": False,
        },
    }


def attach(table: dict[str, Any], link: Callable[..., str]) -> None:
    """Add a policy's per-model parts to its run-page table (`selectors.policy_tables`):
    ``models``, ``model_diffs`` and the ``forest`` figure (None without a Δ), shown when the run
    has several models or a model several run sources."""
    summary = table.get("summary") or {}
    groups = model_groups(summary, link)
    table["models"] = groups
    table["models_shown"] = len(groups) > 1 or any(g["sources"] for g in groups)
    table["model_diffs"] = model_differences(summary)
    table["forest"] = (
        forest_figure(f"{table['policy']}: Δ success per model and category", groups)
        if table["models_shown"]
        else None
    )


def run_delta_figure(tables: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run page's chart: each policy's Δ with its interval and bounds, one row a policy
    (the per-model forest plot's drawing, the policies as its groups). None when no policy has
    an interval."""
    groups = [{"name": t["policy"], "d": t["d"], "categories": []} for t in tables]
    return forest_figure("Δ success per policy (guarded − actor)", groups, bounds=True)
