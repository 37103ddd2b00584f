"""A run's model settings from what the audit form, the API and the CLI send.

One design for all three: ``endpoint`` — the name (or id) of one of the project's model
endpoints (`auditor.llm.models.ModelEndpoint`, configured by owners: base URL, default model,
key) —, optionally ``model`` (another model of that endpoint), ``max_calls``, ``max_tokens``,
``uses``, and any other `policies.llm.config.ModelConfig` field as ``model.FIELD`` (CLI:
``--set model.timeout=20``). The result is `policies.llm.run.LLMSettings.to_dict()` with the
endpoint's id and name (``endpoint_id``, ``endpoint_name``), stored on the run; the key and any
source of it (a variable name, a file) are refused everywhere, so none can reach a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.llm.endpoints import OLD_FIELDS, endpoint_by_ref
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


#: Keys of stored model settings that name the endpoint; the rest is `LLMSettings`.
REF_KEYS = ("endpoint_id", "endpoint_name")


def llm_settings(model_settings: Mapping[str, Any]) -> LLMSettings:
    """The `LLMSettings` of stored model settings (without the endpoint's id and name)."""
    return LLMSettings.from_mapping({k: v for k, v in model_settings.items() if k not in REF_KEYS})


def model_settings_from(
    fields: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    judge: str = "heuristic",
    project: Any = None,
) -> dict[str, Any]:
    """The stored model settings, or {} when no model is asked for (no endpoint and no other
    field). ``extra``: other endpoint fields (``model.FIELD`` options). Without ``uses``, the
    llm judge's run uses the model as its verifier only. Raises ``ValueError`` with the
    problem's field name."""
    extra = dict(extra or {})
    for source in (fields, extra):
        for name, instead in OLD_FIELDS.items():
            if name in source:
                raise ValueError(f"{name}: not accepted: {instead}; name it in 'endpoint'")
        if "base_url" in source and str(source["base_url"] or "").strip():
            raise ValueError(
                "base_url: not accepted in an audit: an owner configures the URL (and key) as a "
                "model endpoint of the project; name it in 'endpoint'"
            )
    extra.pop("base_url", None)
    ref = str(fields.get("endpoint") or "").strip()
    model = str(fields.get("model") or "").strip()
    if len(model) > 200 or any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in model):
        raise ValueError("model: at most 200 characters, no control characters")
    uses = _uses(fields.get("uses"))
    max_calls = _int_or_none("max_calls", fields.get("max_calls"))
    max_tokens = _int_or_none("max_tokens", fields.get("max_tokens"))
    if not ref:
        if model or extra or uses or max_calls is not None or max_tokens is not None:
            raise ValueError(
                "endpoint: name one of the project's model endpoints (owners configure them on "
                "the project's Model endpoints page)"
            )
        return {}
    ep = endpoint_by_ref(project=project, ref=ref) if project is not None else None
    if ep is None:
        raise ValueError(f"endpoint: the project has no model endpoint {ref[:100]!r}")
    endpoint: dict[str, Any] = {**extra, "base_url": ep.base_url, "model": model or ep.model}
    if not endpoint["model"]:
        raise ValueError(f"model: the endpoint {ep.name!r} has no default model; name one")
    if uses is None:
        if JUDGE_ALIASES.get(judge, judge) != "llm":
            raise ValueError(
                f"uses: choose what the model is for ({', '.join(USES)}); 'judge' needs the "
                f"llm judge"
            )
        uses = ["judge"]
    values = {"endpoint": endpoint, "max_calls": max_calls, "max_tokens": max_tokens, "uses": uses}
    out = LLMSettings.from_mapping(values).to_dict()
    return {**out, "endpoint_id": ep.pk, "endpoint_name": ep.name}


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
