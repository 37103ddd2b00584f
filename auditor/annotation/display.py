"""What the annotation page shows for an item: the question's context as the annotator needs
it — the decision point inside its turn (that turn's latest user request, then the calls and
results before the decision), the earlier trajectory folded away — and for pairs the two
candidates as A and B in the claim's order, shaped by one function with the same wording (nothing
says which is the actor; the context ends before the decision, so it shows a failed call and its
error but neither candidate). Code is shown
whole, with a diff between rounds; structured records (verifications, checks) as field tables.
Plain text only: the template escapes it, nothing is marked safe."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from auditor.annotation.models import AnnotationItem
from traces.models import Event

# Context text is bounded so a pathological event cannot make the page megabytes long; code
# under judgment is not clipped (an annotator judging a candidate must see all of it).
TEXT_LIMIT = 20_000
CODE_LIMIT = 400_000
# Earlier events of the trajectory, folded under "earlier": at most this many (the nearest).
EARLIER_MAX = 60
# Keys never shown: `labels` are the ground truth an annotator is asked to provide.
HIDDEN_KEYS = {"labels", "trace_id", "type", "seq"}


def _text(value: Any, limit: int = TEXT_LIMIT) -> str:
    if value is None:
        return ""
    s = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + f"… ({len(s) - limit} more characters)"


def _args(arguments: Any, *, by_name: bool = False) -> list[dict[str, str]]:
    """A call's arguments one per row, strings raw (code keeps its line breaks instead of the
    \\n escapes of a JSON dump). ``by_name`` sorts them by name: a pair's two candidates then
    list their arguments in one order, whatever order the recording or the twin's generator
    wrote them in (an order of its own would tell the sides apart)."""
    if isinstance(arguments, str):
        try:  # arguments recorded as a JSON text (OpenAI style) read like an object's
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping):
            arguments = parsed
    if not isinstance(arguments, Mapping):
        return [{"name": "", "text": _text(arguments, CODE_LIMIT)}] if arguments else []
    items = sorted(arguments.items(), key=lambda kv: str(kv[0])) if by_name else arguments.items()
    return [{"name": str(k), "text": _text(v, CODE_LIMIT)} for k, v in items]


def _fields(ev: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for k, v in ev.items():
        if k in HIDDEN_KEYS:
            continue
        out.append((str(k), v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)))
    return out


def event_line(ev: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(ev.get("type") or "")
    line: dict[str, Any] = {"type": kind, "who": "", "text": "", "args": [], "fields": []}
    if kind == "message":
        line.update(who=str(ev.get("role") or ""), text=_text(ev.get("content")))
    elif kind == "tool_call":
        line.update(who=str(ev.get("name") or ""), args=_args(ev.get("arguments")))
    elif kind == "tool_result":
        line.update(who=str(ev.get("status") or ""), text=_text(ev.get("content")))
    elif kind == "candidate":
        body = ev.get("answer") if ev.get("answer") is not None else ev.get("content")
        line.update(who=f"round {ev.get('round', '')}", text=_text(body, CODE_LIMIT))
    elif kind != "trace":
        line["fields"] = _fields(ev)
    return line


def _lines(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Display lines of events, without the header (it says nothing to an annotator)."""
    return [event_line(e) for e in events if e.get("type") != "trace"]


def _is_user_message(ev: Mapping[str, Any]) -> bool:
    return ev.get("type") == "message" and ev.get("role") == "user"


def _payloads(item: AnnotationItem, start: int, stop: int) -> list[dict[str, Any]]:
    """The trace's events [start, stop) in replay order (the policies' event indices)."""
    start = max(0, start)
    if stop <= start:
        return []
    return list(
        Event.objects.filter(trace_id=item.result.trace_id)
        .order_by("seq")
        .values_list("payload", flat=True)[start:stop]
    )


def _context(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Split events leading to a decision at their end into the turn's latest user request,
    what happened in the turn after it, and the earlier trajectory (the nearest EARLIER_MAX)."""
    u = next((i for i in range(len(events) - 1, -1, -1) if _is_user_message(events[i])), None)
    before = [e for e in (events[:u] if u is not None else []) if e.get("type") != "trace"]
    first = next((e for e in events if _is_user_message(e)), None)
    request = event_line(events[u]) if u is not None else None
    return {
        "request": request,
        "turn": _lines(events[u + 1 :] if u is not None else events),
        "earlier": _lines(before[-EARLIER_MAX:]),
        "earlier_omitted": max(0, len(before) - EARLIER_MAX),
        "task": _text(first.get("content")) if first is not None else "",
        # The page shows the task on its own line only when it is not the request itself.
        "task_is_request": first is not None and request is not None and first is events[u],
    }


def _trace_context(item: AnnotationItem, idx: int) -> dict[str, Any]:
    """Context of a decision at event index `idx` of the recorded trace. Finding the turn's
    request reads only (type, role) of the events before it; payloads only of the window shown
    (so a decision deep in a 5,000-event trace does not load the whole trace)."""
    kinds = list(
        Event.objects.filter(trace_id=item.result.trace_id)
        .order_by("seq")
        .values_list("type", "role")[: max(0, idx)]
    )
    users = [i for i, (t, r) in enumerate(kinds) if t == "message" and r == "user"]
    u = users[-1] if users else 0
    start = max(0, u - EARLIER_MAX)
    ctx = _context(_payloads(item, start, idx))
    if users and users[0] < start:  # the task lies before the window: read it on its own
        ctx["task"] = _text(_payloads(item, users[0], users[0] + 1)[0].get("content"))
        ctx["task_is_request"] = False
        ctx["earlier_omitted"] += start
    return ctx


def _call_view(call: Mapping[str, Any]) -> dict[str, Any]:
    kind = call.get("kind") or "call"
    if kind == "completion":
        text = _text(call.get("text"), CODE_LIMIT)
        return {"kind": "reply", "title": "Reply to the user", "body": text, "args": []}
    if kind == "delete" or (not call.get("name") and not call.get("text")):
        return {"kind": "nothing", "title": "No call (do nothing here)", "body": "", "args": []}
    arguments = call.get("arguments") or {}
    return {
        "kind": "call",
        "title": str(call.get("name") or ""),
        "body": _text(arguments, CODE_LIMIT),
        "args": _args(arguments, by_name=True),
    }


def _diff(before: str, after: str, before_name: str, after_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=before_name,
            tofile=after_name,
        )
    )


def _candidates(item: AnnotationItem) -> list[dict[str, Any]]:
    return sorted(
        Event.objects.filter(trace_id=item.result.trace_id, type="candidate").values_list(
            "payload", flat=True
        ),
        key=lambda e: e.get("round") if isinstance(e.get("round"), int) else 0,
    )


def _verifications(item: AnnotationItem, cand: Mapping[str, Any]) -> dict[str, Any]:
    """The verification records of a candidate (matched by candidate_id, else round) as one
    table: a row per record, a column per field any of them has."""
    rows = Event.objects.filter(trace_id=item.result.trace_id, type="verification").values_list(
        "payload", flat=True
    )
    cid, rnd = cand.get("candidate_id"), cand.get("round")
    records = [
        dict(_fields(v))
        for v in rows
        if (cid is not None and v.get("candidate_id") == cid)
        or (cid is None and v.get("round") == rnd)
    ]
    columns = list(dict.fromkeys(k for r in records for k in r))
    return {"columns": columns, "rows": [[r.get(c, "") for c in columns] for r in records]}


def _body(ev: Mapping[str, Any] | None) -> str:
    if not ev:
        return ""
    body = ev.get("answer") if ev.get("answer") is not None else ev.get("content")
    return body if isinstance(body, str) else _text(body, CODE_LIMIT)


def item_display(item: AnnotationItem, *, blind: bool = True) -> dict[str, Any]:
    """What the annotation page shows for an item. For pairs the two candidates come as A and
    B in the order of the current claim; nothing on the page says which is the actor."""
    p = item.payload or {}
    out: dict[str, Any] = {"kind": item.kind}
    if item.kind == "outcome":
        out["needs"] = p.get("needs") or "guarded outcome"
        # an item about the actor's outcome shows the recorded trajectory, not the guarded one
        traj = item.result.full_trajectory() if out["needs"] != "actor outcome" else None
        if traj:
            out.update(_context(list(traj)))
        else:
            n = Event.objects.filter(trace_id=item.result.trace_id).count()
            out.update(_trace_context(item, n))
        out["continuation"] = item.result.continuation
        out["policy"] = item.result.policy
        out["recorded_success"] = item.result.actor_success
    elif item.kind == "pair":
        out.update(_trace_context(item, int(p.get("call_index") or 0)))
        views = {
            "actor": _call_view({"kind": "call", **(p.get("call") or {})}),
            "twin": _call_view(p.get("twin") or {}),
        }
        order = item.claim_order or ["actor", "twin"]
        out["a"], out["b"] = views[order[0]], views[order[1]]
        out["ab"] = [("A", out["a"]), ("B", out["b"])]
        if not blind:
            out["order"] = order
            out["actor"], out["twin"] = views["actor"], views["twin"]
    elif item.kind == "feedback":
        idx = int(p.get("index") or 0)
        out.update(_trace_context(item, idx))
        fb = _payloads(item, idx, idx + 1)
        out["feedback"] = event_line(fb[0]) if fb else None
        before, after = p.get("candidate_before"), p.get("candidate_after")
        prev = _payloads(item, int(before), int(before) + 1) if before is not None else []
        nxt = _payloads(item, int(after), int(after) + 1) if after is not None else []
        out["after"] = event_line(nxt[0]) if nxt else None
        if prev and nxt:
            out["diff"] = _diff(_body(prev[0]), _body(nxt[0]), "answer before", "answer after")
    elif item.kind == "commit":
        shipped = int(p.get("shipped_round") or 0)
        cands = _candidates(item)
        cand = cands[shipped] if shipped < len(cands) else None
        out["candidate"] = event_line(cand) if cand else None
        out["verifications"] = _verifications(item, cand) if cand else {"rows": []}
        if cand is not None and shipped > 0:
            out["diff"] = _diff(
                _body(cands[shipped - 1]), _body(cand), f"round {shipped - 1}", f"round {shipped}"
            )
        out["shipped_round"] = shipped
        out["n_rounds"] = len(cands)
        first = (
            Event.objects.filter(trace_id=item.result.trace_id, type="message", role="user")
            .order_by("seq")
            .values_list("payload", flat=True)
            .first()
        )
        out["task"] = _text((first or {}).get("content"))
    return out
