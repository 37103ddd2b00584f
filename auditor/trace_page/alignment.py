"""Actor vs guarded trajectories aligned step by step, and the alignment cut for display."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from auditor.trace_page.events import step_summary
from auditor.trace_page.text import pretty, visible

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
_KEY_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def step_key(ev: Any) -> str:
    """What must be equal for two steps to count as the same step. orjson (sorted keys): the
    standard library's encoder would be the largest single cost of a long trace's page."""
    if isinstance(ev, Mapping):
        ev = {k: v for k, v in ev.items() if k not in _IGNORED_FOR_ALIGNMENT}
    try:
        return orjson.dumps(ev, option=_KEY_OPTIONS, default=str).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, say: the slow, total encoder
        return json.dumps(ev, sort_keys=True, default=str, ensure_ascii=False)


def _same(a: Any, g: Any) -> bool:
    """step_key(a) == step_key(g), without serialising (values compare as JSON would, except
    that 1 == 1.0 == True here: close enough for a prefix the replay copied verbatim)."""
    if a == g:  # the replay copies its prefix verbatim: one C-level comparison
        return True
    if isinstance(a, Mapping) and isinstance(g, Mapping):
        keys = (a.keys() | g.keys()) - _IGNORED_FOR_ALIGNMENT
        return all(k in a and k in g and a[k] == g[k] for k in keys)
    return step_key(a) == step_key(g)


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
    # The shared prefix (usually most of a trace) by comparing the events' bodies as values:
    # serialising every event to a key cost more than the rest of the page at 5,000 events.
    n = 0
    while n < len(actor) and n < len(guarded) and _same(actor[n], guarded[n]):
        n += 1
    steps = [Step("same", i, i, actor[i], guarded[i]) for i in range(n)]
    a_rest = [step_key(e) for e in actor[n:]]
    g_rest = [step_key(e) for e in guarded[n:]]
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
    seq: int | None = None  # the recorded event's seq, for a link to its page


# What a missing side says, by the row's kind. A guarded-only row is a step the guard added:
# the actor never took it (nothing was "dropped"); an actor-only row is a step the guarded
# trajectory does not have (dropped, or never reached when the replay stopped).
GAPS = {
    "actor": ("", "skipped: the guarded run went on without this step"),
    "guarded": ("— not taken by the actor (added by the guard) —", ""),
}
# An actor-only step after the guarded trajectory's last step was never reached; what ended
# the guarded trajectory depends on the continuation.
ENDED = {
    "truncated": "not run: the guarded trajectory stops at the guard's replacement "
    "(no environment to run the rest in)",
    "recorded": "not run: the guard ships a recorded answer instead of going on",
    "spliced": "not run: the guarded replay ended before this step",
}
ENDED_OTHER = "not run: the guarded trajectory ended before this step"


@dataclass
class Row:
    kind: str
    actor: Cell | None
    guarded: Cell | None
    step: int = 0  # position in the alignment from 0: the number shown and "divergence at"
    gap: str = ""  # what the missing side says, when not the kind's default (GAPS)

    @property
    def cells(self) -> tuple[tuple[Cell | None, str, str], tuple[Cell | None, str, str]]:
        """Both sides (cell, what to say when it is missing, side label for narrow screens)
        — one template loop, no includes: the template engine's per-include cost dominates a
        long side-by-side."""
        actor_gap, guarded_gap = GAPS.get(self.kind, ("", ""))
        if self.gap and self.kind == "actor":
            guarded_gap = self.gap
        return (
            (self.actor, actor_gap, "Actor"),
            (self.guarded, guarded_gap, "Guarded"),
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
        seq=ev.get("seq") if isinstance(ev, Mapping) and type(ev.get("seq")) is int else None,
    )


def _row(step: Step, number: int, ended: str = "") -> Row:
    # JSON where it shows a difference: both sides of a changed step, the guard's own steps.
    # An actor-only step is a recorded event with a page of its own (linked instead): its
    # pretty JSON would be most of a long trace's side-by-side time.
    return Row(
        kind=step.kind,
        actor=_cell(step.actor, step.actor_index, step.kind == "changed"),
        guarded=_cell(step.guarded, step.guarded_index, step.kind in ("changed", "guarded")),
        step=number,
        gap=ended,
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
    actor: Sequence[Any],
    guarded: Sequence[Any],
    *,
    prefix_window: int = 50,
    limit: int = 100,
    continuation: str = "",
) -> SideBySide:
    """`continuation` (the result's) words what ended the guarded trajectory on the actor's
    steps after its last one."""
    al = align(actor, guarded)
    last_guarded = max(
        (k for k, s in enumerate(al.steps) if s.guarded_index is not None), default=-1
    )
    ended_text = ENDED.get(continuation, ENDED_OTHER)

    def row(s: Step, number: int) -> Row:
        # The reason once, on the first step not run; the steps after it say so briefly.
        if number <= last_guarded:
            return _row(s, number)
        return _row(s, number, ended_text if number == last_guarded + 1 else "not run (as above)")

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
    # Step numbers are positions in the whole alignment, counted from 0 like the timeline's
    # event numbers: through the identical prefix step N is event #N, so "divergence at step N",
    # the row numbered N, the timeline's #N and the panels' "Event N" all name the same step.
    first_shown = len(prefix) - len(shown)
    tail_first = cut + len(rest)
    return SideBySide(
        alignment=al,
        hidden_prefix=len(prefix) - len(shown),
        prefix_rows=[row(s, first_shown + k) for k, s in enumerate(shown)],
        rows=[row(s, cut + k) for k, s in enumerate(rest[:limit])],
        tail_rows=[row(s, tail_first + k) for k, s in enumerate(shown_tail)],
        more=max(0, len(rest) - limit) + len(tail) - len(shown_tail),
    )


def outcome_text(value: bool | None) -> str:
    return "unknown" if value is None else "success" if value else "failure"
