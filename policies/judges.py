"""Pairwise judges for TwinCheck's counterbalanced verification (SPEC §4 "Judges", §5.1 step 3).

A judge sees two proposals as A and B only — never which is the actor's — and returns a
`Verdict`: preference, fatal flags, 0–4 rubric scores and a confidence. Backends here:
``heuristic`` (deterministic, offline default), ``recorded`` (``judgment`` events of the
trace) and ``human`` (verdicts supplied from outside). ``openai`` is in `judge_openai`.
A backend failure is reported as a verdict with ``error`` set, which the gate treats as "keep
the actor's call".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from .certificates import INVERSE_VERBS, REVERSAL_WORDS, inverse_name, stale_replacement
from .facts import TraceFacts, canonical_args
from .trace import Judgment, Trace, event_from_dict

Orientation = Literal["actor_first", "twin_first"]
_WORD = re.compile(r"[a-z]+")
ORIENTATIONS: tuple[Orientation, Orientation] = ("actor_first", "twin_first")


@dataclass(frozen=True, slots=True)
class Proposal:
    """A candidate next step: a tool call, the completion response, or nothing."""

    kind: Literal["call", "completion", "delete"]
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def render(self) -> str:
        if self.kind == "call":
            return f"call {self.name}({canonical_args(self.arguments)})"
        if self.kind == "completion":
            return f"reply to the user: {self.text!r} (end the turn)"
        return "do nothing (skip this step)"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PairRequest:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def failed(cls, judge: str, error: str) -> Verdict:
        return cls(None, False, False, 0.0, 0.0, 0.0, judge, error)


class Judge(Protocol):
    name: str

    def judge(self, request: PairRequest) -> Verdict: ...


# --- heuristic ----------------------------------------------------------------------


class HeuristicJudge:
    """Deterministic offline judge. Each proposal is scored on its own (so the verdict cannot
    depend on the A/B order): a call that repeats a failed call, inverts an earlier success
    without a reversal request, or uses an argument value the trace does not ground is judged
    fatal. Clearly a heuristic, labelled as such in every verdict."""

    name = "heuristic"

    def _score(self, p: Proposal, facts: TraceFacts | None) -> tuple[float, bool]:
        if p.kind != "call":
            if facts is not None and facts.succeeded_operation() and not facts.unresolved_failure():
                return (3.0 if p.kind == "completion" else 2.0), False
            return 1.0, False
        if facts is None:
            return 2.0, False
        key = p.name + "\x00" + canonical_args(p.arguments)
        failed = facts.last_fail.get(key)
        if failed is not None and facts.last_ok_index <= (failed.result_index or -1):
            return 0.0, True
        inv = inverse_name(p.name)
        if inv and facts.by_name_ok.get(inv):
            words = set(_WORD.findall(facts.latest_user.lower()))
            verb = next((w for w in _WORD.findall(p.name.lower()) if w in INVERSE_VERBS), "")
            if not (words & REVERSAL_WORDS or verb in words):
                return 0.0, True
        if not all(facts.grounded(v) for v in p.arguments.values()):
            return 1.0, True
        if any(stale_replacement(v, facts) is not None for v in p.arguments.values()):
            return 1.0, True
        return 4.0, False

    def judge(self, request: PairRequest) -> Verdict:
        sa, fa = self._score(request.a, request.facts)
        sb, fb = self._score(request.b, request.facts)
        prefer = "A" if sa > sb else "B" if sb > sa else None
        confidence = min(1.0, 0.5 + 0.125 * abs(sa - sb))
        return Verdict(prefer, fa, fb, sa, sb, confidence, self.name)


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


class HumanJudge:
    """Verdicts supplied from outside (the annotation UI), keyed by ``(pair_id,
    orientation)`` or ``"pair_id|orientation"``; each a mapping with ``prefer``, ``fatal``
    ({"A","B"} flags or list), ``scores`` and ``confidence``."""

    name = "human"

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
            return Verdict.failed(self.name, "no human verdict yet")
        j = event_from_dict({"type": "judgment", **dict(v), "judge": v.get("judge", "human")})
        assert isinstance(j, Judgment)
        return verdict_from_judgment(j)


def make_judge(spec: str | Judge | None, **options: Any) -> Judge:
    """A judge from a name ("heuristic", "recorded", "human", "openai") or an instance."""
    if spec is None or spec == "heuristic":
        return HeuristicJudge()
    if not isinstance(spec, str):
        return spec
    if spec == "recorded":
        return RecordedJudge()
    if spec == "human":
        return HumanJudge(options.get("verdicts", {}))
    if spec == "openai":
        from .judge_openai import OpenAIJudge

        return OpenAIJudge(**options)
    raise ValueError(f"unknown judge backend {spec!r}")
