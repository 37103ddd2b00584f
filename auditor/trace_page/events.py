"""One stored event made readable: chips (role, status, labels), blocks (content, arguments,
tables), and a fold for long events (SPEC §6: a 5,000-event trace must stay responsive)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.trace_page.text import _maybe_json, fmt_num, pretty, short, visible

COMMON_FIELDS = frozenset({"trace_id", "type", "seq", "ts", "turn", "labels", "meta"})
KNOWN_FIELDS: dict[str, frozenset[str]] = {
    "trace": frozenset({"agent", "model", "task", "env", "tools", "outcome"}),
    "message": frozenset({"role", "content", "feedback"}),
    "tool_call": frozenset({"call_id", "name", "arguments"}),
    "tool_result": frozenset({"call_id", "status", "content"}),
    "claims": frozenset({"claims"}),
    "candidate": frozenset({"candidate_id", "content", "parent", "round", "answer"}),
    "verification": frozenset({"candidate_id", "round", "accepts", "votes", "verifier"}),
    "check": frozenset({"name", "passed", "source"}),
    "judgment": frozenset(
        {"pair", "orientation", "scores", "fatal", "prefer", "confidence", "judge"}
    ),
}

# Events whose readable body is longer than this are folded: a preview is rendered and the rest
# is loaded on demand (SPEC §6: a 5,000-event trace must stay responsive).
FOLD_CHARS = 1500
PREVIEW_CHARS = 300


@dataclass
class Block:
    """One part of an event's body: ``text`` (pre-wrapped), ``json`` (pretty JSON) or ``table``
    (rows of (key, value, is_multiline))."""

    label: str
    kind: str
    text: str = ""
    rows: list[tuple[str, str, bool]] = field(default_factory=list)
    header: tuple[str, ...] = ()
    cells: list[list[str]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return (
            len(self.text)
            + sum(len(k) + len(v) for k, v, _ in self.rows)
            + sum(len(c) for row in self.cells for c in row)
        )


@dataclass
class Chip:
    text: str
    tone: str = ""  # "", "ok", "bad", "warn"


@dataclass
class EventView:
    seq: int
    type: str
    known: bool
    chips: list[Chip]
    blocks: list[Block]
    summary: str
    size: int
    folded: bool
    preview: str


def _kv_rows(obj: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    rows = []
    for k, v in obj.items():
        text = pretty(v)
        rows.append((visible(str(k)), text, "\n" in text or len(text) > 80))
    return rows


def _content_block(label: str, value: Any) -> Block:
    if isinstance(value, str):
        parsed = _maybe_json(value)
        if parsed is not value:
            return Block(label + " (JSON in a string)", "json", text=pretty(parsed))
        return Block(label, "text", text=visible(value))
    if value is None:
        return Block(label, "text", text="(none)")
    return Block(label, "json", text=pretty(value))


def _label_chips(labels: Any) -> list[Chip]:
    if not isinstance(labels, Mapping):
        return [Chip(f"labels: {short(labels, 40)}")] if labels is not None else []
    chips = []
    for key, value in labels.items():
        if isinstance(value, bool):
            chips.append(Chip(f"{key}: {'yes' if value else 'no'}", "ok" if value else "bad"))
        else:
            chips.append(Chip(f"{key}: {short(value, 40)}"))
    return chips


def _type_blocks(etype: str, ev: Mapping[str, Any]) -> tuple[list[Chip], list[Block]]:
    chips: list[Chip] = []
    blocks: list[Block] = []
    if etype == "trace":
        head = {k: ev[k] for k in ("agent", "model", "task", "env", "outcome") if k in ev}
        if head:
            blocks.append(Block("header", "table", rows=_kv_rows(head)))
        tools = ev.get("tools")
        if isinstance(tools, list) and tools:
            cells = []
            for t in tools:
                if isinstance(t, Mapping):
                    params = t.get("parameters")
                    props = params.get("properties") if isinstance(params, Mapping) else None
                    cells.append(
                        [
                            visible(str(t.get("name", ""))),
                            "read-only" if t.get("read_only") else "",
                            ", ".join(visible(str(p)) for p in props)
                            if isinstance(props, Mapping)
                            else "",
                            short(t.get("description", ""), 160),
                        ]
                    )
                else:
                    cells.append([short(t), "", "", ""])
            blocks.append(
                Block(
                    f"tools ({len(tools)})",
                    "grid",
                    header=("name", "", "parameters", "description"),
                    cells=cells,
                )
            )
        elif tools is not None:
            blocks.append(Block("tools", "json", text=pretty(tools)))
    elif etype == "message":
        if ev.get("role"):
            chips.append(Chip(visible(str(ev["role"]))))
        fb = ev.get("feedback")
        if isinstance(fb, Mapping):
            chips.append(Chip(f"feedback: {short(fb.get('kind', '?'), 30)}", "warn"))
            if fb.get("targets"):
                chips.append(Chip(f"targets {short(fb['targets'], 60)}"))
        elif fb is not None:
            chips.append(Chip(f"feedback: {short(fb, 40)}", "warn"))
        blocks.append(_content_block("content", ev.get("content")))
    elif etype == "tool_call":
        if ev.get("name") is not None:
            chips.append(Chip(visible(str(ev.get("name")))))
        if ev.get("call_id"):
            chips.append(Chip(f"call {short(ev['call_id'], 40)}"))
        args = ev.get("arguments")
        if isinstance(args, Mapping):
            blocks.append(
                Block("arguments", "table", rows=_kv_rows(args))
                if args
                else Block("arguments", "text", text="(no arguments)")
            )
        else:
            blocks.append(_content_block("arguments", args))
    elif etype == "tool_result":
        status = ev.get("status")
        if status is not None:
            chips.append(Chip(visible(str(status)), "bad" if status == "error" else "ok"))
        if ev.get("call_id"):
            chips.append(Chip(f"call {short(ev['call_id'], 40)}"))
        blocks.append(_content_block("content", ev.get("content")))
    elif etype == "claims":
        claims = ev.get("claims")
        if isinstance(claims, list):
            cells = []
            for c in claims:
                if not isinstance(c, Mapping):
                    cells.append(["", short(c, 200), "", ""])
                    continue
                evidence = c.get("evidence")
                ev_text = ""
                if isinstance(evidence, list):
                    ev_text = "; ".join(
                        f"{e.get('kind', '?')}:{short(e.get('ref', ''), 40)}"
                        f"{'' if e.get('passed') is None else (' ✓' if e.get('passed') else ' ✗')}"
                        if isinstance(e, Mapping)
                        else short(e, 40)
                        for e in evidence
                    )
                cells.append(
                    [
                        visible(str(c.get("id", ""))),
                        visible(str(c.get("text", ""))),
                        fmt_num(c.get("confidence")),
                        ev_text,
                    ]
                )
            blocks.append(
                Block(
                    "claims", "grid", header=("id", "claim", "confidence", "evidence"), cells=cells
                )
            )
        else:
            blocks.append(_content_block("claims", claims))
    elif etype == "candidate":
        for key in ("candidate_id", "round", "parent"):
            if ev.get(key) is not None:
                chips.append(Chip(f"{key.replace('_id', '')} {short(ev[key], 40)}"))
        if ev.get("answer") is not None:
            blocks.append(Block("answer", "text", text=pretty(ev["answer"])))
        blocks.append(_content_block("content", ev.get("content")))
    elif etype == "verification":
        accepts, votes = ev.get("accepts"), ev.get("votes")
        chips.append(Chip(f"{short(accepts, 10)} of {short(votes, 10)} accept"))
        for key in ("candidate_id", "round", "verifier"):
            if ev.get(key) is not None:
                chips.append(Chip(f"{key.replace('_id', '')} {short(ev[key], 40)}"))
    elif etype == "check":
        passed = ev.get("passed")
        chips.append(
            Chip(
                f"{short(ev.get('name', ''), 60)}: "
                f"{'passed' if passed else 'failed' if passed is False else short(passed, 20)}",
                "ok" if passed is True else "bad" if passed is False else "",
            )
        )
        if ev.get("source") is not None:
            chips.append(Chip(f"source {short(ev['source'], 40)}"))
    elif etype == "judgment":
        body = {k: ev[k] for k in KNOWN_FIELDS["judgment"] if k in ev}
        blocks.append(Block("judgment", "table", rows=_kv_rows(body)))
    return chips, blocks


def event_view(payload: Mapping[str, Any] | Any, seq: int, *, fold: bool = True) -> EventView:
    """A readable view of one stored event. Unknown types show every field; known types show
    their fields pretty-printed and any unknown fields under "other fields"."""
    if not isinstance(payload, Mapping):
        payload = {"type": "?", "value": payload}
    etype = str(payload.get("type", "?"))
    known = etype in KNOWN_FIELDS
    chips: list[Chip] = []
    if payload.get("turn") is not None:
        chips.append(Chip(f"turn {short(payload['turn'], 10)}"))
    type_chips, blocks = _type_blocks(etype, payload) if known else ([], [])
    chips = type_chips + chips
    chips += _label_chips(payload.get("labels"))
    skip = COMMON_FIELDS | KNOWN_FIELDS.get(etype, frozenset())
    other = {k: v for k, v in payload.items() if k not in skip}
    if other:
        blocks.append(
            Block("fields" if not known else "other fields", "table", rows=_kv_rows(other))
        )
    if payload.get("meta") not in (None, {}):
        blocks.append(Block("meta", "json", text=pretty(payload["meta"])))
    if payload.get("ts") is not None:
        chips.append(Chip(short(payload["ts"], 40)))
    size = sum(b.size for b in blocks)
    folded = fold and size > FOLD_CHARS
    preview = ""
    if folded:
        first = blocks[0] if blocks else None
        if first is not None and first.text:
            preview = first.text[:PREVIEW_CHARS]
        elif first is not None and first.rows:
            preview = "\n".join(f"{k}: {v}" for k, v, _ in first.rows)[:PREVIEW_CHARS]
        else:
            preview = short(payload, PREVIEW_CHARS)
    return EventView(
        seq=seq,
        type=visible(etype),
        known=known,
        chips=chips,
        blocks=[] if folded else blocks,
        summary=step_summary(payload),
        size=size,
        folded=folded,
        preview=preview,
    )


def step_summary(ev: Mapping[str, Any] | Any, limit: int = 140) -> str:
    """One line saying what an event did: ``cd(folder="document")``, ``user: Why…``."""
    if not isinstance(ev, Mapping):
        return short(ev, limit)
    etype = ev.get("type")
    if etype == "tool_call":
        args = ev.get("arguments")
        if isinstance(args, Mapping):
            inner = ", ".join(f"{k}={short(v, 40)}" for k, v in args.items())
        else:
            inner = short(args, 60)
        return short(f"{ev.get('name', '?')}({inner})", limit)
    if etype == "tool_result":
        return short(f"{ev.get('status', '?')}: {short(ev.get('content'), limit)}", limit)
    if etype == "message":
        return short(f"{ev.get('role', '?')}: {short(ev.get('content'), limit)}", limit)
    if etype == "candidate":
        text = ev.get("answer") if ev.get("answer") is not None else ev.get("content")
        return short(f"round {ev.get('round', '?')}: {short(text, limit)}", limit)
    if etype == "verification":
        return (
            f"{ev.get('accepts', '?')}/{ev.get('votes', '?')} accept (round {ev.get('round', '?')})"
        )
    if etype == "claims":
        claims = ev.get("claims")
        n = len(claims) if isinstance(claims, list) else 0
        return f"{n} claim{'s' if n != 1 else ''}"
    if etype == "check":
        return short(f"{ev.get('name', '?')}: {'passed' if ev.get('passed') else 'failed'}", limit)
    if etype == "trace":
        return short(f"header: {ev.get('agent') or ''} {ev.get('model') or ''}", limit)
    rest = {k: v for k, v in ev.items() if k not in ("trace_id", "type", "seq")}
    return short(rest, limit)
