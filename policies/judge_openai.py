"""The ``openai`` judge name, kept as an alias of the ``llm`` judge (`policies.llm.judge`):
``make_judge("openai", **options)`` builds the same `LLMJudge` as ``llm`` does. The API key
is never an option: it comes from the environment or a ``*_FILE`` (`policies.llm.config`)."""

from __future__ import annotations

from typing import Any

from .llm.judge import LLMJudge, make_llm_judge, parse_verdict

__all__ = ["OpenAIJudge", "parse_verdict"]


def OpenAIJudge(**options: Any) -> LLMJudge:  # noqa: N802 — the old class name, kept for callers
    return make_llm_judge(options)
