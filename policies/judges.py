"""Pairwise judges for TwinCheck's counterbalanced verification (SPEC §4 "Judges", §5.1 step 3).

A judge sees two proposals as A and B only — never which is the actor's, never the certificate
that triggered the comparison — and returns a `Verdict`: preference, fatal flags, 0–4 rubric
scores and a confidence. This module holds the types every backend shares and two backends:
``recorded`` (``judgment`` events of the trace) and ``human`` (verdicts from the annotation
UI). ``heuristic`` is in `policies.heuristic_judge`; model backends live in their own modules
and register in `policies.judge_registry`, which chooses backends by name — this module
imports no backend.

A backend failure is a verdict with ``error`` set; a judge without evidence (or a pair still
awaiting human review) abstains: ``abstained=True`` with a ``reason``. The gate keeps the
actor's call in both cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .facts import TraceFacts, canonical_args
from .trace import Judgment, Trace, event_from_dict

if TYPE_CHECKING:
    # Types only: judge_registry imports this module for the built-in backends.
    from .judge_registry import JudgeSpec

Orientation = Literal["actor_first", "twin_first"]
ORIENTATIONS: tuple[Orientation, Orientation] = ("actor_first", "twin_first")


@dataclass(frozen=True, slots=True)
class Proposal:
    """A candidate next step: a tool call, the completion response, a question to the user
    (both end the turn), or nothing (skip the step)."""

    kind: Literal["call", "completion", "delete", "ask_user"]
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def render(self) -> str:
        if self.kind == "call":
            return f"call {self.name}({canonical_args(self.arguments)})"
        if self.kind in ("completion", "ask_user"):
            return f"reply to the user: {self.text!r} (end the turn)"
        return "do nothing (skip this step)"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PairRequest:
    """One orientation of one pair. ``context`` is the trace so far rendered as text (what a
    remote judge is sent). ``facts`` are the same prefix's facts, for offline backends;
    ``trace`` is the whole trace, for the ``recorded`` backend to find its judgment events and
    for the header's tool inventory — a judge must not read events at or after the call."""

    pair_id: str
    orientation: Orientation
    a: Proposal
    b: Proposal
    context: str  # the dialogue so far, rendered as text
    trace: Trace | None = None  # for offline backends; never sent to a remote judge
    facts: TraceFacts | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    prefer: str | None  # "A" | "B" | None (no preference)
    fatal_a: bool
    fatal_b: bool
    score_a: float
    score_b: float
    confidence: float
    judge: str
    error: str | None = None
    # Keyword-only: added after backends existed, they take no positional slot, so a
    # subclass's own fields (an LLM verdict's call reference) keep theirs.
    _: KW_ONLY
    abstained: bool = False  # no evidence, or awaiting (human) review: the actor is kept
    reason: str = ""  # why, in a sentence (the judge's own account)
    evidence: dict[str, Any] = field(default_factory=dict)  # per side, for offline judges

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: the fields are plain JSON data already (asdict deep-copies).
        return {name: getattr(self, name) for name in _field_names(type(self))}

    @classmethod
    def failed(cls, judge: str, error: str) -> Verdict:
        return cls(None, False, False, 0.0, 0.0, 0.0, judge, error)

    @classmethod
    def abstain(cls, judge: str, reason: str) -> Verdict:
        return cls(None, False, False, 0.0, 0.0, 0.0, judge, abstained=True, reason=reason)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


class Judge(Protocol):
    """A backend. One that never reads ``PairRequest.context`` may say so with a class
    attribute ``reads_context = False``: TwinCheck then skips rendering it (a judge without
    the attribute is sent the context)."""

    name: str

    def judge(self, request: PairRequest) -> Verdict: ...


# --- recorded -----------------------------------------------------------------------

_ORIENT_ALIASES: dict[str, Orientation] = {
    "actor_first": "actor_first",
    "ab": "actor_first",
    "a_b": "actor_first",
    "forward": "actor_first",
    "twin_first": "twin_first",
    "ba": "twin_first",
    "b_a": "twin_first",
    "reversed": "twin_first",
    "reverse": "twin_first",
}


def normalise_orientation(value: str) -> Orientation | None:
    return _ORIENT_ALIASES.get(value.strip().lower())


def verdict_from_judgment(j: Judgment) -> Verdict:
    def num(side: str) -> float:
        v = j.scores.get(side)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

    return Verdict(
        prefer=j.prefer if j.prefer in ("A", "B") else None,
        fatal_a=bool(j.fatal.get("A")),
        fatal_b=bool(j.fatal.get("B")),
        score_a=num("A"),
        score_b=num("B"),
        confidence=j.confidence if j.confidence is not None else 0.0,
        judge=j.judge or "recorded",
    )


class RecordedJudge:
    """Judgments recorded in the trace (``judgment`` events), matched by pair id and
    orientation. A pair with no recorded judgment is a judge error (the actor's call stands)."""

    name = "recorded"
    reads_context = False

    def judge(self, request: PairRequest) -> Verdict:
        if request.trace is None:
            return Verdict.failed(self.name, "no trace to read recorded judgments from")
        for e in request.trace.events:
            if (
                isinstance(e, Judgment)
                and e.pair == request.pair_id
                and normalise_orientation(e.orientation) == request.orientation
            ):
                return verdict_from_judgment(e)
        return Verdict.failed(
            self.name, f"no recorded judgment for {request.pair_id} ({request.orientation})"
        )


AWAITING_REVIEW = "awaiting human review"


class HumanJudge:
    """Verdicts supplied from outside (the annotation UI), keyed by ``(pair_id,
    orientation)`` or ``"pair_id|orientation"``; each a mapping with ``prefer``, ``fatal``
    ({"A","B"} flags or list), ``scores`` and ``confidence``. A pair without a verdict is
    awaiting review, not an error: the verdict abstains with reason `AWAITING_REVIEW` (the
    decision record lists such pairs so the app can queue them)."""

    name = "human"
    reads_context = False

    def __init__(self, verdicts: Mapping[Any, Mapping[str, Any]]) -> None:
        self._v: dict[tuple[str, str], Mapping[str, Any]] = {}
        for k, v in verdicts.items():
            parts = tuple(k) if isinstance(k, tuple) else tuple(str(k).rsplit("|", 1))
            if len(parts) != 2:
                raise ValueError(f"verdict key {k!r} is not (pair_id, orientation)")
            pair, orient = parts
            o = normalise_orientation(str(orient))
            if o is not None:
                self._v[(str(pair), o)] = v

    def judge(self, request: PairRequest) -> Verdict:
        v = self._v.get((request.pair_id, request.orientation))
        if v is None:
            return Verdict.abstain(self.name, AWAITING_REVIEW)
        j = event_from_dict({"type": "judgment", **dict(v), "judge": v.get("judge", "human")})
        assert isinstance(j, Judgment)
        return verdict_from_judgment(j)


def make_judge(spec: JudgeSpec, **options: Any) -> Judge:
    """Kept for old imports: backend selection lives in `policies.judge_registry`."""
    # In the function: judge_registry imports this module (its built-in backends live here).
    from .judge_registry import make_judge as _make

    return _make(spec, **options)
