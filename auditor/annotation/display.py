"""What the annotation page shows for an item: the task, the events around the decision, and
for pairs the two candidates as A and B in the claim's order (nothing says which is the actor).
Plain text only: the template escapes it, nothing is marked safe."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from auditor.annotation.models import AnnotationItem
from traces.models import Event

TEXT_LIMIT = 4000


def _text(value: Any) -> str:
    """Plain text for the page (escaped by the template, never marked safe)."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return s if len(s) <= TEXT_LIMIT else s[:TEXT_LIMIT] + f"… ({len(s) - TEXT_LIMIT} more)"


def _event_line(ev: Mapping[str, Any]) -> dict[str, str]:
    kind = str(ev.get("type") or "")
    if kind == "message":
        return {"type": kind, "who": str(ev.get("role") or ""), "text": _text(ev.get("content"))}
    if kind == "tool_call":
        return {
            "type": kind,
            "who": str(ev.get("name") or ""),
            "text": _text(ev.get("arguments")),
        }
    if kind == "tool_result":
        return {"type": kind, "who": str(ev.get("status") or ""), "text": _text(ev.get("content"))}
    if kind == "candidate":
        body = ev.get("answer") if ev.get("answer") is not None else ev.get("content")
        return {"type": kind, "who": f"round {ev.get('round', '')}", "text": _text(body)}
    if kind == "trace":
        return {"type": kind, "who": "", "text": ""}
    return {
        "type": kind,
        "who": "",
        "text": _text({k: v for k, v in ev.items() if k != "trace_id"}),
    }


def _lines(events: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Display lines of events, without the header (it says nothing to an annotator)."""
    return [_event_line(e) for e in events if e.get("type") != "trace"]


def _events(item: AnnotationItem, start: int, stop: int) -> list[dict[str, Any]]:
    """The trace's events [start, stop) in replay order (the policies' event indices)."""
    start = max(0, start)
    if stop <= start:
        return []
    return list(
        Event.objects.filter(trace_id=item.result.trace_id)
        .order_by("seq")
        .values_list("payload", flat=True)[start:stop]
    )


def _first_user_message(item: AnnotationItem) -> str:
    ev = (
        Event.objects.filter(trace_id=item.result.trace_id, type="message", role="user")
        .order_by("seq")
        .values_list("payload", flat=True)
        .first()
    )
    return _text((ev or {}).get("content"))


def _call_view(call: Mapping[str, Any]) -> dict[str, str]:
    kind = call.get("kind") or "call"
    if kind == "completion":
        return {"kind": "reply", "title": "Reply to the user", "body": _text(call.get("text"))}
    if kind == "delete" or (not call.get("name") and not call.get("text")):
        return {"kind": "nothing", "title": "No call (do nothing here)", "body": ""}
    return {
        "kind": "call",
        "title": str(call.get("name") or ""),
        "body": _text(call.get("arguments") or {}),
    }


def item_display(item: AnnotationItem, *, blind: bool = True) -> dict[str, Any]:
    """What the annotation page shows for an item. For pairs the two candidates come as A and
    B in the order of the current claim; nothing on the page says which is the actor."""
    p = item.payload or {}
    out: dict[str, Any] = {"kind": item.kind, "task": _first_user_message(item)}
    if item.kind == "outcome":
        out["needs"] = p.get("needs") or "guarded outcome"
        # an item about the actor's outcome shows the recorded trajectory, not the guarded one
        traj = item.result.guarded_trajectory if out["needs"] != "actor outcome" else None
        if not traj:
            n = Event.objects.filter(trace_id=item.result.trace_id).count()
            traj = _events(item, n - 12, n)
        out["events"] = _lines((traj or [])[-12:])
        out["continuation"] = item.result.continuation
        out["policy"] = item.result.policy
        out["actor_success"] = item.result.actor_success
    elif item.kind == "pair":
        idx = int(p.get("call_index") or 0)
        out["events"] = _lines(_events(item, idx - 8, idx))
        views = {
            "actor": _call_view({"kind": "call", **(p.get("call") or {})}),
            "twin": _call_view(p.get("twin") or {}),
        }
        order = item.claim_order or ["actor", "twin"]
        out["a"], out["b"] = views[order[0]], views[order[1]]
        if not blind:
            out["order"] = order
            out["actor"], out["twin"] = views["actor"], views["twin"]
    elif item.kind == "feedback":
        idx = int(p.get("index") or 0)
        before = p.get("candidate_before")
        start = int(before) if before is not None else idx - 4
        out["events"] = _lines(_events(item, start, idx))
        fb = _events(item, idx, idx + 1)
        out["feedback"] = _event_line(fb[0]) if fb else None
        after = p.get("candidate_after")
        nxt = _events(item, int(after), int(after) + 1) if after is not None else []
        out["after"] = _event_line(nxt[0]) if nxt else None
    elif item.kind == "commit":
        shipped = int(p.get("shipped_round") or 0)
        cands = sorted(
            Event.objects.filter(trace_id=item.result.trace_id, type="candidate").values_list(
                "payload", flat=True
            ),
            key=lambda e: (e.get("round") if isinstance(e.get("round"), int) else 0),
        )
        cand = cands[shipped] if shipped < len(cands) else None
        out["candidate"] = _event_line(cand) if cand else None
        out["shipped_round"] = shipped
        out["n_rounds"] = len(cands)
    return out
