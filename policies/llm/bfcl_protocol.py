"""BFCL's multi-turn function-calling protocol, as the `bfcl-eval` package's inference loop
runs it for an OpenAI-compatible function-calling model (``BaseHandler.inference_multi_turn_FC``
with ``OpenAICompletionsHandler``), rebuilt from the package's own data and constants:

- the tools are the package's function docs of the task's involved classes, converted as its
  ``convert_to_tool`` does for the OpenAI-completions style (BFCL types → JSON Schema types,
  float parameters marked, ``response`` kept); no system prompt;
- functions a ``missed_function`` task holds out are absent until their turn, when they are
  appended and the turn's user message is the package's fixed "I have updated some more
  functions" prompt; ``excluded_function`` is not acted on (the package does not either);
- each turn's user messages are added only when the previous turn has ended;
- the per-turn step limit is the package's ``MAXIMUM_STEP_LIMIT``.

`prefix_history` turns the recorded prefix of a trace (as the BFCL importer writes it) back
into the chat history the actor saw. The package's model-handler module needs packages we do
not install (``--no-deps``), so its conversion is re-implemented here from its source.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..trace import JsonDict, Message, ToolCall, ToolResult, event_from_dict


@cache
def _constants() -> tuple[int, str, dict[str, str]]:
    from bfcl_eval.constants.default_prompts import (  # type: ignore[import-untyped]
        DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
        MAXIMUM_STEP_LIMIT,
    )
    from bfcl_eval.constants.type_mappings import (  # type: ignore[import-untyped]
        GORILLA_TO_OPENAPI,
    )

    return (
        int(MAXIMUM_STEP_LIMIT),
        str(DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC),
        dict(GORILLA_TO_OPENAPI),
    )


def step_limit() -> int:
    return _constants()[0]


def added_functions_prompt() -> str:
    return _constants()[1]


@cache
def func_docs(class_name: str) -> tuple[JsonDict, ...]:
    """The package's function docs of one class (``multi_turn_func_doc/*.json``)."""
    from bfcl_eval.constants.eval_config import (  # type: ignore[import-untyped]
        MULTI_TURN_FUNC_DOC_PATH,
    )
    from bfcl_eval.constants.executable_backend_config import (  # type: ignore[import-untyped]
        MULTI_TURN_FUNC_DOC_FILE_MAPPING,
    )

    name = MULTI_TURN_FUNC_DOC_FILE_MAPPING.get(class_name)
    if name is None:
        raise KeyError(class_name)
    with open(MULTI_TURN_FUNC_DOC_PATH / name, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def _cast(properties: JsonDict, mapping: dict[str, str]) -> JsonDict:
    """The package's ``_cast_to_openai_type``: untyped → string; float → number marked as
    float; unknown type names → string; nested properties and item types likewise."""
    for value in properties.values():
        if not isinstance(value, dict):
            continue
        if "type" not in value:
            value["type"] = "string"
        else:
            if value["type"] == "float":
                value["format"] = "float"
                value["description"] = str(value.get("description", "")) + (
                    " This is a float type value."
                )
            value["type"] = mapping.get(value["type"], "string")
        if value["type"] in ("array", "object"):
            if isinstance(value.get("properties"), dict):
                value["properties"] = _cast(value["properties"], mapping)
            elif isinstance(value.get("items"), dict):
                items = value["items"]
                items["type"] = mapping.get(items.get("type", ""), "string")
                if items["type"] == "array" and isinstance(items.get("items"), dict):
                    inner = items["items"]
                    inner["type"] = mapping.get(inner.get("type", ""), "string")
                elif items["type"] == "object" and isinstance(items.get("properties"), dict):
                    items["properties"] = _cast(items["properties"], mapping)
    return properties


def openai_tools(docs: list[JsonDict]) -> list[JsonDict]:
    """``convert_to_tool(docs, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)``."""
    mapping = _constants()[2]
    out: list[JsonDict] = []
    for doc in copy.deepcopy(docs):
        doc["name"] = str(doc.get("name", "")).replace(".", "_")
        params = doc.setdefault("parameters", {})
        params["type"] = "object"
        params["properties"] = _cast(dict(params.get("properties") or {}), mapping)
        out.append({"type": "function", "function": doc})
    return out


@dataclass(slots=True)
class TaskTools:
    """The function docs a task offers at each turn."""

    base: list[JsonDict]
    held_out: dict[int, list[JsonDict]]

    def docs_at(self, turn: int) -> list[JsonDict]:
        docs = list(self.base)
        for t in sorted(self.held_out):
            if t <= turn:
                docs.extend(self.held_out[t])
        return docs


def task_tools(classes: list[str], missed: dict[str, Any]) -> TaskTools:
    """As ``populate_test_cases_with_predefined_functions``: every doc of the involved classes,
    minus the held-out ones, which come back at their turn."""
    docs = [d for c in classes for d in func_docs(c)]
    held: dict[int, list[JsonDict]] = {}
    for turn, names in (missed or {}).items():
        if not str(turn).isdigit() or not isinstance(names, list):
            continue
        for n in names:
            for i, d in enumerate(docs):
                if d.get("name") == n:
                    held.setdefault(int(turn), []).append(docs.pop(i))
                    break
    return TaskTools(docs, held)


def arguments_text(e: ToolCall) -> str:
    raw = e.meta.get("raw_arguments")
    if isinstance(raw, str):
        return raw
    return json_text(e.arguments)


def json_text(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def not_decoded(e: ToolCall) -> bool:
    """The BFCL importer's flags for a step the package could not decode (not executed)."""
    return bool(e.meta.get("arguments_error") or e.meta.get("not_executed"))


@dataclass(slots=True)
class History:
    """The chat history of a recorded prefix and where it stands: ``turn``, ``steps`` taken
    in it, and ``pending`` — calls of the last step whose results the prefix does not hold
    (the replaced call's own step)."""

    messages: list[JsonDict] = field(default_factory=list)
    turn: int = 0
    steps: int = 0
    pending: list[ToolCall] = field(default_factory=list)


def prefix_history(prefix_events: list[JsonDict], holdout_turns: set[int]) -> History:
    h = History()
    step: list[ToolCall] = []
    results: dict[str, ToolResult] = {}

    def flush() -> None:
        if not step:
            return
        h.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": arguments_text(c)},
                    }
                    for c in step
                ],
            }
        )
        for c in step:
            r = results.get(c.call_id)
            if r is not None:
                h.messages.append(
                    {"role": "tool", "content": result_text(r.content), "tool_call_id": c.call_id}
                )
        if not any(not_decoded(c) for c in step):
            h.steps += 1
        step.clear()
        results.clear()

    for raw in prefix_events:
        e = event_from_dict(raw)
        if isinstance(e, ToolCall):
            if results:  # the previous step's results are in: this call starts a new step
                flush()
            step.append(e)
        elif isinstance(e, ToolResult):
            results[e.call_id] = e
        elif isinstance(e, Message) and e.role in ("user", "system"):
            flush()
            if e.turn is not None and e.turn != h.turn:
                h.turn, h.steps = e.turn, 0
            content = e.content
            if not content and e.role == "user" and h.turn in holdout_turns:
                content = added_functions_prompt()
            h.messages.append({"role": e.role, "content": content})
        elif isinstance(e, Message) and e.role == "assistant":
            flush()
            h.messages.append({"role": "assistant", "content": e.content})
    # a step with no results yet that the package did decode is the replaced call's step
    if step and not results and not all(not_decoded(c) for c in step):
        h.pending = list(step)
        step.clear()
    flush()
    return h
