"""The ``llm`` pairwise judge (alias ``openai``): TwinCheck's verifier on a model endpoint
(SPEC §4 "Judges", §5.1 step 3; Dai & Huang 2026, Fig. 1).

The model sees the dialogue and two candidates labelled A and B — never which one is the
actor's, never the certificate that triggered the check (`PairRequest.trace` and ``facts`` are
for offline backends and are not read here). It answers the paper's rubric: 0–4 scores, fatal
flags, a preference and a confidence, as one JSON object checked against `VERDICT_SCHEMA`.
Malformed output, a refusal or a failed call is an abstention (a verdict with ``error`` set,
the raw text kept), so the gate keeps the actor's call. The gate calls `judge` once per
orientation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..judges import PairRequest, Verdict
from .answers import MalformedAnswer, json_object, raw_excerpt
from .budget import Budget
from .cache import CallCache
from .client import ModelClient
from .config import ModelConfig
from .netguard import AddressGuard
from .prompts import VERDICT_SCHEMA, VERIFIER_SYSTEM, VERIFIER_USER


@dataclass(frozen=True, slots=True)
class LLMVerdict(Verdict):
    """A `Verdict` that also says which model call produced it (``call``: cache key, tokens,
    error) and, when the answer was malformed, the raw text."""

    call: dict[str, Any] | None = None
    raw: str | None = None


def verifier_messages(request: PairRequest) -> list[dict[str, str]]:
    user = VERIFIER_USER.format(
        context=request.context or "(empty)", a=request.a.render(), b=request.b.render()
    )
    return [{"role": "system", "content": VERIFIER_SYSTEM}, {"role": "user", "content": user}]


def parse_verdict(text: str, judge: str = "llm") -> Verdict:
    """A verdict from the model's answer text, or an abstention naming what was wrong.

    Checks exactly what `VERDICT_SCHEMA` says, by hand: this runs once per judged
    orientation, also on every cache hit, where a generic schema walk would cost more than
    the rest of the hit path."""
    try:
        obj = json_object(text)
        problem = verdict_problem(obj)
    except MalformedAnswer as exc:
        problem = str(exc)
    if problem is not None:
        return Verdict.failed(judge, f"malformed verdict: {problem}")
    return Verdict(
        prefer=obj["prefer"],
        fatal_a=obj["fatal"]["A"],
        fatal_b=obj["fatal"]["B"],
        score_a=float(obj["scores"]["A"]),
        score_b=float(obj["scores"]["B"]),
        confidence=float(obj["confidence"]),
        judge=judge,
    )


_KEYS = frozenset(VERDICT_SCHEMA["required"])


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v == v


def verdict_problem(obj: dict[str, Any]) -> str | None:
    """What in ``obj`` breaks `VERDICT_SCHEMA`, or None."""
    if set(obj) != _KEYS:
        missing, extra = sorted(_KEYS - set(obj)), sorted(set(obj) - _KEYS)
        return f"expected exactly {sorted(_KEYS)} (missing {missing}, unexpected {extra})"
    scores, fatal = obj["scores"], obj["fatal"]
    if not isinstance(scores, dict) or set(scores) != {"A", "B"}:
        return "scores must be an object with A and B"
    for side, v in scores.items():
        if not _num(v) or float(v) != int(v) or not 0 <= v <= 4:
            return f"scores.{side}: expected an integer from 0 to 4, got {v!r}"
    if not isinstance(fatal, dict) or set(fatal) != {"A", "B"}:
        return "fatal must be an object with A and B"
    for side, v in fatal.items():
        if not isinstance(v, bool):
            return f"fatal.{side}: expected true or false, got {v!r}"
    if obj["prefer"] not in ("A", "B"):
        return f"prefer: expected A or B, got {obj['prefer']!r}"
    c = obj["confidence"]
    if not _num(c) or not 0 <= c <= 1:
        return f"confidence: expected a number from 0 to 1, got {c!r}"
    return None


class LLMJudge:
    """`Judge` over a `ModelClient`."""

    def __init__(self, client: ModelClient, name: str = "llm") -> None:
        self.client = client
        self.name = name

    def judge(self, request: PairRequest) -> Verdict:
        call = self.client.chat(
            verifier_messages(request),
            purpose="verifier",
            response_format=self.client.json_format("verdict", VERDICT_SCHEMA),
        )
        ref = call.ref()
        if call.error is not None:
            return LLMVerdict(None, False, False, 0.0, 0.0, 0.0, self.name, call.error, ref)
        v = parse_verdict(call.text, self.name)
        raw = raw_excerpt(call.text) if v.error is not None else None
        if v.error is not None and not call.text and call.message.get("tool_calls"):
            raw = raw_excerpt(str(call.message.get("tool_calls")))
        return LLMVerdict(
            v.prefer,
            v.fatal_a,
            v.fatal_b,
            v.score_a,
            v.score_b,
            v.confidence,
            v.judge,
            v.error,
            ref,
            raw,
        )


def make_llm_judge(options: dict[str, Any], name: str = "llm") -> LLMJudge:
    """The judge from ``make_judge``-style options: a ready ``client``, or `ModelConfig`
    fields plus optional ``cache``, ``budget``, ``guard`` (`AddressGuard`) and ``key`` (the
    API key itself, passed by the caller)."""
    opts = dict(options)
    client = opts.pop("client", None)
    cache: CallCache | None = opts.pop("cache", None)
    budget: Budget | None = opts.pop("budget", None)
    guard: AddressGuard | None = opts.pop("guard", None)
    key = str(opts.pop("key", "") or "")
    if client is None:
        client = ModelClient(
            ModelConfig.from_mapping(opts), cache, budget, api_key=key, guard=guard
        )
    elif opts or guard is not None or key:
        raise ValueError(f"options given with a client: {sorted(opts)}")
    return LLMJudge(client, name)
