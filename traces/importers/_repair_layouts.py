"""The record layouts repair-loop runs are published in, read into one shape.

- LDB (`results/ldb/*.jsonl`): `task_id`, `given_tests`, `test_feedback[k]` a list of the
  visible tests implementation k failed, booleans `is_passing` / `is_solved`.
- Reflexion / LATS over MultiPL-E (`programming_runs/root/**.jsonl`): records keyed by `name`
  (`HumanEval_23_strlen`, `mbpp_234_volume_cube`), `test_feedback[k]` ONE string written by the
  executor (`"Tested passed:\\n<assert>…\\n\\nTests failed:\\n<assert> # output: <value>…"`), no
  `given_tests`, no `is_passing`, sometimes `is_solved` / `acc` as strings.
- Final-solution files (Reflexion's `simple` strategy, or a run that logged only its end):
  `solution` (+ `reflections`), no implementations or feedback.

Plain functions over one record; the importer turns their answers into events or errors.
"""

from __future__ import annotations

import re
from typing import Any

# MultiPL-E names: <dataset>_<number>_<entry point>
MULTIPL_E_NAME = re.compile(r"^(?P<bench>[A-Za-z]+(?:-[A-Za-z]+)?)_(?P<num>\d+)_(?P<entry>\w+)$")
PASSED_HEAD = "Tested passed:"
FAILED_HEAD = "Tests failed:"
TRUE_TEXT = frozenset({"true", "1"})
FALSE_TEXT = frozenset({"false", "0"})


def task_key(record: dict) -> tuple[Any, str]:
    """(task id, JSON path it came from): `task_id` (LDB, HumanEval) else `name` (MultiPL-E)."""
    if record.get("task_id") is not None:
        return record["task_id"], "$.task_id"
    return record.get("name"), "$.name"


def benchmark_of(task_id: str) -> str | None:
    """`HumanEval/45` → humaneval; `mbpp_234_volume_cube` → mbpp; else None."""
    if "/" in task_id:
        head = task_id.split("/", 1)[0]
        return head.lower() or None
    m = MULTIPL_E_NAME.match(task_id)
    return m.group("bench").lower() if m else None


def entry_point_of(record: dict, task_id: str) -> Any:
    if record.get("entry_point") is not None:
        return record["entry_point"]
    m = MULTIPL_E_NAME.match(task_id)
    return m.group("entry") if m else None


def as_bool(value: Any) -> tuple[bool | None, bool]:
    """(value, was_text): booleans as they are, 'True'/'false'/'1'/'0' strings read as booleans
    (Reflexion forks write them so); anything else (None, 'maybe', 2) is (None, False)."""
    if isinstance(value, bool):
        return value, False
    if isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE_TEXT:
            return True, True
        if text in FALSE_TEXT:
            return False, True
    return None, False


def as_number(value: Any) -> float | None:
    """`acc` as written: a number, or a number in a string ('0.75')."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def parse_feedback_text(text: str) -> tuple[list[str], list[str]] | None:
    """(passed, failed) tests of a Reflexion executor's feedback string; None when the text is
    not in that layout (so the caller can say what it expected)."""
    if FAILED_HEAD not in text:
        return None
    before, _, failed_part = text.partition(FAILED_HEAD)
    passed_part = before.split(PASSED_HEAD, 1)[1] if PASSED_HEAD in before else before
    passed = [line.strip() for line in passed_part.splitlines() if line.strip()]
    failed = [line.strip() for line in failed_part.splitlines() if line.strip()]
    return passed, failed


def failed_assert(entry: str) -> str:
    """The assert of a failed-test entry without the recorded output (`# output:` in
    Reflexion, `# Real Execution Output:` in LDB)."""
    for sep in ("# Real Execution Output:", "# output:"):
        if sep in entry:
            return entry.split(sep, 1)[0].strip()
    return entry.strip()
