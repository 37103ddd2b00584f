"""Pushback conversations (SYCON-Bench style), one JSON record per line.

Record: `id`, `question`, `false_presupposition`, `correction`, `turns[]` of `{turn, user,
assistant, judge_identifies_false_presupposition}` ("0"/"1" or 0/1), plus `model_dir`,
`prompt_variant`, `turn_of_flip_derived`, `provenance`.

Per turn i (0-based, `turn` and candidate `round` = i): the user's text as a `message` — turn 0
is the question; later turns are pushbacks with `feedback: {kind: "challenge"}` and
`labels.valid = false` (they defend the false presupposition) — and the model's answer as a
`candidate` with `labels.correct` from the judge's 0/1 label. Outcome: success = the last
answer is labelled correct. A reply that is the harness's error text (`_harness`) is kept and
flagged `meta.harness_error`; when the last reply is one, the outcome is unknown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from ._common import Trace, any_record, convert_jsonl, require, short, stream_name
from ._harness import harness_error
from .base import ImportReport, SourceEvent

MAPPED = frozenset(
    {
        "id",
        "question",
        "false_presupposition",
        "correction",
        "turns",
        "model_dir",
        "prompt_variant",
        "turn_of_flip_derived",
    }
)
TURN_KEYS = frozenset({"turn", "user", "assistant", "judge_identifies_false_presupposition"})
LABEL_KEYS = ("judge_identifies_false_presupposition", "label", "correct")


def _is_pushback_record(rec: dict) -> bool:
    turns = rec.get("turns")
    return (
        isinstance(turns, list)
        and bool(turns)
        and isinstance(turns[0], dict)
        and "assistant" in turns[0]
        and ("question" in rec or "false_presupposition" in rec)
    )


class PushbackImporter:
    name = "pushback"
    label = "Pushback conversations (SYCON-Bench style)"

    def sniff(self, head: bytes, filename: str) -> bool:
        return any_record(head, _is_pushback_record)

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        def identify(record: Any, line: int) -> tuple[str, str, str]:
            rid = record.get("id") if isinstance(record, dict) else None
            usable = isinstance(rid, str | int) and not isinstance(rid, bool)
            trace_id = f"pushback:{rid}" if usable else f"pushback:line{line}"
            return trace_id, "$.id", f"expected a unique id, found {rid!r}"

        from_name = sycon_model_from_name(os.path.basename(stream_name(stream, report)))
        yield from convert_jsonl(
            stream,
            report,
            identify=identify,
            build=lambda trace, record: _record(trace, record, from_name),
        )


# SYCON-Bench result files: `<dataset>_<model>_prompt<N>.jsonl`.
_SYCON_NAME = re.compile(r"^[a-z]+(?:_[a-z]+)*_(?P<model>[^_].*?)_prompt\d+$")


def sycon_model_from_name(filename: str) -> str | None:
    """The model of a SYCON-Bench file from its name (`false_presuppositions_gpt-4o_prompt0.jsonl`
    → `gpt-4o`), for records without `model_dir`."""
    stem = re.sub(r"(\.jsonl|\.json|\.gz)+$", "", filename)
    match = _SYCON_NAME.match(stem)
    return match.group("model") if match else None


def _label(trace: Trace, turn: dict, path: str) -> bool:
    for key in LABEL_KEYS:
        if key in turn:
            value = turn[key]
            if value in (0, 1, "0", "1") and not isinstance(value, float):
                return value in (1, "1")
            raise trace.fail(f"{path}.{key}", f"expected a 0/1 label, found {short(value, 40)}")
    raise trace.fail(
        f"{path}.judge_identifies_false_presupposition", "expected a 0/1 label, found nothing"
    )


def _task_id(record_id: str, model: str | None) -> str:
    """The question's id without the model's name: SYCON-Bench names each model's record of a
    question `sycon_fp_<model>_p0_<n>`, so that the same question matches across models."""
    return record_id.replace(f"_{model}_", "_", 1) if model else record_id


def _record(trace: Trace, record: Any, from_name: str | None = None) -> None:
    record = require(trace, record, dict, "$", "a pushback record object")
    question = require(trace, record.get("question"), str, "$.question", "the question text")
    turns = require(trace, record.get("turns"), list, "$.turns", "an array of turns")
    if not turns:
        raise trace.fail("$.turns", "expected at least one turn, found an empty array")
    model = record.get("model_dir") if isinstance(record.get("model_dir"), str) else from_name
    header = trace.header(
        agent=model,
        model=model,
        task={
            "id": _task_id(str(record.get("id")), model),
            "benchmark": "sycon-bench",
            "category": "false_presupposition",
            "question": question,
            "false_presupposition": record.get("false_presupposition"),
            "correction": record.get("correction"),
        },
        env={"name": None, "config": {"prompt_variant": record.get("prompt_variant")}},
    )
    header["labels"] = {"turn_of_flip_derived": record.get("turn_of_flip_derived")}
    trace.keep(header, record, MAPPED, "record")
    parent = None
    correct = None
    for i, turn in enumerate(turns):
        path = f"$.turns[{i}]"
        turn = require(trace, turn, dict, path, "a turn object")
        number = turn.get("turn")
        if number is not None and str(number) != str(i + 1):
            raise trace.fail(
                f"{path}.turn", f"expected turn {i + 1} (turns in order), found {short(number, 20)}"
            )
        user = require(trace, turn.get("user"), str, f"{path}.user", "the user's text")
        answer = require(
            trace, turn.get("assistant"), str, f"{path}.assistant", "the model's answer"
        )
        correct = _label(trace, turn, path)
        trace.turn = i
        if i == 0:
            msg = trace.add("message", role="user", content=user)
            if user != question:
                trace.flag(msg, "first_turn_differs_from_question", "question", question)
        else:
            msg = trace.add(
                "message",
                role="user",
                content=user,
                feedback={"kind": "challenge", "targets": []},
                labels={"valid": False},
            )
        cid = f"t{i}"
        cand = trace.add(
            "candidate",
            candidate_id=cid,
            content=answer,
            parent=parent,
            round=i,
            labels={"correct": correct},
        )
        trace.keep(cand, turn, TURN_KEYS, "turn")
        error = harness_error(answer)
        if error is not None:
            trace.flag(cand, "harness_error", "harness_error", error)
        parent = cid
    if error is not None:  # the conversation ended on an error, not on an answer
        header["outcome"] = {"success": None, "reward": None}
        return
    header["outcome"] = {"success": correct, "reward": 1.0 if correct else 0.0}
