"""The ``openai`` judge name, kept as an alias of the ``llm`` judge (`policies.llm.judge`):
``make_judge("openai", **options)`` builds the same `LLMJudge` as ``llm`` does.

Transitional: the app still hands this alias an ``api_key`` option, read from its
``TA_JUDGE_API_KEY`` (or ``_FILE``) environment setting. It is accepted here only as an
in-memory value for the client (never a setting, never recorded) until the app builds the
judge from a run's model settings (`policies.llm.run`); the ``llm`` name refuses it.
"""

from __future__ import annotations

from typing import Any

from .llm.client import ModelClient
from .llm.config import DEFAULT_KEY_ENV, ModelConfig
from .llm.judge import LLMJudge, make_llm_judge, parse_verdict

__all__ = ["OpenAIJudge", "parse_verdict"]


def OpenAIJudge(**options: Any) -> LLMJudge:  # noqa: N802 — the old class name, kept for callers
    opts = dict(options)
    key = opts.pop("api_key", None)
    if key is None:
        return make_llm_judge(opts)
    cache, budget = opts.pop("cache", None), opts.pop("budget", None)
    config = ModelConfig.from_mapping({**opts, "api_key_env": DEFAULT_KEY_ENV, "api_key_file": ""})
    client = ModelClient(config, cache, budget, environ={DEFAULT_KEY_ENV: str(key)})
    return LLMJudge(client)
