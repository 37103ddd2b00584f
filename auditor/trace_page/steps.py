"""The steps of a trace as a tree with durations, tokens and cost: the waterfall above the audit.

Nesting comes from the source when it has it: an OTel trace (the OTLP importer keeps its spans in
the header's ``meta.otel.spans`` and names each event's span in ``meta.span_id``) nests spans by
their parent links, with each span's events under it. Otherwise steps group by turn: the user's
turn, the assistant message (the LLM step) under it, and under that the tool calls it made, each
with its result.

A step's bar is drawn from what it recorded (`timing.event_timing`, `timing.span_timing`); a
step that recorded none takes the extent of the steps under it, and one with neither gets no bar.
Tokens and cost of a step include the steps under it. A source that records durations but no
times (BFCL's latency per model call) puts no step on the time axis: each step has its duration,
and a step without one of its own the sum of those under it (`Node.summed`).

`build` gives the tree; `auditor.trace_page.step_rows` flattens it, bounded, for the template.
Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.trace_page.text import visible
from auditor.trace_page.timing import (
    Timing,
    Usage,
    duration_text,
    event_timing,
    span_timing,
)

NAME_CHARS = 80

# Shared by every step that records none (most steps of most traces); never changed.
_NO_TIMING = Timing()
_NO_USAGE = Usage()


@dataclass(slots=True, eq=False)
class Node:
    kind: str  # "turn", "span" or "event" (a CSS class as well)
    label: str  # the step's type: "Turn 2", "LLM", "tool_call", "message"
    name: str = ""  # which one: the tool's name, the message's role, the span's name
    seq: int | None = None  # the event it links to (a span: its first event)
    timing: Timing = _NO_TIMING
    usage: Usage = _NO_USAGE
    error: bool = False
    children: list[Node] = field(default_factory=list)
    # Filled by `_aggregate`: the step and everything under it.
    events: int = 0
    total: Usage = _NO_USAGE
    lo: float | None = None  # extent on the time axis (epoch ms)
    hi: float | None = None
    derived: bool = False  # the bar is the extent of the steps under it, not its own
    summed: float | None = None  # its own duration, else those of the steps under it added up


@dataclass(slots=True)
class Tree:
    roots: list[Node]
    source: str  # "spans" (OTel parent links) or "turns"
    events: int  # events in the tree (the header is not a step)
    untimed: int  # events with no place on the time axis (no timing of their own or below)
    bad: int  # steps whose recorded timing is unusable
    lo: float | None
    hi: float | None
    total: Usage
    summed: float | None = None  # the roots' `Node.summed` added up

    @property
    def has_timing(self) -> bool:
        """Whether any step has a place on the time axis (a time, not only a duration)."""
        return self.lo is not None

    @property
    def length(self) -> str:
        """From the first step's start to the last one's end, as text ("" without timing)."""
        if self.lo is None or self.hi is None:
            return ""
        return duration_text(self.hi - self.lo)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _span_label(kind: Any) -> str:
    """A span's row label: its kind; "span" for none, or for the importer's UNKNOWN (a plain
    OTel span with no kind attribute)."""
    text = _str(kind)
    return "span" if not text or text == "UNKNOWN" else text


@functools.lru_cache(maxsize=4096)  # labels and names repeat: one cut per distinct text
def _short(text: str) -> str:
    text = visible(text)
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _event_node(e: Mapping[str, Any]) -> Node:
    etype = e.get("type")
    name = e.get("role") if etype == "message" else e.get("name")
    ts, end_ts, duration_ms = e.get("ts"), e.get("end_ts"), e.get("duration_ms")
    usage, cost = e.get("usage"), e.get("cost_usd")
    return Node(
        "event",
        _short(etype) if isinstance(etype, str) and etype else "?",
        _short(name) if isinstance(name, str) else "",
        _int(e.get("seq")),
        _NO_TIMING
        if ts is None and end_ts is None and duration_ms is None
        else event_timing(ts, end_ts, duration_ms),
        _NO_USAGE if usage is None and cost is None else Usage.of(usage, cost),
        e.get("status") == "error",
    )


def _steps(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in events if e.get("type") != "trace"]


def by_turn(events: Iterable[Mapping[str, Any]]) -> list[Node]:
    """Turn → assistant message → tool call → its result. Events before the first turn (and all
    of a trace without turns) are top-level; an event without a turn joins the turn before it,
    as on the timeline (`turns.group_by_turn`)."""
    roots: list[Node] = []
    level = roots
    turn_of: Any = None
    started = False
    llm: Node | None = None
    pending: dict[str, Node] = {}
    for e in _steps(events):
        raw = _int(e.get("turn"))
        turn = raw if raw is not None else turn_of
        if not started or turn != turn_of:
            started, turn_of, llm, pending = True, turn, None, {}
            if turn is None:
                level = roots
            else:
                head = Node(kind="turn", label=f"Turn {turn}")
                roots.append(head)
                level = head.children
        node = _event_node(e)
        etype = e.get("type")
        call_id = _str(e.get("call_id"))
        if etype == "message":
            level.append(node)
            llm = node if e.get("role") == "assistant" else None
        elif etype == "tool_result" and call_id in pending:
            call = pending.pop(call_id)
            node.name = node.name or call.name
            call.children.append(node)
        else:
            (llm.children if llm is not None else level).append(node)
            if etype == "tool_call" and call_id:
                pending[call_id] = node
    return roots


def by_span(events: Iterable[Mapping[str, Any]], spans: list[Any]) -> list[Node]:
    """Spans nested by their parent links, each span's events (by the event's ``span_id``, else
    the span's list of event seqs) under it, then its child spans. A span whose parent is not in
    the trace is a root; so is one in a parent cycle (where the cycle is entered), and so are
    events of no known span."""
    nodes: dict[str, Node] = {}
    parent: dict[str, str] = {}
    seq_span: dict[int, str] = {}
    for s in spans:
        sid = _str(s.get("span_id")) if isinstance(s, Mapping) else ""
        if not sid or sid in nodes:
            continue
        nodes[sid] = Node(
            kind="span",
            label=_short(_span_label(s.get("kind"))),
            name=_short(_str(s.get("name"))),
            timing=span_timing(s.get("start_unix_nano"), s.get("end_unix_nano")),
            error=s.get("status") == "error",
        )
        p = _str(s.get("parent_span_id"))
        if p and p != sid:
            parent[sid] = p
        seqs = s.get("events")
        for q in seqs if isinstance(seqs, list) else ():
            if _int(q) is not None:
                seq_span.setdefault(q, sid)
    roots: list[Node] = []
    call_names: dict[str, str] = {}  # a result is named after its call, as by turn
    for e in _steps(events):
        node = _event_node(e)
        call_id = _str(e.get("call_id"))
        if e.get("type") == "tool_call" and call_id:
            call_names[call_id] = node.name
        elif e.get("type") == "tool_result" and not node.name:
            node.name = call_names.get(call_id, "")
        sid = _str(e.get("span_id"))
        if not sid and node.seq is not None:
            sid = seq_span.get(node.seq, "")
        home = nodes.get(sid)
        (home.children if home is not None else roots).append(node)
    # Attach spans under their parents: every span reachable from a root, cycles broken.
    kids: dict[str, list[str]] = {}
    for sid in nodes:
        p = parent.get(sid, "")
        if p in nodes:
            kids.setdefault(p, []).append(sid)
    placed: set[str] = set()
    span_roots: list[str] = []
    for start in [s for s in nodes if parent.get(s) not in nodes] + list(nodes):
        if start in placed:
            continue
        span_roots.append(start)
        placed.add(start)
        todo = [start]
        while todo:
            sid = todo.pop()
            for k in kids.get(sid, ()):
                if k not in placed:
                    placed.add(k)
                    nodes[sid].children.append(nodes[k])
                    todo.append(k)
    ordered = {sid: i for i, sid in enumerate(nodes)}
    span_roots.sort(key=ordered.__getitem__)
    return [nodes[s] for s in span_roots] + roots


def _aggregate(roots: list[Node]) -> None:
    """Post-order, without recursion (a span chain may be thousands deep): each node's event
    count, its tokens and cost with those under it, its extent on the time axis, and the first
    event a span links to."""
    order: list[Node] = []
    todo = list(roots)
    while todo:
        n = todo.pop()
        order.append(n)
        todo.extend(n.children)
    for n in reversed(order):  # children before parents
        t = n.timing
        lo = t.start
        hi = lo + t.duration if lo is not None and t.duration is not None else lo
        events = int(n.kind == "event")
        total = n.usage
        summed = t.duration
        for c in n.children:
            events += c.events
            if t.duration is None and c.summed is not None:  # an own duration covers its steps
                summed = c.summed if summed is None else summed + c.summed
            if c.total is not _NO_USAGE:
                if total is n.usage:  # the first addition: a Usage of this node's own
                    total = Usage(total.input, total.output, total.total, total.cost)
                total.add(c.total)
            if c.lo is not None and c.hi is not None:
                lo = c.lo if lo is None else min(lo, c.lo)
                hi = c.hi if hi is None else max(hi, c.hi)
            if n.seq is None and c.seq is not None:
                n.seq = c.seq
        n.events, n.total, n.lo, n.hi, n.summed = events, total, lo, hi, summed
        n.derived = t.duration is None and lo is not None and (t.start is None or hi != t.start)


def build(events: Iterable[Mapping[str, Any]], spans: Any = None) -> Tree:
    """The tree of a trace's events (each a mapping of ``seq``, ``type``, ``turn``, ``role``,
    ``name``, ``call_id``, ``status``, ``ts``, ``end_ts``, ``duration_ms``, ``usage``,
    ``cost_usd`` and ``span_id``), nested by ``spans`` (the OTel span list) when it is a
    non-empty list."""
    events = list(events)
    if isinstance(spans, list) and any(isinstance(s, Mapping) for s in spans):
        roots, source = by_span(events, spans), "spans"
    else:
        roots, source = by_turn(events), "turns"
    _aggregate(roots)
    total = Usage()
    untimed = bad = count = 0
    lo: float | None = None
    hi: float | None = None
    todo = list(roots)
    while todo:
        n = todo.pop()
        todo.extend(n.children)
        untimed += n.kind == "event" and n.lo is None
        bad += n.timing.bad
    summed: float | None = None
    for r in roots:
        count += r.events
        total.add(r.total)
        if r.summed is not None:
            summed = r.summed if summed is None else summed + r.summed
        if r.lo is not None and r.hi is not None:
            lo = r.lo if lo is None else min(lo, r.lo)
            hi = r.hi if hi is None else max(hi, r.hi)
    return Tree(roots, source, count, untimed, bad, lo, hi, total, summed)
