"""A run's model settings from what the audit form, the API and the CLI send.

One design for all three: the common fields by name — ``base_url``, ``model``, ``api_key_env``
(the NAME of the environment variable holding the key; ``<NAME>_FILE`` also works),
``max_calls``, ``max_tokens``, ``uses`` — and any other `policies.llm.config.ModelConfig`
field as ``model.FIELD`` (CLI: ``--set model.timeout=20``). The result is
`policies.llm.run.LLMSettings.to_dict()`, stored on the run; the key itself is refused
everywhere, so it can never reach the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from policies.llm.run import USES, LLMSettings

#: The judge names a run accepts; "openai" is the llm judge's old name.
JUDGES = ("heuristic", "llm", "human", "recorded")
JUDGE_ALIASES = {"openai": "llm"}
#: Uses the form offers, with what each does (docs/models.md "Uses").
USE_LABELS = {
    "judge": "TwinCheck verifier (with the llm judge)",
    "twin": "twin generator after a repeated error",
    "live": "live BFCL continuation after a replacement",
    "claims": "claim confidences for traces without claims",
    "recheck": "the commit rule's re-check",
}
assert set(USE_LABELS) == set(USES)


def _int_or_none(name: str, value: Any) -> int | None:
    if value in (None, ""):
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{name}: expected a whole number, got {value!r}") from None
    if n < 0:
        raise ValueError(f"{name}: expected a non-negative number, got {n}")
    return n


def _uses(value: Any) -> list[str] | None:
    if value in (None, "", []):
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(u).strip() for u in items if str(u).strip()]


def model_settings_from(
    fields: Mapping[str, Any], extra: Mapping[str, Any] | None = None, judge: str = "heuristic"
) -> dict[str, Any]:
    """`LLMSettings` as a dict, or {} when no model is configured (neither base URL nor model
    nor any extra field). ``extra``: other endpoint fields (``model.FIELD`` options). Without
    ``uses``, the llm judge's run uses the model as its verifier only. Raises ``ValueError``
    with the problem's field name."""
    if "api_key" in fields or "api_key" in (extra or {}):
        raise ValueError(
            "api_key: the key itself is never a setting; name the environment variable that "
            "holds it (api_key_env), or set <NAME>_FILE in the worker's environment"
        )
    endpoint: dict[str, Any] = {k: v for k, v in (extra or {}).items()}
    for name in ("base_url", "model", "api_key_env"):
        value = str(fields.get(name) or "").strip()
        if value:
            endpoint[name] = value
    netloc = urlsplit(str(endpoint.get("base_url", ""))).netloc
    if "@" in netloc:  # user:password@host is a key in disguise: it would be stored
        raise ValueError(
            "base_url: credentials in the URL would be stored with the run; give the URL "
            "without them and name the key's environment variable in api_key_env"
        )
    uses = _uses(fields.get("uses"))
    max_calls = _int_or_none("max_calls", fields.get("max_calls"))
    max_tokens = _int_or_none("max_tokens", fields.get("max_tokens"))
    if not endpoint:
        if uses or max_calls is not None or max_tokens is not None:
            raise ValueError("model: uses and a budget need a model endpoint (base URL, model)")
        return {}
    if uses is None:
        if JUDGE_ALIASES.get(judge, judge) != "llm":
            raise ValueError(
                f"uses: choose what the model is for ({', '.join(USES)}); 'judge' needs the "
                f"llm judge"
            )
        uses = ["judge"]
    values = {"endpoint": endpoint, "max_calls": max_calls, "max_tokens": max_tokens, "uses": uses}
    return LLMSettings.from_mapping(values).to_dict()


def normalise_judge(judge: str) -> str:
    judge = JUDGE_ALIASES.get(judge, judge)
    if judge not in JUDGES:
        raise ValueError(f"unknown judge {judge!r}; choose from {', '.join(JUDGES)}")
    return judge


def check_judge_and_model(judge: str, model_settings: Mapping[str, Any]) -> None:
    """The llm judge needs a model with the ``judge`` use; the ``judge`` use needs the llm
    judge (otherwise the model would be configured and silently never asked)."""
    uses: Iterable[str] = model_settings.get("uses", ()) if model_settings else ()
    if judge == "llm" and "judge" not in uses:
        raise ValueError(
            "judge llm: configure a model (base URL and model) with the 'judge' use on"
        )
    if judge != "llm" and "judge" in uses:
        raise ValueError(
            f"model use 'judge' is the llm judge's verifier; choose judge llm, or leave the "
            f"use off (judge {judge!r} asks no model)"
        )
