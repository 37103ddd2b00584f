"""Programming repair runs (LDB / Reflexion / LATS style), one JSON record per line.

Record: `task_id`, `prompt`, `given_tests` (the visible tests), `test` (hidden tests),
`implementations[k]` (the program after repair round k), `test_feedback[k]` (the visible tests
implementation k FAILED, each `"<assert> # Real Execution Output: <output>"`), `is_passing`
(visible tests pass at the end), `is_solved` (hidden tests pass at the end).

Per round k: a `candidate` (`round` k, `parent` the previous candidate) and a `verification`
with `votes` = number of visible tests and `accepts` = votes − failed tests in test_feedback[k].
A candidate that does not define the task's entry point (LATS logs: a program for another
problem in `implementations[0]`) is kept and flagged `foreign_candidate` (`_foreign_candidates`).
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
    any_record,
    convert_jsonl,
    file_stem,
    require,
    short,
    type_name,
)
from ._foreign_candidates import is_foreign_program
from ._repair_layouts import (
    as_bool,
    benchmark_of,
    entry_point_of,
    failed_assert,
    parse_feedback_text,
    task_key,
)
from .base import ImportReport, SourceEvent

MAPPED = frozenset(
    {
        "task_id",
        "name",
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
METHODS = ("ldb", "reflexion", "lats", "self_debug", "selfdebug")


def _is_repair_record(record: dict) -> bool:
    keys = record.keys()
    if {"implementations", "test_feedback"} <= keys:
        return True
    # A final-solution file: the program and its verdict, keyed by task.
    return (
        "solution" in keys
        and bool({"is_solved", "reflections"} & keys)
        and bool({"task_id", "name"} & keys)
    )


class RepairRunsImporter:
    name = "repair_runs"
    label = "Programming repair runs (LDB / Reflexion / LATS)"

    def sniff(self, head: bytes, filename: str) -> bool:
        return any_record(head, _is_repair_record)

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        stem = file_stem(stream, report).lower()
        method = next((m for m in METHODS if m in stem), None)
        model = _model_from_stem(stem, method)

        def identify(record: Any, line: int) -> tuple[str, str, str]:
            task_id, path = task_key(record) if isinstance(record, dict) else (None, "$.task_id")
            trace_id = f"repair:{task_id if isinstance(task_id, str | int) else f'line{line}'}"
            return trace_id, path, f"expected one record per task, found {task_id!r}"

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


def failed_test(entry: str) -> str:
    """The assert statement of a feedback entry, without the recorded execution output."""
    return failed_assert(entry)


def _flag(trace: Trace, record: dict, key: str, required: bool) -> bool | None:
    """A boolean field; 'True'/'false' strings are read (and flagged), anything else is an
    error naming the field (a missing optional one is None)."""
    raw = record.get(key)
    if raw is None and not required:
        return None
    value, was_text = as_bool(raw)
    if value is None:
        if raw is None:
            raise trace.fail(
                f"$.{key}", "expected a boolean, found nothing (field missing or null)"
            )
        raise trace.fail(
            f"$.{key}",
            f"expected a boolean, found {type_name(raw)} {short(raw, 60)} "
            "(booleans written as 'True' / 'False' are read too)",
        )
    if was_text:
        trace.report.note_flag(f"{key}_as_string")
    return value


def _rounds(trace: Trace, feedback: list, visible: list | None) -> list[tuple[list[str], int]]:
    """(failed tests, votes) per implementation, from either feedback layout."""
    out = []
    for k, fails in enumerate(feedback):
        path = f"$.test_feedback[{k}]"
        if isinstance(fails, str):
            parsed = parse_feedback_text(fails)
            if parsed is None:
                raise trace.fail(
                    path,
                    "expected executor feedback text with a 'Tests failed:' section (Reflexion) "
                    f"or an array of failed tests (LDB), found string {short(fails, 60)}",
                )
            passed, failed = parsed
            out.append((failed, len(passed) + len(failed)))
            continue
        fails = require(
            trace, fails, list, path, "an array of failed-test strings or a feedback string"
        )
        if visible is None:
            raise trace.fail(
                "$.given_tests",
                "expected an array of visible tests (test_feedback lists only the failed ones, "
                "so the votes cannot be counted without them), found nothing (field missing)",
            )
        for j, entry in enumerate(fails):
            require(trace, entry, str, f"{path}[{j}]", "a failed-test string")
        if len(fails) > len(visible):
            raise trace.fail(
                path,
                f"expected at most {len(visible)} failed visible tests (len(given_tests)), "
                f"found {len(fails)}",
            )
        out.append((fails, len(visible)))
    return out


def _record(trace: Trace, record: Any, method: str | None, model: str | None) -> None:
    record = require(trace, record, dict, "$", "a repair-run record object")
    raw_id, id_path = task_key(record)
    task_id = str(
        require(trace, raw_id, (str, int), id_path, "a task id (task_id, or a MultiPL-E name)")
    )
    if record.get("implementations") is None and record.get("solution") is not None:
        _final_solution(trace, record, task_id, method, model)
        return
    impls = require(
        trace,
        record.get("implementations"),
        list,
        "$.implementations",
        "an array of programs (or a final `solution`)",
    )
    feedback = require(
        trace,
        record.get("test_feedback"),
        list,
        "$.test_feedback",
        "an array (one entry of test feedback per implementation)",
    )
    visible = record.get("given_tests")
    if visible is not None:
        visible = require(trace, visible, list, "$.given_tests", "an array of visible tests")
    is_solved = _flag(trace, record, "is_solved", required=True)
    is_passing = _flag(trace, record, "is_passing", required=False)
    if not impls:
        raise trace.fail(
            "$.implementations", "expected at least one implementation, found an empty array"
        )
    if len(impls) != len(feedback):
        raise trace.fail(
            "$.test_feedback",
            f"expected one feedback list per implementation ({len(impls)}), found {len(feedback)}",
        )
    for i, test in enumerate(visible or ()):
        require(trace, test, str, f"$.given_tests[{i}]", "a test string")
    reflections = _reflections(trace, record)
    rounds = _rounds(trace, feedback, visible)
    last_fails, last_votes = rounds[-1]
    derived_passing = not last_fails
    if is_passing is None:
        is_passing = derived_passing
    elif is_passing != derived_passing:
        raise trace.fail(
            "$.is_passing",
            f"expected is_passing={derived_passing} (last feedback has {len(last_fails)} "
            f"failed of {last_votes} visible tests), found {is_passing}",
        )
    header = _header(trace, record, task_id, method, model, is_solved, is_passing, visible)
    entry_point = header["task"].get("entry_point")
    if record.get("is_passing") is None:
        header.setdefault("meta", {})["is_passing_derived"] = True
    trace.turn = 0
    if isinstance(record.get("prompt"), str):
        trace.add("message", role="user", content=record["prompt"])

    visible_set = {t.strip() for t in visible} if visible is not None else None
    parent = None
    for k, (impl, (fails, votes)) in enumerate(zip(impls, rounds, strict=True)):
        require(trace, impl, str, f"$.implementations[{k}]", "a program string")
        if k > 0 and reflections and k - 1 < len(reflections):
            _reflection(trace, reflections[k - 1])
        cid = f"c{k}"
        cand = trace.add("candidate", candidate_id=cid, content=impl, parent=parent, round=k)
        if is_foreign_program(impl, entry_point, record.get("prompt")):
            trace.flag(cand, "foreign_candidate", "foreign_candidate", True)
        if k == len(impls) - 1:
            cand["labels"] = {"valid": is_solved}
            if isinstance(record.get("solution"), str) and record["solution"] != impl:
                trace.flag(
                    cand,
                    "solution_differs_from_last_implementation",
                    "solution",
                    record["solution"],
                )
        ver = trace.add(
            "verification",
            candidate_id=cid,
            round=k,
            accepts=votes - len(fails),
            votes=votes,
            verifier="visible_tests",
        )
        if fails:
            ver["meta"] = {"failed": fails}
            if visible_set is not None:
                unknown = [f for f in fails if failed_test(f) not in visible_set]
                if unknown:
                    trace.flag(
                        ver, "failed_test_not_in_given_tests", "unknown_failed_tests", unknown
                    )
        parent = cid
    if reflections and len(reflections) >= len(impls):
        header.setdefault("meta", {})["extra_reflections"] = reflections[len(impls) - 1 :]
        trace.report.note_unmapped(
            "reflections after the last implementation", short(reflections[-1])
        )
    trace.turn = None
    trace.add("check", name="visible_tests", passed=is_passing, source="test_feedback")
    trace.add("check", name="hidden_tests", passed=is_solved, source="is_solved")


def _reflections(trace: Trace, record: dict) -> list[str] | None:
    reflections = record.get("reflections")
    if reflections is None:
        return None
    reflections = require(trace, reflections, list, "$.reflections", "an array of reflection texts")
    for i, text in enumerate(reflections):
        require(trace, text, str, f"$.reflections[{i}]", "a reflection text")
    return reflections


def _reflection(trace: Trace, text: str) -> None:
    trace.add("message", role="assistant", content=text, meta={"kind": "reflection"})


def _header(
    trace: Trace,
    record: dict,
    task_id: str,
    method: str | None,
    model: str | None,
    is_solved: bool | None,
    is_passing: bool | None,
    visible: list | None,
) -> dict:
    entry_point = entry_point_of(record, task_id)
    header = trace.header(
        agent=method,
        model=model,
        task={
            "id": task_id,
            "benchmark": benchmark_of(task_id),
            "category": "code_repair",
            "prompt": record.get("prompt"),
            "entry_point": entry_point,
            "visible_tests": visible,
        },
        env={"name": "python-tests", "config": {"entry_point": entry_point}},
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
    return header


FINAL_ONLY_NOTE = (
    "final-solution file: each record has only its final `solution` (one candidate) and its "
    "reflections; it has no intermediate implementations, no per-round test feedback and no "
    "visible tests, so there are no verification events and no visible_tests check"
)


def _final_solution(
    trace: Trace, record: dict, task_id: str, method: str | None, model: str | None
) -> None:
    """One candidate (the solution) after its reflections, which stand for the feedback of the
    rounds the file did not keep."""
    solution = require(trace, record.get("solution"), str, "$.solution", "a program string")
    is_solved = _flag(trace, record, "is_solved", required=True)
    reflections = _reflections(trace, record) or []
    _header(trace, record, task_id, method, model, is_solved, None, None)
    trace.report.note(FINAL_ONLY_NOTE)
    trace.turn = 0
    if isinstance(record.get("prompt"), str):
        trace.add("message", role="user", content=record["prompt"])
    for text in reflections:
        _reflection(trace, text)
    trace.add(
        "candidate",
        candidate_id="c0",
        content=solution,
        round=len(reflections),
        labels={"valid": is_solved},
        meta={"final_solution_only": True},
    )
    trace.turn = None
    trace.add("check", name="hidden_tests", passed=is_solved, source="is_solved")
