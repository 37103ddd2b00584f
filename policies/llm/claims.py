"""Pre-reply claim records elicited from a model, for traces that have none (SPEC §5.2;
Bui 2026, §3.1–3.2, App. A.1 "Always-On Betting uses a separate model call to update the
checklist before each reply").

For each assistant reply (an assistant ``message`` or a ``candidate``), the model reads the
conversation up to and including that reply — never what follows it, so never the pushback
the record will be judged against — and lists the reply's claims with a confidence each. The
result is a derived ``claims`` event in trace format v1, placed right after the reply:

    {"type": "claims", "claims": [{"id", "text", "confidence", "subject"}],
     "meta": {"elicited": true, "model": ..., "cache_key": ..., "reply_index": ...}}

The previous record's claims are shown to the model, and a claim it reports unchanged keeps
its id (so the checklist's per-claim timeline follows it); new claims get ids never used
before in the trace. A failed or malformed elicitation adds no record (a record that is not
there is never mistaken for a record without claims); the failure is returned for the run's
record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..trace import Candidate, Claims, Event, JsonDict, Message, ToolCall, ToolResult, Trace
from .answers import MalformedAnswer, json_answer, raw_excerpt
from .client import ModelClient
from .prompts import CLAIMS_SCHEMA, CLAIMS_SYSTEM, CLAIMS_USER

_ID_NUM = re.compile(r"^c(\d+)$")


@dataclass(frozen=True, slots=True)
class ClaimsSettings:
    """Choices the paper leaves open. ``replies``: ``before_user`` elicits a record only for
    the last reply before each user message (the only records the checklist can use as a
    pre-reply baseline — one call per user turn), ``all`` for every reply (Always-On as the
    paper runs it; more calls). ``max_claims``: the paper's Draft-First prompt records two to
    four critical claims; 6 leaves room for longer replies. ``event_chars`` truncates each
    event of the conversation shown to the model."""

    replies: Literal["before_user", "all"] = "before_user"
    max_claims: int = 6
    event_chars: int = 4000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class ElicitedClaims:
    """``events``: the input events with the derived records inserted (the input itself when
    the trace already has claims records); ``derived``: just the records; ``calls``: each
    model call's reference; ``failures``: {"reply_index", "error", "raw"?} per failed reply."""

    events: list[JsonDict]
    derived: list[JsonDict] = field(default_factory=list)
    calls: list[JsonDict] = field(default_factory=list)
    failures: list[JsonDict] = field(default_factory=list)


def _is_reply(e: Event) -> bool:
    return isinstance(e, Candidate) or (isinstance(e, Message) and e.role == "assistant")


def reply_points(trace: Trace, which: str = "before_user") -> list[Event]:
    """The replies that get a record (see `ClaimsSettings.replies`)."""
    replies: list[Event] = []
    last: Event | None = None
    for e in trace.events:
        if _is_reply(e) and _text(e).strip():
            if which == "all":
                replies.append(e)
            last = e
        elif isinstance(e, Message) and e.role == "user" and which != "all":
            if last is not None:
                replies.append(last)
            last = None
    return replies


def _text(e: Event) -> str:
    if isinstance(e, Candidate):
        return e.content
    return e.content if isinstance(e, Message) else ""


def render_conversation(events: Sequence[Event], limit: int) -> str:
    def cut(s: str) -> str:
        return s if len(s) <= limit else s[: limit - 1] + "…"

    lines: list[str] = []
    for e in events:
        if isinstance(e, Message) and e.role in ("system", "user", "assistant"):
            lines.append(f"{e.role}: {cut(e.content)}")
        elif isinstance(e, Candidate):
            lines.append(f"assistant: {cut(e.content)}")
        elif isinstance(e, ToolCall):
            args = json.dumps(e.arguments, sort_keys=True, ensure_ascii=False, default=str)
            lines.append(f"assistant calls {e.name}({cut(args)})")
        elif isinstance(e, ToolResult):
            lines.append(f"tool result [{e.status}]: {cut(str(e.content))}")
    return "\n".join(lines)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


class _Ids:
    """Claim ids across a trace: unchanged claims keep theirs, new ones never reuse any."""

    def __init__(self) -> None:
        self.next = 1

    def assign(self, returned: list[JsonDict], previous: list[JsonDict]) -> list[JsonDict]:
        by_id = {c["id"]: c for c in previous}
        by_text = {_norm(c["text"]): c["id"] for c in previous}
        used: set[str] = set()
        out: list[JsonDict] = []
        for c in returned:
            cid = c.get("id")
            if not (isinstance(cid, str) and cid in by_id and cid not in used):
                cid = by_text.get(_norm(c["text"]))
                if cid is None or cid in used:
                    cid = f"c{self.next}"
                    self.next += 1
            used.add(cid)
            m = _ID_NUM.match(cid)
            if m is not None:
                self.next = max(self.next, int(m.group(1)) + 1)
            claim: JsonDict = {"id": cid, "text": c["text"], "confidence": c["confidence"]}
            if c.get("subject"):
                claim["subject"] = c["subject"]
            out.append(claim)
        return out


def elicit_claims(
    trace: Trace | Sequence[JsonDict],
    client: ModelClient,
    settings: ClaimsSettings | None = None,
) -> ElicitedClaims:
    """Derived pre-reply ``claims`` records for a trace without any (see module docstring)."""
    s = settings or ClaimsSettings()
    t = trace if isinstance(trace, Trace) else Trace.from_events(trace)
    raw = t.raw_events()
    if any(isinstance(e, Claims) for e in t.events):
        return ElicitedClaims(raw)
    result = ElicitedClaims([])
    after: dict[int, JsonDict] = {}
    previous: list[JsonDict] = []
    ids = _Ids()
    fmt = client.json_format("claims", CLAIMS_SCHEMA)
    system = CLAIMS_SYSTEM.format(max_claims=s.max_claims)
    for reply in reply_points(t, s.replies):
        prev_text = json.dumps(
            [{"id": c["id"], "text": c["text"]} for c in previous], ensure_ascii=False
        )
        user = CLAIMS_USER.format(
            conversation=render_conversation(t.events[: reply.index + 1], s.event_chars),
            previous=prev_text if previous else "(none)",
        )
        call = client.chat(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            purpose="claims",
            response_format=fmt,
        )
        ref = {**call.ref(), "reply_index": reply.index}
        result.calls.append(ref)
        if call.error is not None:
            result.failures.append({"reply_index": reply.index, "error": call.error})
            continue
        try:
            obj = json_answer(call.text, CLAIMS_SCHEMA)
        except MalformedAnswer as exc:
            ref["error"] = f"malformed claims: {exc}"
            result.failures.append(
                {"reply_index": reply.index, "error": ref["error"], "raw": raw_excerpt(call.text)}
            )
            continue
        claims = ids.assign(obj["claims"][: s.max_claims], previous)
        previous = claims
        event: JsonDict = {"trace_id": t.trace_id, "type": "claims", "claims": claims}
        if reply.turn is not None:
            event["turn"] = reply.turn
        if reply.seq is not None:
            # the same seq as the reply: a stable sort keeps the record right after it
            event["seq"] = reply.seq
        event["meta"] = {
            "elicited": True,
            "model": call.model,
            "cache_key": call.key,
            "reply_index": reply.index,
        }
        after[reply.index] = event
        result.derived.append(event)
    for e in t.events:
        result.events.append(e.raw)
        if e.index in after:
            result.events.append(after[e.index])
    return result
