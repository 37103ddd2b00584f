"""Label code candidates by running a record's hidden tests in the sandbox (issue 13 §2c;
HumanEval / MBPP style, as the LDB and Reflexion repair runs record them).

The hidden tests come from the trace header — ``labels.hidden_tests`` (what the agent never
saw), ``task.entry_point`` and ``task.prompt`` — as the repair-runs importer writes them. The
program run for a candidate is: the prompt when it is Python (HumanEval prompts define helpers
some tests call), the candidate, the tests, ``check(<entry point>)`` when the tests define
``check`` without calling it (HumanEval), and a random marker printed last — so a candidate
that exits early with status 0 does not pass.

Opt-in and off by default: see `policies.sandbox` and docs/sandbox.md (this runs uploaded
code).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .labels import CandidateLabel, LabelKey
from .sandbox import ExecResult, SandboxDisabled, SandboxSettings, run_program
from .trace import Candidate, JsonDict, Trace

_DEFINES_CHECK = re.compile(r"^def check\(", re.M)
_CALLS_CHECK = re.compile(r"^check\(", re.M)


def _is_python(source: str) -> bool:
    try:
        compile(source, "<prompt>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def hidden_test_program(trace: Trace, code: str, marker: str) -> str | None:
    """The program that runs the trace's hidden tests against ``code``; None when the trace
    carries no hidden tests."""
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
    parts.append(f"print({marker!r})")
    return "\n\n".join(parts) + "\n"


def _label(result: ExecResult) -> CandidateLabel | None:
    passed = result.passed
    if passed is None:
        return None  # the sandbox did not run it: no label, never a failure
    detail = "hidden tests passed" if passed else f"{result.status}: {result.detail}"[:300]
    return CandidateLabel(passed, "executed", detail)


def execute_hidden_tests(
    traces: Sequence[Trace | Sequence[JsonDict]],
    settings: SandboxSettings,
    *,
    workers: int = 1,
) -> tuple[dict[LabelKey, CandidateLabel], dict[str, Any]]:
    """Run every candidate of every trace against its hidden tests; identical programs run
    once. Returns labels keyed (trace id, candidate id) and counts of what happened. Raises
    `SandboxDisabled` unless ``settings.enabled`` (checked before anything runs)."""
    if not settings.enabled:
        raise SandboxDisabled("code execution is off (SandboxSettings.enabled is false)")
    marker = f"TA-HIDDEN-TESTS-DONE-{secrets.token_hex(8)}"
    jobs: dict[str, str] = {}  # program hash → program
    keys: dict[LabelKey, str] = {}
    stats: Counter[str] = Counter()
    for t in traces:
        trace = t if isinstance(t, Trace) else Trace.from_events(t)
        for e in trace.events:
            if not isinstance(e, Candidate):
                continue
            program = hidden_test_program(trace, e.content, marker)
            if program is None:
                stats["no hidden tests"] += 1
                continue
            digest = hashlib.sha256(program.encode()).hexdigest()
            jobs[digest] = program
            keys[(trace.trace_id, e.candidate_id)] = digest
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = dict(
            zip(
                jobs,
                pool.map(lambda p: run_program(p, settings, marker=marker), jobs.values()),
                strict=True,
            )
        )
    labels: dict[LabelKey, CandidateLabel] = {}
    for key, digest in keys.items():
        res = results[digest]
        stats[res.status] += 1
        lab = _label(res)
        if lab is not None:
            labels[key] = lab
    stats["programs run"] = len(jobs)
    return labels, dict(stats)
