"""Label code candidates by running a record's hidden tests in the sandbox
(HumanEval / MBPP style, as the LDB and Reflexion repair runs record them).

The hidden tests come from the trace header — ``labels.hidden_tests`` (what the agent never
saw), ``task.entry_point`` and ``task.prompt`` — as the repair-runs importer writes them. The
program run for a candidate is: the prompt when it is Python (HumanEval prompts define helpers
some tests call), the candidate, the tests, ``check(<entry point>)`` when the tests define
``check`` without calling it (HumanEval), and a random marker printed last — so a candidate
that exits early with status 0 does not pass.

Opt-in and off by default: see `policies.sandbox.process` and docs/sandbox.md (this runs uploaded
code).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import sys
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from ..labels import CandidateLabel, LabelKey
from ..repair_candidates import FOREIGN_CANDIDATE, is_foreign, task_entry_point, task_prompt
from ..trace import Candidate, JsonDict, Trace
from .process import LAUNCHER, SECCOMP, ExecResult, SandboxDisabled, SandboxSettings, run_program

_DEFINES_CHECK = re.compile(r"^def check\(", re.M)
_CALLS_CHECK = re.compile(r"^check\(", re.M)


def _is_python(source: str) -> bool:
    try:
        compile(source, "<prompt>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _program_body(trace: Trace, code: str) -> str | None:
    """`hidden_test_program` up to its marker line; None when the trace carries no hidden
    tests."""
    labels = trace.header.labels
    tests = labels.get("hidden_tests")
    if not isinstance(tests, str) or not tests.strip():
        return None
    task = trace.header.raw.get("task")
    task = task if isinstance(task, dict) else {}
    parts: list[str] = []
    prompt = task.get("prompt")
    if isinstance(prompt, str) and prompt.strip() and _is_python(prompt):
        parts.append(prompt)
    parts += [code, tests]
    entry = task.get("entry_point")
    if isinstance(entry, str) and entry.isidentifier():
        if _DEFINES_CHECK.search(tests) and not _CALLS_CHECK.search(tests):
            parts.append(f"check({entry})")
    return "\n\n".join(parts)


def _with_marker(body: str, marker: str) -> str:
    return f"{body}\n\nprint({marker!r})\n"


def hidden_test_program(trace: Trace, code: str, marker: str) -> str | None:
    """The program that runs the trace's hidden tests against ``code``; None when the trace
    carries no hidden tests."""
    body = _program_body(trace, code)
    return None if body is None else _with_marker(body, marker)


def reusable(stored: Mapping[str, tuple[bool, str]]) -> dict[str, tuple[bool, str]]:
    """The stored outcomes a run may reuse: passes and failures, never a failure that was a
    wall-clock kill (whatever wrote it: such a row says nothing of the program's tests)."""
    return {
        k: (passed, detail)
        for k, (passed, detail) in stored.items()
        if passed or not detail.startswith(("timeout", WALL_CLOCK))
    }


class ResultStore(Protocol):
    """Where a caller keeps programs' outcomes across runs, by `program_key`: (passed,
    the label's detail) of programs that passed or failed. A run at the wall-clock limit
    (``timeout``: it depends on the machine's load) or not run (``unavailable``) is never put."""

    def get_many(self, keys: Collection[str]) -> Mapping[str, tuple[bool, str]]: ...

    def put_many(self, outcomes: Mapping[str, tuple[bool, str]]) -> None: ...


#: What a program's outcome depends on besides its text: the sandbox's code and the interpreter.
_SANDBOX_CODE = hashlib.sha256(
    b"".join(
        Path(f).read_bytes()
        for f in (__file__, LAUNCHER, SECCOMP, LAUNCHER.with_name("process.py"))
    )
).hexdigest()
#: The marker a key is computed with (a run prints a random one: `execute_hidden_tests`).
_KEY_MARKER = "TA-HIDDEN-TESTS-DONE"


def _key_head(settings: SandboxSettings) -> str:
    limits = {k: v for k, v in settings.to_dict().items() if k != "enabled"}
    return json.dumps([limits, settings.python or sys.executable, sys.version, _SANDBOX_CODE])


def _key(head: str, body: str) -> str:
    return hashlib.sha256(f"{head}\n{_with_marker(body, _KEY_MARKER)}".encode()).hexdigest()


def program_key(trace: Trace, code: str, settings: SandboxSettings) -> str | None:
    """The key of the program that runs ``trace``'s hidden tests against ``code`` under
    ``settings``: its text (with a fixed marker), every limit, the interpreter and the
    sandbox's own code. None when the trace carries no hidden tests."""
    body = _program_body(trace, code)
    return None if body is None else _key(_key_head(settings), body)


#: The reason a candidate stopped at the wall-clock limit twice is labelled unknown.
WALL_CLOCK = "wall-clock limit"


def stopped_by_wall_clock(result: ExecResult) -> bool:
    """Whether the run was killed at the sandbox's wall-clock limit (not the CPU limit): the
    program did not get to finish, which says nothing of its tests on a loaded machine. A
    program that loops is stopped by the CPU-time limit (a failure); the wall clock
    (`SandboxSettings.timeout_s`, above ``cpu_s``) stops one that waited or was not given
    its CPU time."""
    return result.status == "timeout"


def _label(result: ExecResult) -> CandidateLabel:
    passed = result.passed
    if passed is None:  # the sandbox did not run it: unknown, never a failure
        return CandidateLabel(None, "executed", result.detail[:300])
    if stopped_by_wall_clock(result):  # it did not finish: unknown, never a failure
        return CandidateLabel(None, "executed", f"{WALL_CLOCK}: {result.detail}"[:300])
    detail = "hidden tests passed" if passed else f"{result.status}: {result.detail}"[:300]
    return CandidateLabel(passed, "executed", detail)


def execute_hidden_tests(
    traces: Sequence[Trace | Sequence[JsonDict]],
    settings: SandboxSettings,
    *,
    workers: int = 1,
    store: ResultStore | None = None,
) -> tuple[dict[LabelKey, CandidateLabel], dict[str, Any]]:
    """Run every candidate of every trace against its hidden tests; identical programs run
    once, and with a ``store`` a program it holds the outcome of (`program_key`) not at all.
    Returns labels keyed (trace id, candidate id) — a candidate the sandbox could not run is
    labelled unknown (``valid`` None) with the reason, ``sandbox unavailable: …`` — and counts
    of what happened ("programs run", "outcomes reused", and per status). Raises
    `SandboxDisabled` unless ``settings.enabled`` (checked before anything runs)."""
    if not settings.enabled:
        raise SandboxDisabled("code execution is off (SandboxSettings.enabled is false)")
    marker = f"TA-HIDDEN-TESTS-DONE-{secrets.token_hex(8)}"
    jobs: dict[str, str] = {}  # program key → the program, with this run's marker
    keys: dict[LabelKey, str] = {}
    stats: Counter[str] = Counter()
    head = _key_head(settings)
    for t in traces:
        trace = t if isinstance(t, Trace) else Trace.from_events(t)
        entry = task_entry_point(trace)
        prompt = task_prompt(trace)
        for e in trace.events:
            if not isinstance(e, Candidate):
                continue
            if is_foreign(e, entry, prompt):  # no round of this loop (`policies.repair_candidates`)
                stats[FOREIGN_CANDIDATE] += 1
                continue
            body = _program_body(trace, e.content)
            if body is None:
                stats["no hidden tests"] += 1
                continue
            key = _key(head, body)
            if key not in jobs:
                jobs[key] = _with_marker(body, marker)
            keys[(trace.trace_id, e.candidate_id)] = key
    known = reusable(store.get_many(list(jobs))) if store else {}
    to_run = [k for k in jobs if k not in known]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        ran = dict(
            zip(
                to_run,
                pool.map(lambda k: run_program(jobs[k], settings, marker=marker), to_run),
                strict=True,
            )
        )
    # once more, one at a time: the first run may have waited for a busy machine
    again = [k for k, res in ran.items() if stopped_by_wall_clock(res)]
    ran.update((k, run_program(jobs[k], settings, marker=marker)) for k in again)
    outcomes: dict[str, tuple[str, CandidateLabel]] = {
        k: ("passed" if passed else "failed", CandidateLabel(passed, "executed", detail))
        for k, (passed, detail) in known.items()
    }
    fresh: dict[str, tuple[bool, str]] = {}  # what the store may keep (see ResultStore)
    for k, res in ran.items():
        lab = _label(res)
        outcomes[k] = (res.status, lab)
        if lab.valid is not None and res.status in ("passed", "failed"):
            fresh[k] = (lab.valid, lab.detail)
    if store is not None and fresh:
        store.put_many(fresh)
    labels: dict[LabelKey, CandidateLabel] = {}
    for label_key, k in keys.items():
        status, lab = outcomes[k]
        stats[status] += 1
        labels[label_key] = lab
    stats["programs run"] = len(ran)
    if again:
        stats["retried at the wall-clock limit"] = len(again)
    stats["outcomes reused"] = len(known)
    return labels, dict(stats)
