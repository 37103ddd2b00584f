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
from .answers import MalformedAnswer, json_answer, raw_excerpt
from .budget import Budget
from .cache import CallCache
from .client import ModelClient
from .config import ModelConfig
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
    """A verdict from the model's answer text, or an abstention naming what was wrong."""
    try:
        obj = json_answer(text, VERDICT_SCHEMA)
    except MalformedAnswer as exc:
        return Verdict.failed(judge, f"malformed verdict: {exc}")
    return Verdict(
        prefer=obj["prefer"],
        fatal_a=obj["fatal"]["A"],
        fatal_b=obj["fatal"]["B"],
        score_a=float(obj["scores"]["A"]),
        score_b=float(obj["scores"]["B"]),
        confidence=float(obj["confidence"]),
        judge=judge,
    )


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
    fields plus optional ``cache`` and ``budget`` objects."""
    opts = dict(options)
    client = opts.pop("client", None)
    cache: CallCache | None = opts.pop("cache", None)
    budget: Budget | None = opts.pop("budget", None)
    if client is None:
        client = ModelClient(ModelConfig.from_mapping(opts), cache, budget)
    elif opts:
        raise ValueError(f"options given with a client: {sorted(opts)}")
    return LLMJudge(client, name)
