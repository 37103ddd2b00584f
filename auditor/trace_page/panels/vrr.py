"""The VRR panel: per round votes, beliefs and gains; the actor's, stop and guard rounds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.trace_page.text import as_dict, as_list, finite, fmt_num, visible


def round_votes(events: Iterable[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """Summed (accepts, votes) per round, from ``verification`` events (their ``round``, else
    the round of the candidate they name)."""
    rounds_of: dict[str, int] = {}
    verifications = []
    for ev in events:
        if ev.get("type") == "candidate" and isinstance(ev.get("round"), int):
            rounds_of[str(ev.get("candidate_id"))] = ev["round"]
        elif ev.get("type") == "verification":
            verifications.append(ev)
    out: dict[int, tuple[int, int]] = {}
    for v in verifications:
        r = v.get("round")
        if not isinstance(r, int):
            r = rounds_of.get(str(v.get("candidate_id")))
        a, n = finite(v.get("accepts")), finite(v.get("votes"))
        if r is None or a is None or n is None:
            continue
        pa, pn = out.get(r, (0, 0))
        out[r] = (pa + int(a), pn + int(n))
    return out


def vrr_panel(
    record: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Per round: votes, prior and posterior belief, marginal gain, true validity; the actor's,
    the stop rule's and the guard's rounds marked (SPEC §5.3)."""
    n_rounds = record.get("n_rounds")
    beliefs = as_list(record.get("beliefs"))
    priors = as_list(record.get("priors"))
    gains = as_list(record.get("gains"))
    validity = as_list(record.get("true_validity"))
    incumbents = as_list(record.get("guard_incumbents"))
    votes = round_votes(events)
    if not isinstance(n_rounds, int):
        n_rounds = max(len(beliefs), len(validity), len(incumbents), len(votes), 0)
    rows = []
    for k in range(n_rounds):
        a, n = votes.get(k, (None, None))
        tv = validity[k] if k < len(validity) else None
        rows.append(
            {
                "round": k,
                "votes": f"{a}/{n}" if n else "—",
                "prior": fmt_num(priors[k] if k < len(priors) else None),
                "belief": fmt_num(beliefs[k] if k < len(beliefs) else None),
                "gain": fmt_num(gains[k] if k < len(gains) else None),
                "valid": tv if isinstance(tv, bool) else None,
                "incumbent": incumbents[k] if k < len(incumbents) else None,
                "actor": k == record.get("actor_round"),
                "stop": k == record.get("stop_round"),
                "guard": k == record.get("guard_round"),
                "shipped": k == record.get("shipped_round"),
            }
        )
    xs = list(range(n_rounds))
    data: list[dict[str, Any]] = []
    if votes:
        data.append(
            {
                "type": "bar",
                "name": "accept share (votes)",
                "x": xs,
                "y": [
                    (votes[k][0] / votes[k][1]) if k in votes and votes[k][1] else None for k in xs
                ],
                "text": [f"{votes[k][0]}/{votes[k][1]}" if k in votes else "" for k in xs],
                "textposition": "inside",
                "insidetextfont": {"color": "var(--fg)"},
                "marker": {
                    "color": "var(--chart-fill)",
                    "line": {"color": "var(--chart-1)", "width": 1},
                },
            }
        )
    if beliefs:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "belief after the votes",
                "x": xs[: len(beliefs)],
                "y": [finite(b) for b in beliefs],
                "line": {"color": "var(--chart-1)"},
            }
        )
    if priors:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "belief before the votes",
                "x": xs[: len(priors)],
                "y": [finite(b) for b in priors],
                "line": {"color": "var(--chart-1)", "dash": "dot"},
            }
        )
    if gains:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "expected gain of one more repair",
                "x": xs[: len(gains)],
                "y": [finite(g) for g in gains],
                "yaxis": "y2",
                "line": {"color": "var(--chart-2)"},
            }
        )
    known = [(k, v) for k, v in enumerate(validity[:n_rounds]) if isinstance(v, bool)]
    if known:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "true validity",
                "x": [k for k, _ in known],
                "y": [1.0 if v else 0.0 for _, v in known],
                "marker": {
                    "symbol": ["circle" if v else "x" for _, v in known],
                    "size": 12,
                    "color": ["var(--ok)" if v else "var(--bad)" for _, v in known],
                },
            }
        )
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    markers = (
        ("actor_round", "actor shipped", "var(--muted)", 1.0),
        ("stop_round", "VRR-Stop", "var(--bad)", 0.92),
        ("guard_round", "VRR-Guard", "var(--chart-3)", 0.84),
    )
    for key, text, colour, y in markers:
        x = record.get(key)
        if isinstance(x, int) and not isinstance(x, bool):
            shapes.append(
                {
                    "type": "line",
                    "x0": x,
                    "x1": x,
                    "yref": "paper",
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": colour, "dash": "dash", "width": 2},
                }
            )
            annotations.append(
                {
                    "x": x,
                    "y": y,
                    "yref": "paper",
                    "showarrow": False,
                    "xanchor": "left",
                    "font": {"color": colour, "size": 11},
                    "text": f" {text}",
                }
            )
    figure = None
    if data:
        layout: dict[str, Any] = {
            "height": 320,
            "margin": {"l": 50, "r": 60, "t": 30, "b": 40},
            "xaxis": {
                "title": {"text": "round"},
                "dtick": 1,
                "range": [-0.5, max(n_rounds, 1) - 0.5],
            },
            "yaxis": {"title": {"text": "probability"}, "range": [-0.05, 1.1]},
            "shapes": shapes,
            "annotations": annotations,
            "legend": {"orientation": "h", "y": -0.25},
        }
        if gains:
            layout["yaxis2"] = {
                "title": {"text": "gain"},
                "overlaying": "y",
                "side": "right",
                "zeroline": True,
            }
        figure = {"data": data, "layout": layout}
    missing = [k for k in ("beliefs", "gains", "true_validity") if not record.get(k)]
    if not votes:
        missing.append("votes")
    return {
        "mode": visible(str(record.get("mode", ""))),
        "reason": visible(str(record.get("reason", ""))),
        "rows": rows,
        "actor_round": record.get("actor_round"),
        "shipped_round": record.get("shipped_round"),
        "stop_round": record.get("stop_round"),
        "guard_round": record.get("guard_round"),
        "rounds_saved": record.get("rounds_saved"),
        "params": {
            k: fmt_num(v) for k, v in as_dict(as_dict(record.get("settings")).get("params")).items()
        },
        "figure": figure,
        "missing": missing,
    }
