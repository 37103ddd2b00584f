"""What the trace page shows, as plain data: events made readable, actor vs guarded trajectories
aligned step by step, and one panel per policy built from its decision record.

Pure functions, no Django and no database: the view loads rows and hands payload dicts in, the
templates render what comes out. Everything here must tolerate partial input — a decision record
written by an older policy version, a trace without labels — and say what is missing rather than
fail, since the page is where people look when something is odd.

Trace content is hostile. Nothing here produces markup: strings stay strings and Django's
autoescape makes them inert. Control characters (ANSI escapes above all) are made visible with
:func:`visible`, so a terminal colour code reads as ``␛[31m`` instead of vanishing.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# --- text ------------------------------------------------------------------------------------

# C0 controls (except tab and newline) and DEL → their Unicode "control picture"; ESC → ␛.
_CONTROL_PICTURES = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROL_PICTURES[0x7F] = 0x2421
_CONTROL_PICTURES[0x0D] = None  # a bare CR only confuses a <pre>; CRLF becomes LF


def visible(text: str) -> str:
    """``text`` with control characters shown as symbols (ESC → ␛), so ANSI colour codes and
    terminal tricks are displayed, not interpreted or silently dropped."""
    return text.translate(_CONTROL_PICTURES)


# JSON writes control characters as \u00XX escapes; show those as control pictures too, so an
# ANSI code reads the same (␛[31m) inside a JSON value as in plain text.
_JSON_CONTROL = re.compile(r"(?<!\\)\\u00([01][0-9a-fA-F]|7[fF])")


def _json_control(m: re.Match[str]) -> str:
    code = int(m.group(1), 16)
    return chr(0x2421 if code == 0x7F else 0x2400 + code)


def pretty(value: Any) -> str:
    """Readable text of any JSON value: strings as they are, everything else indented JSON."""
    if isinstance(value, str):
        return visible(value)
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return visible(_JSON_CONTROL.sub(_json_control, text))


def short(value: Any, limit: int = 120) -> str:
    """One line, at most ``limit`` characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
            text = _JSON_CONTROL.sub(_json_control, text)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(visible(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _maybe_json(text: str) -> Any:
    """Tool results often carry JSON in a string; parse it for display when it clearly is."""
    s = text.strip()
    if len(s) < 2 or s[0] not in "[{" or len(s) > 200_000:
        return text
    try:
        return json.loads(s)
    except ValueError:
        return text


# --- events ----------------------------------------------------------------------------------

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
                        _fmt_num(c.get("confidence")),
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


# --- side by side ----------------------------------------------------------------------------

CONTINUATIONS = {
    "exact": "No replacement was accepted: the guarded trajectory is the actor's, step for step.",
    "spliced": "The replacement was executed in the environment and the later recorded actions "
    "re-run after it; the guarded outcome is the environment's check.",
    "recorded": "The guard ships a recorded, labelled artefact (a kept or committed answer); the "
    "guarded outcome is that artefact's label.",
    "truncated": "No environment: the guarded trajectory stops at the replacement, and its "
    "outcome is unknown until someone annotates it.",
}

TRANSITIONS = {
    "rescue": "the actor failed, the guarded trajectory succeeds",
    "harm": "the actor succeeded, the guarded trajectory fails",
    "same": "both end the same way",
    "unknown": "an outcome is unknown (needs annotation)",
}

# Fields that do not change what a step did: bookkeeping, timestamps, ground truth, and `meta`,
# where the replay marks its own events (guarded, executed, replaces).
_IGNORED_FOR_ALIGNMENT = frozenset({"trace_id", "seq", "ts", "meta", "labels"})


def step_key(ev: Any) -> str:
    """What must be equal for two steps to count as the same step."""
    if not isinstance(ev, Mapping):
        return json.dumps(ev, sort_keys=True, default=str)
    body = {k: v for k, v in ev.items() if k not in _IGNORED_FOR_ALIGNMENT}
    return json.dumps(body, sort_keys=True, default=str, ensure_ascii=False)


@dataclass
class Step:
    """One aligned row: ``same`` (identical), ``changed`` (both sides, different), ``actor`` (only
    the actor did it: dropped by the guard) or ``guarded`` (only the guard did it)."""

    kind: str
    actor_index: int | None
    guarded_index: int | None
    actor: Any = None
    guarded: Any = None


@dataclass
class Alignment:
    steps: list[Step]
    prefix: int  # leading identical steps
    divergence: int | None  # index into steps of the first non-identical step
    counts: dict[str, int]

    @property
    def identical(self) -> bool:
        return self.divergence is None


# Above this many differing steps on each side the quadratic matcher is not worth its cost: pair
# the remaining steps by position instead.
MATCH_LIMIT = 3000


def align(actor: Sequence[Any], guarded: Sequence[Any]) -> Alignment:
    """Align the actor's events with the guarded trajectory step by step.

    The replay builds the guarded trajectory as the actor's prefix, the replacement, then a
    continuation that re-uses recorded actions (SPEC §4), so a common prefix is stripped first
    in linear time and only the rest goes through :mod:`difflib`'s matcher. Replaced stretches
    are paired position by position as ``changed``; leftovers become one-sided steps.
    """
    a_keys = [step_key(e) for e in actor]
    g_keys = [step_key(e) for e in guarded]
    n = 0
    while n < len(a_keys) and n < len(g_keys) and a_keys[n] == g_keys[n]:
        n += 1
    steps = [Step("same", i, i, actor[i], guarded[i]) for i in range(n)]
    a_rest, g_rest = a_keys[n:], g_keys[n:]
    if len(a_rest) > MATCH_LIMIT and len(g_rest) > MATCH_LIMIT:
        width = max(len(a_rest), len(g_rest))
        opcodes = [("replace", 0, len(a_rest), 0, len(g_rest))] if width else []
    else:
        opcodes = difflib.SequenceMatcher(None, a_rest, g_rest, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                steps.append(Step("same", n + i, n + j, actor[n + i], guarded[n + j]))
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            i, j = n + i1 + k, n + j1 + k
            steps.append(Step("changed", i, j, actor[i], guarded[j]))
        for i in range(i1 + pairs, i2):
            steps.append(Step("actor", n + i, None, actor[n + i], None))
        for j in range(j1 + pairs, j2):
            steps.append(Step("guarded", None, n + j, None, guarded[n + j]))
    divergence = next((k for k, s in enumerate(steps) if s.kind != "same"), None)
    counts = {k: 0 for k in ("same", "changed", "actor", "guarded")}
    for s in steps:
        counts[s.kind] += 1
    return Alignment(steps=steps, prefix=n, divergence=divergence, counts=counts)


@dataclass
class Cell:
    """One side of a rendered row."""

    index: int
    type: str
    summary: str
    guarded_mark: str  # the replay's own marks (twin, executed), from the event's meta
    detail: str  # pretty JSON, only for rows that differ


@dataclass
class Row:
    kind: str
    actor: Cell | None
    guarded: Cell | None

    @property
    def cells(self) -> tuple[tuple[Cell | None, str], tuple[Cell | None, str]]:
        """Both sides with what to say when one is missing (one template loop, no includes:
        the template engine's per-include cost dominates a long side-by-side)."""
        return (
            (self.actor, "— dropped by the guard —"),
            (self.guarded, "— not in the guarded trajectory —"),
        )


def _cell(ev: Any, index: int | None, detail: bool) -> Cell | None:
    if index is None:
        return None
    meta = ev.get("meta") if isinstance(ev, Mapping) else None
    marks = []
    if isinstance(meta, Mapping):
        who = f"{meta.get('policy') or ''} {meta.get('certificate') or ''}".strip()
        if meta.get("guarded") and who:
            marks.append(f"guard: {who}")
        if meta.get("executed"):
            marks.append("executed in the environment")
    etype = ev.get("type", "?") if isinstance(ev, Mapping) else "?"
    return Cell(
        index=index,
        type=visible(str(etype)),
        summary=step_summary(ev),
        guarded_mark="; ".join(visible(m) for m in marks),
        detail=pretty(ev) if detail else "",
    )


def _row(step: Step) -> Row:
    detail = step.kind != "same"
    return Row(
        kind=step.kind,
        actor=_cell(step.actor, step.actor_index, detail),
        guarded=_cell(step.guarded, step.guarded_index, detail),
    )


@dataclass
class SideBySide:
    """The alignment cut for display: the shared prefix collapsed (its last ``prefix_window``
    steps available in an expander), then up to ``limit`` rows from the divergence on."""

    alignment: Alignment
    hidden_prefix: int  # identical steps not rendered at all (beyond the expander's window)
    prefix_rows: list[Row]
    rows: list[Row]
    tail_rows: list[Row]  # a trailing run of actor-only steps (the guard stopped), collapsed
    more: int  # steps after the window, not rendered

    @property
    def prefix(self) -> int:
        return (
            self.alignment.divergence
            if self.alignment.divergence is not None
            else len(self.alignment.steps)
        )


def side_by_side(
    actor: Sequence[Any], guarded: Sequence[Any], *, prefix_window: int = 50, limit: int = 100
) -> SideBySide:
    al = align(actor, guarded)
    cut = al.divergence if al.divergence is not None else len(al.steps)
    prefix = al.steps[:cut]
    shown = prefix[-prefix_window:] if prefix_window else []
    rest = al.steps[cut:]
    tail_start = len(rest)
    while tail_start > 0 and rest[tail_start - 1].kind == "actor":
        tail_start -= 1
    tail: list[Step] = []
    if len(rest) - tail_start > 3 and tail_start > 0:
        rest, tail = rest[:tail_start], rest[tail_start:]
    shown_tail = tail[: max(0, limit - len(rest))]
    return SideBySide(
        alignment=al,
        hidden_prefix=len(prefix) - len(shown),
        prefix_rows=[_row(s) for s in shown],
        rows=[_row(s) for s in rest[:limit]],
        tail_rows=[_row(s) for s in shown_tail],
        more=max(0, len(rest) - limit) + len(tail) - len(shown_tail),
    )


def outcome_text(value: bool | None) -> str:
    return "unknown" if value is None else "success" if value else "failure"


# --- policy panels ---------------------------------------------------------------------------


def _fmt_num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return f"{value:.{digits}g}" if isinstance(value, float) else str(value)
    return short(value, 30)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def twincheck_panel(record: Mapping[str, Any]) -> dict[str, Any]:
    """Per triggered call: the call, certificate, twin, structural checks, both judgments (one
    per A/B orientation) and the gate's decision with its reason."""
    decisions = []
    for d in _as_list(record.get("decisions")):
        if not isinstance(d, Mapping):
            continue
        call = _as_dict(d.get("call"))
        twin = _as_dict(d.get("twin"))
        cert = _as_dict(d.get("certificate"))
        checks = _as_dict(d.get("checks"))
        gate = _as_dict(d.get("gate"))
        judgments = []
        for j in _as_list(d.get("judgments")):
            if not isinstance(j, Mapping):
                continue
            judgments.append(
                {
                    "orientation": visible(str(j.get("orientation", "?"))),
                    "order": "A = actor, B = twin"
                    if j.get("orientation") in ("actor_first", "AB", "forward")
                    else "A = twin, B = actor"
                    if j.get("orientation") in ("twin_first", "BA", "reversed")
                    else "",
                    "prefer": short(j.get("prefer"), 10) if j.get("prefer") is not None else "none",
                    "fatal_a": j.get("fatal_a"),
                    "fatal_b": j.get("fatal_b"),
                    "score_a": _fmt_num(j.get("score_a")),
                    "score_b": _fmt_num(j.get("score_b")),
                    "confidence": _fmt_num(j.get("confidence")),
                    "judge": visible(str(j.get("judge", d.get("judge", "?")))),
                    "error": short(j["error"], 200) if j.get("error") else "",
                }
            )
        twin_text = ""
        if twin.get("kind") == "completion" or (twin.get("text") and not twin.get("name")):
            twin_text = f"reply: {short(twin.get('text'), 200)}"
        elif twin.get("kind") == "delete":
            twin_text = "delete the call"
        elif twin:
            twin_text = step_summary(
                {"type": "tool_call", "name": twin.get("name"), "arguments": twin.get("arguments")}
            )
        check_rows = []
        for key in ("tool_exists", "schema_valid", "grounded", "differs", "passed"):
            if key in checks:
                check_rows.append((key.replace("_", " "), checks[key]))
        problems = [
            f"{k.replace('_', ' ')}: {short(checks[k], 160)}"
            for k in ("schema_errors", "ungrounded")
            if checks.get(k)
        ]
        decisions.append(
            {
                "call_index": d.get("call_index"),
                "call": step_summary(
                    {
                        "type": "tool_call",
                        "name": call.get("name"),
                        "arguments": call.get("arguments"),
                    }
                )
                if call
                else "",
                "certificate": visible(str(cert.get("name", ""))) if cert else "",
                "certificate_details": [
                    (visible(str(k)), short(v, 80)) for k, v in cert.items() if k != "name"
                ],
                "twin": twin_text,
                "twin_kind": visible(str(twin.get("kind", ""))),
                "checks": check_rows,
                "check_problems": problems,
                "judgments": judgments,
                "judge": visible(str(d.get("judge", ""))),
                "heuristic": d.get("judge") == "heuristic"
                or any(j["judge"] == "heuristic" for j in judgments),
                "replace": gate.get("replace"),
                "reason": visible(str(gate.get("reason", ""))) if gate else "",
                "pair": visible(str(d.get("pair", ""))),
            }
        )
    missing = [] if "decisions" in record else ["decisions"]
    return {
        "tool_calls": record.get("tool_calls"),
        "triggers": record.get("triggers"),
        "accepted": record.get("accepted"),
        "gate_score": _fmt_num(record.get("gate_score")),
        "decisions": decisions,
        "missing": missing,
    }


def _claim_texts(claims_events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The latest text of each claim id across the trace's ``claims`` records."""
    texts: dict[str, str] = {}
    for ev in claims_events:
        for c in _as_list(ev.get("claims")):
            if isinstance(c, Mapping) and c.get("id") is not None and c.get("text") is not None:
                texts[str(c["id"])] = visible(str(c["text"]))
    return texts


FEEDBACK_COLOURS = {True: "#1d7a46", False: "#b42318", None: "#98a2b3"}


def checklist_panel(
    record: Mapping[str, Any], claims_events: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The claims table (each claim's confidences, revisions, flags), the feedback events with
    their classification, and a plotly figure of the per-claim confidence timeline with
    feedback (valid / mistaken) and flags marked (SPEC §5.2)."""
    timeline = _as_dict(record.get("timeline"))
    per_claim = _as_dict(timeline.get("claims"))
    flags = [f for f in _as_list(record.get("flags")) if isinstance(f, Mapping)]
    texts = _claim_texts(claims_events)
    flags_by_claim: dict[str, list[str]] = {}
    for f in flags:
        flags_by_claim.setdefault(str(f.get("claim", "")), []).append(
            visible(str(f.get("flag", "?")).replace("_", " "))
        )
    claims = []
    traces = []
    for cid, points in per_claim.items():
        pts = [p for p in _as_list(points) if isinstance(p, Mapping)]
        confs = [_num(p.get("confidence")) for p in pts]
        claims.append(
            {
                "id": visible(str(cid)),
                "text": texts.get(str(cid), ""),
                "confidences": " → ".join(_fmt_num(c, 2) for c in confs) or "—",
                "revisions": sum(1 for p in pts if p.get("revised")),
                "post_complaint": sum(1 for p in pts if p.get("post_complaint")),
                "flags": flags_by_claim.get(str(cid), []),
            }
        )
        xs = [p.get("record") for p in pts]
        symbols = [
            "x" if p.get("post_complaint") else "diamond" if p.get("revised") else "circle"
            for p in pts
        ]
        hover = [
            f"{cid} @ event {p.get('record')}: {_fmt_num(p.get('confidence'), 2)}"
            + (" · revised" if p.get("revised") else "")
            + (" · post-complaint record" if p.get("post_complaint") else "")
            for p in pts
        ]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": str(cid),
                "x": xs,
                "y": confs,
                "text": hover,
                "hoverinfo": "text",
                "marker": {"symbol": symbols, "size": 10},
            }
        )
    feedback = []
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for fb in _as_list(record.get("feedback_events")):
        if not isinstance(fb, Mapping):
            continue
        valid = fb.get("valid") if isinstance(fb.get("valid"), bool) else None
        feedback.append(
            {
                "index": fb.get("index"),
                "turn": fb.get("turn"),
                "kind": visible(str(fb.get("kind", ""))),
                "valid": valid,
                "targeted": ", ".join(visible(str(t)) for t in _as_list(fb.get("targeted"))),
                "targeting": visible(str(fb.get("targeting", ""))),
                "action": visible(str(fb.get("action", ""))),
                "actor_class": visible(str(fb.get("actor_class", "")).replace("_", " ")),
                "guarded_class": visible(str(fb.get("guarded_class", "")).replace("_", " ")),
                "actor_revised": fb.get("actor_revised"),
                "post_complaint_records": len(_as_list(fb.get("post_complaint_records"))),
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
                    "font": {"color": "#a15c00", "size": 11},
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
                "shapes": shapes
                + [
                    {
                        "type": "line",
                        "xref": "paper",
                        "x0": 0,
                        "x1": 1,
                        "y0": _num(_as_dict(record.get("settings")).get("theta")) or 0.5,
                        "y1": _num(_as_dict(record.get("settings")).get("theta")) or 0.5,
                        "line": {"color": "#667085", "width": 1, "dash": "dash"},
                    }
                ],
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
        "theta": _fmt_num(_as_dict(record.get("settings")).get("theta")),
        "schedule": visible(str(_as_dict(record.get("settings")).get("schedule", ""))),
        "draft_first": record.get("draft_first"),
        "missing": missing,
    }


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
        a, n = _num(v.get("accepts")), _num(v.get("votes"))
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
    beliefs = _as_list(record.get("beliefs"))
    priors = _as_list(record.get("priors"))
    gains = _as_list(record.get("gains"))
    validity = _as_list(record.get("true_validity"))
    incumbents = _as_list(record.get("guard_incumbents"))
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
                "prior": _fmt_num(priors[k] if k < len(priors) else None),
                "belief": _fmt_num(beliefs[k] if k < len(beliefs) else None),
                "gain": _fmt_num(gains[k] if k < len(gains) else None),
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
                "marker": {"color": "rgba(47, 91, 211, 0.18)"},
            }
        )
    if beliefs:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "belief b_k",
                "x": xs[: len(beliefs)],
                "y": [_num(b) for b in beliefs],
                "line": {"color": "#2f5bd3"},
            }
        )
    if priors:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "prior b⁻_k",
                "x": xs[: len(priors)],
                "y": [_num(b) for b in priors],
                "line": {"color": "#2f5bd3", "dash": "dot"},
            }
        )
    if gains:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "gain G_k",
                "x": xs[: len(gains)],
                "y": [_num(g) for g in gains],
                "yaxis": "y2",
                "line": {"color": "#b54708"},
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
                    "color": ["#1d7a46" if v else "#b42318" for _, v in known],
                },
            }
        )
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    markers = (
        ("actor_round", "actor shipped", "#667085", 1.0),
        ("stop_round", "VRR-Stop", "#b42318", 0.92),
        ("guard_round", "VRR-Guard", "#6941c6", 0.84),
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
            k: _fmt_num(v)
            for k, v in _as_dict(_as_dict(record.get("settings")).get("params")).items()
        },
        "figure": figure,
        "missing": missing,
    }


def commit_panel(record: Mapping[str, Any]) -> dict[str, Any]:
    """The answer sequence under challenge with its flips, and what the commit rule ships."""
    answers = _as_list(record.get("answers"))
    at = _as_list(record.get("answer_events"))
    rows = []
    prev = None
    for k, ans in enumerate(answers):
        rows.append(
            {
                "n": k + 1,
                "event": at[k] if k < len(at) else None,
                "answer": short(ans, 160),
                "flip": k > 0 and ans != prev,
                "committed": k == record.get("commit_index"),
                "last": k == len(answers) - 1,
            }
        )
        prev = ans
    missing = [] if answers else ["answers"]
    return {
        "rows": rows,
        "challenges": record.get("challenges"),
        "flips": record.get("flips"),
        "period_two": record.get("period_two_oscillation"),
        "parity": record.get("parity_dependent"),
        "actor_calls": record.get("actor_calls"),
        "commit_calls": record.get("commit_calls"),
        "calls_saved": record.get("calls_saved"),
        "actor_answer": short(record.get("actor_answer"), 200)
        if record.get("actor_answer") is not None
        else "—",
        "commit_answer": short(record.get("commit_answer"), 200)
        if record.get("commit_answer") is not None
        else "unknown",
        "actor_correct": record.get("actor_correct"),
        "commit_correct": record.get("commit_correct"),
        "missing": missing,
    }


PANELS = {
    "twincheck": "TwinCheck",
    "checklist": "Claim checklist",
    "vrr": "VRR stop point",
    "commit": "Commit rule",
}

# What "not applied" means per policy (docs/policies.md, `applied`).
NOT_APPLIED = {
    "twincheck": "No tool call met a certificate's evidence condition.",
    "checklist": "No feedback message to answer.",
    "vrr": "No verified repair round: not a verify-repair loop.",
    "commit": "No answer followed by a challenge.",
}
