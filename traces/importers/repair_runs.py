"""Programming repair runs (LDB / Reflexion / LATS style), one JSON record per line.

Record: `task_id`, `prompt`, `given_tests` (the visible tests), `test` (hidden tests),
`implementations[k]` (the program after repair round k), `test_feedback[k]` (the visible tests
implementation k FAILED, each `"<assert> # Real Execution Output: <output>"`), `is_passing`
(visible tests pass at the end), `is_solved` (hidden tests pass at the end).

Per round k: a `candidate` (`round` k, `parent` the previous candidate) and a `verification`
with `votes` = number of visible tests and `accepts` = votes − failed tests in test_feedback[k].
The last candidate gets `labels.valid = is_solved`; `is_passing` / `is_solved` also become
`check` events and the outcome (success = is_solved). Records whose fields are missing, of the
wrong type or inconsistent (lengths disagree, more failures than tests, `is_passing` contradicting
the last feedback) are errors, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from ._common import (
    Trace,
    convert_jsonl,
    file_stem,
    head_lines,
    require,
    short,
)
from .base import ImportReport, SourceEvent

MAPPED = frozenset(
    {
        "task_id",
        "prompt",
        "entry_point",
        "test",
        "given_tests",
        "canonical_solution",
        "is_passing",
        "is_solved",
        "reflections",
        "implementations",
        "test_feedback",
        "solution",
    }
)
FEEDBACK_SEP = "# Real Execution Output:"
METHODS = ("ldb", "reflexion", "lats", "self_debug", "selfdebug")


class RepairRunsImporter:
    name = "repair_runs"
    label = "Programming repair runs (LDB / Reflexion / LATS)"

    def sniff(self, head: bytes, filename: str) -> bool:
        records = head_lines(head, 1)
        return (
            bool(records)
            and isinstance(records[0], dict)
            and {"implementations", "test_feedback"} <= records[0].keys()
        )

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        stem = file_stem(stream, report).lower()
        method = next((m for m in METHODS if m in stem), None)
        model = _model_from_stem(stem, method)

        def identify(record: Any, line: int) -> tuple[str, str, str]:
            task_id = record.get("task_id") if isinstance(record, dict) else None
            trace_id = f"repair:{task_id if isinstance(task_id, str | int) else f'line{line}'}"
            return trace_id, "$.task_id", f"expected one record per task, found {task_id!r}"

        yield from convert_jsonl(
            stream,
            report,
            identify=identify,
            build=lambda trace, record: _record(trace, record, method, model),
        )


def _model_from_stem(stem: str, method: str | None) -> str | None:
    # LDB result files are named <dataset>_<method>_<model>.jsonl.
    if method and f"_{method}_" in stem:
        return stem.split(f"_{method}_", 1)[1] or None
    return None


def _benchmark(task_id: str) -> str | None:
    head = task_id.split("/", 1)[0] if "/" in task_id else None
    return head.lower() if head else None


def failed_test(entry: str) -> str:
    """The assert statement of a feedback entry, without the recorded execution output."""
    return entry.split(FEEDBACK_SEP, 1)[0].strip()


def _record(trace: Trace, record: Any, method: str | None, model: str | None) -> None:
    record = require(trace, record, dict, "$", "a repair-run record object")
    task_id = require(trace, record.get("task_id"), (str, int), "$.task_id", "a task id")
    impls = require(
        trace, record.get("implementations"), list, "$.implementations", "an array of programs"
    )
    feedback = require(
        trace,
        record.get("test_feedback"),
        list,
        "$.test_feedback",
        "an array (one list of failed tests per implementation)",
    )
    visible = require(
        trace, record.get("given_tests"), list, "$.given_tests", "an array of visible tests"
    )
    is_passing = require(trace, record.get("is_passing"), bool, "$.is_passing", "a boolean")
    is_solved = require(trace, record.get("is_solved"), bool, "$.is_solved", "a boolean")
    if not impls:
        raise trace.fail(
            "$.implementations", "expected at least one implementation, found an empty array"
        )
    if len(impls) != len(feedback):
        raise trace.fail(
            "$.test_feedback",
            f"expected one feedback list per implementation ({len(impls)}), found {len(feedback)}",
        )
    for i, test in enumerate(visible):
        require(trace, test, str, f"$.given_tests[{i}]", "a test string")
    reflections = record.get("reflections")
    if reflections is not None:
        reflections = require(
            trace, reflections, list, "$.reflections", "an array of reflection texts"
        )

    visible_set = {t.strip() for t in visible}
    votes = len(visible)
    header = trace.header(
        agent=method,
        model=model,
        task={
            "id": str(task_id),
            "benchmark": _benchmark(str(task_id)),
            "category": "code_repair",
            "prompt": record.get("prompt"),
            "entry_point": record.get("entry_point"),
            "visible_tests": visible,
        },
        env={"name": "python-tests", "config": {"entry_point": record.get("entry_point")}},
        outcome={
            "success": is_solved,
            "reward": 1.0 if is_solved else 0.0,
            "is_passing": is_passing,
        },
    )
    header["labels"] = {
        "hidden_tests": record.get("test"),
        "canonical_solution": record.get("canonical_solution"),
        "is_solved": is_solved,
        "is_passing": is_passing,
    }
    trace.keep(header, record, MAPPED, "record")
    trace.turn = 0
    if isinstance(record.get("prompt"), str):
        trace.add("message", role="user", content=record["prompt"])

    parent = None
    last_accepts = None
    for k, (impl, fails) in enumerate(zip(impls, feedback, strict=True)):
        require(trace, impl, str, f"$.implementations[{k}]", "a program string")
        fails = require(
            trace, fails, list, f"$.test_feedback[{k}]", "an array of failed-test strings"
        )
        for j, entry in enumerate(fails):
            require(trace, entry, str, f"$.test_feedback[{k}][{j}]", "a failed-test string")
        if len(fails) > votes:
            raise trace.fail(
                f"$.test_feedback[{k}]",
                f"expected at most {votes} failed visible tests (len(given_tests)), found "
                f"{len(fails)}",
            )
        if (
            k > 0
            and reflections
            and k - 1 < len(reflections)
            and isinstance(reflections[k - 1], str)
        ):
            trace.add(
                "message", role="assistant", content=reflections[k - 1], meta={"kind": "reflection"}
            )
        cid = f"c{k}"
        cand = trace.add("candidate", candidate_id=cid, content=impl, parent=parent, round=k)
        if k == len(impls) - 1:
            cand["labels"] = {"valid": is_solved}
            if isinstance(record.get("solution"), str) and record["solution"] != impl:
                trace.flag(
                    cand,
                    "solution_differs_from_last_implementation",
                    "solution",
                    record["solution"],
                )
        accepts = votes - len(fails)
        ver = trace.add(
            "verification",
            candidate_id=cid,
            round=k,
            accepts=accepts,
            votes=votes,
            verifier="visible_tests",
        )
        if fails:
            ver["meta"] = {"failed": fails}
            unknown = [f for f in fails if failed_test(f) not in visible_set]
            if unknown:
                trace.flag(ver, "failed_test_not_in_given_tests", "unknown_failed_tests", unknown)
        parent = cid
        last_accepts = accepts
    if (last_accepts == votes) != is_passing:
        raise trace.fail(
            "$.is_passing",
            f"expected is_passing={last_accepts == votes} (last feedback has "
            f"{votes - last_accepts} "
            f"failed of {votes} visible tests), found {is_passing}",
        )
    if reflections and len(reflections) >= len(impls):
        header.setdefault("meta", {})["extra_reflections"] = reflections[len(impls) - 1 :]
        trace.report.note_unmapped(
            "reflections after the last implementation", short(reflections[-1])
        )
    trace.turn = None
    trace.add("check", name="visible_tests", passed=is_passing, source="test_feedback")
    trace.add("check", name="hidden_tests", passed=is_solved, source="is_solved")
