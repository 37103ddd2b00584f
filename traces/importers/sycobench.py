"""SycoBench conversation files (ewernn/SycoBench: `results/*/conversations/<model>.json`).

One JSON document per model: `{"model_key", "model_name", "provider", "total_questions",
"completed_questions", "total_cost", "conversations": [{"question_id", "question",
"initial_response": {"response", "safety_assessment", "input_tokens", "output_tokens"},
"pressure_rounds": [{"level", "pressure", "response", ["safety_assessment"]}], "total_cost"}]}`.

Each conversation becomes a pushback trace, shaped as the `pushback` importer's: the question as
the first user message, each reply a `candidate` (`round` = 0 for the initial response, then the
pressure level's position), each pressure a user message with `feedback: {kind: "challenge"}`
and `labels.valid = false` (a pressure pushes away from the safe advice without evidence). A
reply's `safety_assessment` becomes `labels.correct` ("safe" → true, "unsafe" → false; any other
value is kept in `meta` and leaves the reply unlabelled). Outcome: the last labelled reply's
label when it is the last reply, else unknown. Harness error texts in place of a reply are
flagged (`_harness`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from ._common import Trace, read_json_document, record_events, require, short
from ._harness import harness_error
from .base import ImportReport, SourceEvent

DOC_KEYS = ("model_key", "model_name", "provider", "total_questions", "completed_questions")
ASSESSMENT = {"safe": True, "unsafe": False}
CONVERSATION_KEYS = frozenset(
    {"question_id", "question", "initial_response", "pressure_rounds", "total_cost"}
)


class SycoBenchImporter:
    name = "sycobench"
    label = "SycoBench conversation files (pressure rounds)"

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            head.lstrip()[:1] == b"{"
            and b'"conversations"' in head
            and b'"pressure_rounds"' in head
            and b'"initial_response"' in head
        )

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        doc = read_json_document(stream, report)
        if doc is None:
            return
        conversations = doc.get("conversations") if isinstance(doc, dict) else None
        if not isinstance(conversations, list):
            report.error(
                line=0,
                trace_id=None,
                path="$.conversations",
                message="expected an object with a conversations array, found "
                + short(type(doc).__name__ if not isinstance(doc, dict) else "no conversations"),
            )
            return
        model = doc.get("model_name") or doc.get("model_key")
        meta = {k: doc[k] for k in DOC_KEYS if k in doc}
        seen: set[str] = set()
        for index, conv in enumerate(conversations, 1):
            qid = conv.get("question_id") if isinstance(conv, dict) else None
            trace_id = f"sycobench:{model}:{qid}" if qid is not None else f"sycobench:{index}"
            trace = Trace(trace_id, index, report)
            path = f"$.conversations[{index - 1}]"
            if trace_id in seen:
                trace.fail(f"{path}.question_id", f"expected a unique question id, found {qid!r}")
                continue
            seen.add(trace_id)
            yield from record_events(trace, _conversation, trace, conv, path, model, meta)


def _reply(trace: Trace, text: Any, path: str, i: int, parent: str | None, raw: dict) -> dict:
    answer = require(trace, text, str, f"{path}.response", "the model's reply text")
    cand = trace.add("candidate", candidate_id=f"r{i}", content=answer, parent=parent, round=i)
    assessment = raw.get("safety_assessment")
    if assessment in ASSESSMENT:
        cand["labels"] = {"correct": ASSESSMENT[assessment]}
    elif assessment is not None:
        cand.setdefault("meta", {})["safety_assessment"] = assessment
        trace.report.note_unmapped("safety assessments", short(assessment, 40))
    extra = {k: v for k, v in raw.items() if k not in ("response", "safety_assessment", "pressure")}
    if extra:
        cand.setdefault("meta", {}).update(extra)
    error = harness_error(answer)
    if error is not None:
        trace.flag(cand, "harness_error", "harness_error", error)
    return cand


def _conversation(trace: Trace, conv: Any, path: str, model: Any, doc_meta: dict[str, Any]) -> None:
    conv = require(trace, conv, dict, path, "a conversation object")
    question = require(trace, conv.get("question"), str, f"{path}.question", "the question text")
    first = require(
        trace, conv.get("initial_response"), dict, f"{path}.initial_response", "the first reply"
    )
    rounds = conv.get("pressure_rounds") or []
    rounds = require(trace, rounds, list, f"{path}.pressure_rounds", "an array of rounds")
    header = trace.header(
        agent=model if isinstance(model, str) else None,
        model=model if isinstance(model, str) else None,
        task={
            "id": str(conv.get("question_id")),
            "benchmark": "sycobench",
            "category": "safety_pressure",
            "question": question,
        },
    )
    header.setdefault("meta", {}).update(doc_meta)
    trace.keep(header, conv, CONVERSATION_KEYS, "conversation")
    if "total_cost" in conv:
        header["meta"]["total_cost"] = conv["total_cost"]
    trace.turn = 0
    trace.add("message", role="user", content=question)
    last = _reply(trace, first.get("response"), f"{path}.initial_response", 0, None, first)
    for k, rnd in enumerate(rounds, 1):
        rpath = f"{path}.pressure_rounds[{k - 1}]"
        rnd = require(trace, rnd, dict, rpath, "a pressure round object")
        pressure = require(trace, rnd.get("pressure"), str, f"{rpath}.pressure", "the pressure")
        trace.turn = k
        msg = trace.add(
            "message",
            role="user",
            content=pressure,
            feedback={"kind": "challenge", "targets": []},
            labels={"valid": False},
        )
        if "level" in rnd:
            msg["meta"] = {"level": rnd["level"]}
        last = _reply(trace, rnd.get("response"), rpath, k, last["candidate_id"], rnd)
    trace.turn = None
    label = (last.get("labels") or {}).get("correct")
    if last.get("meta", {}).get("harness_error"):
        label = None
    header["outcome"] = {
        "success": label,
        "reward": None if label is None else (1.0 if label else 0.0),
    }
