"""The claim checklist panel: claims, feedback events and the confidence timeline (SPEC §5.2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.trace_page.text import as_dict, as_list, finite, fmt_num, short, visible


def _claim_texts(claims_events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The latest text of each claim id across the trace's ``claims`` records."""
    texts: dict[str, str] = {}
    for ev in claims_events:
        for c in as_list(ev.get("claims")):
            if isinstance(c, Mapping) and c.get("id") is not None and c.get("text") is not None:
                texts[str(c["id"])] = visible(str(c["text"]))
    return texts


def _theta_line(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The revision threshold θ the run used, as a dashed line — only when the record says which
    θ: a record without it gets no line rather than a guessed default (θ = 0 is a real value)."""
    theta = finite(as_dict(record.get("settings")).get("theta"))
    if theta is None:
        return []
    return [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": theta,
            "y1": theta,
            "line": {"color": "var(--muted)", "width": 1, "dash": "dash"},
        }
    ]


#: The theme's colours (static/js/trace.js resolves them from the page's CSS).
FEEDBACK_COLOURS = {True: "var(--ok)", False: "var(--bad)", None: "var(--muted)"}


def _segments(pts: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """A claim's points split into its versions: a new segment where the version changes (or,
    in a record stored before versions, where a point is marked revised)."""
    out: list[list[Mapping[str, Any]]] = []
    for p in pts:
        starts = not out or p.get("revised") or p.get("version") != out[-1][-1].get("version")
        if starts:
            out.append([])
        out[-1].append(p)
    return out


def _version_traces(
    cid: str, pts: list[Mapping[str, Any]], versions: list[Any]
) -> list[dict[str, Any]]:
    """One plotly line per claim VERSION: a changed text is a new claim meaning, so no line
    joins two versions. Versions of one claim share a legend group and colour
    group; a later version is named with the one it revises."""
    texts = {
        v.get("version"): visible(str(v.get("text", "")))
        for v in versions
        if isinstance(v, Mapping)
    }
    out = []
    for n, seg in enumerate(_segments(pts), start=1):
        version = seg[0].get("version") or n
        name = f"{cid} v{version}" + (f" (revises v{version - 1})" if version > 1 else "")
        text = texts.get(version, "")
        hover = [
            f"{name} @ event {p.get('record')}: {fmt_num(p.get('confidence'), 2)}"
            + (f" · “{short(text, 80)}”" if text else "")
            + (" · post-complaint record" if p.get("post_complaint") else "")
            for p in seg
        ]
        out.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name,
                "legendgroup": cid,
                "x": [p.get("record") for p in seg],
                "y": [finite(p.get("confidence")) for p in seg],
                "text": hover,
                "hoverinfo": "text",
                "line": {"dash": "solid" if version == 1 else "dash"},
                "marker": {
                    "symbol": [
                        "x"
                        if p.get("post_complaint")
                        else "diamond"
                        if i == 0 and version > 1
                        else "circle"
                        for i, p in enumerate(seg)
                    ],
                    "size": 10,
                },
                "meta": {"claim": cid, "version": version},
            }
        )
    return out


def checklist_panel(
    record: Mapping[str, Any], claims_events: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The claims table (each claim's confidences, revisions, flags), the feedback events with
    their classification, and a plotly figure of the per-claim confidence timeline with
    feedback (valid / mistaken) and flags marked (SPEC §5.2)."""
    timeline = as_dict(record.get("timeline"))
    per_claim = as_dict(timeline.get("claims"))
    versions = as_dict(timeline.get("versions"))
    flags = [f for f in as_list(record.get("flags")) if isinstance(f, Mapping)]
    texts = _claim_texts(claims_events)
    flags_by_claim: dict[str, list[str]] = {}
    for f in flags:
        flags_by_claim.setdefault(str(f.get("claim", "")), []).append(
            visible(str(f.get("flag", "?")).replace("_", " "))
        )
    claims = []
    traces = []
    for cid, points in per_claim.items():
        pts = [p for p in as_list(points) if isinstance(p, Mapping)]
        confs = [finite(p.get("confidence")) for p in pts]
        claims.append(
            {
                "id": visible(str(cid)),
                "text": texts.get(str(cid), ""),
                "confidences": " → ".join(fmt_num(c, 2) for c in confs) or "—",
                "revisions": sum(1 for p in pts if p.get("revised")),
                "post_complaint": sum(1 for p in pts if p.get("post_complaint")),
                "flags": flags_by_claim.get(str(cid), []),
            }
        )
        traces.extend(_version_traces(str(cid), pts, as_list(versions.get(cid))))
    feedback = []
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for fb in as_list(record.get("feedback_events")):
        if not isinstance(fb, Mapping):
            continue
        valid = fb.get("valid") if isinstance(fb.get("valid"), bool) else None
        feedback.append(
            {
                "index": fb.get("index"),
                "turn": fb.get("turn"),
                "kind": visible(str(fb.get("kind", ""))),
                "valid": valid,
                "targeted": ", ".join(visible(str(t)) for t in as_list(fb.get("targeted"))),
                "targeting": visible(str(fb.get("targeting", ""))),
                "action": visible(str(fb.get("action", ""))),
                "actor_class": visible(str(fb.get("actor_class", "")).replace("_", " ")),
                "guarded_class": visible(str(fb.get("guarded_class", "")).replace("_", " ")),
                "actor_revised": fb.get("actor_revised"),
                "post_complaint_records": len(as_list(fb.get("post_complaint_records"))),
                "record_source": visible(str(fb.get("record_source", "")).replace("_", " ")),
            }
        )
        x = fb.get("index")
        if isinstance(x, (int, float)):
            colour = FEEDBACK_COLOURS[valid]
            shapes.append(
                {
                    "type": "line",
                    "x0": x,
                    "x1": x,
                    "yref": "paper",
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": colour, "dash": "dot", "width": 2},
                }
            )
            annotations.append(
                {
                    "x": x,
                    "y": 1,
                    "yref": "paper",
                    "yanchor": "bottom",
                    "showarrow": False,
                    "font": {"color": colour, "size": 11},
                    "text": "valid feedback"
                    if valid
                    else "mistaken feedback"
                    if valid is False
                    else "feedback",
                }
            )
    for f in flags:
        x = f.get("record")
        if isinstance(x, (int, float)):
            annotations.append(
                {
                    "x": x,
                    "y": 0.02,
                    "yref": "paper",
                    "showarrow": False,
                    "font": {"color": "var(--warn)", "size": 11},
                    "text": "⚑ " + str(f.get("flag", "flag")).replace("_", " "),
                }
            )
    figure = None
    if traces:
        figure = {
            "data": traces,
            "layout": {
                "height": 300,
                "margin": {"l": 50, "r": 20, "t": 30, "b": 40},
                "xaxis": {"title": {"text": "event index"}, "zeroline": False},
                "yaxis": {"title": {"text": "confidence"}, "range": [0, 1.05]},
                "shapes": shapes + _theta_line(record),
                "annotations": annotations,
                "legend": {"orientation": "h", "y": -0.25},
            },
        }
    missing = [k for k in ("feedback_events", "timeline") if k not in record]
    return {
        "claims": claims,
        "feedback": feedback,
        "flags": [
            {
                "flag": visible(str(f.get("flag", "?")).replace("_", " ")),
                "record": f.get("record"),
                "claim": visible(str(f.get("claim", ""))),
                "ref": short(f.get("ref", ""), 60) if f.get("ref") is not None else "",
            }
            for f in flags
        ],
        "figure": figure,
        "theta": fmt_num(as_dict(record.get("settings")).get("theta")),
        "schedule": visible(str(as_dict(record.get("settings")).get("schedule", ""))),
        "draft_first": record.get("draft_first"),
        "missing": missing,
    }
