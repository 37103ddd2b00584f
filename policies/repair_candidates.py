"""Which recorded candidates are rounds of a task's repair loop.

A repair loop repairs one program for one task. Published LATS logs put a program for another
problem in ``implementations[0]`` of most records (the same function in almost every record:
``strlen`` in the GPT-4 HumanEval run); executed against the task's tests it fails, and taken as
round 0 it makes every later round look like a repair of a broken program. A candidate that
does not define the task's entry point is therefore not a round of the loop: it is a *foreign
candidate*, kept in the trace and reported under that reason, but never a round, a vote
observation or an executed label.

A HumanEval-style *completion* defines the entry point through the task's prompt: Reflexion's
published HumanEval logs record ``solution`` as the body of the prompt's function (indented, no
``def`` line), and the sandbox runs the prompt followed by it. Such a program is the task's own
candidate, not a foreign one (`completes_prompt`).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .trace import Candidate, Trace

#: The data-quality reason a foreign candidate is reported under.
FOREIGN_CANDIDATE = "foreign candidate"


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the module's top-level statements bind: functions, classes, assignments,
    imports — anything the tests could call the entry point through."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for sub in ast.walk(node):  # assignments, also under if / try at top level
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(sub.name)
    return names


def defines_entry_point(program: str, entry_point: str) -> bool:
    """Whether ``program`` defines ``entry_point`` at its top level. A program that does not
    parse as Python — a repair with a syntax error, which is still a round of its loop, or a
    program in another language (MultiPL-E runs) — is given the benefit of the doubt: it
    defines the name when the name occurs in it as a word."""
    if entry_point not in program:
        return False
    name = re.escape(entry_point)
    if re.search(rf"^(?:async\s+)?def\s+{name}\s*\(", program, re.M):
        return True  # a top-level definition: no parse needed (the common case)
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return re.search(rf"\b{name}\b", program) is not None
    return entry_point in _bound_names(tree)


def completes_prompt(program: str, prompt: object, entry_point: str) -> bool:
    """Whether ``program`` continues the definition of ``entry_point`` that ends ``prompt``:
    the prompt and the program, joined as the sandbox joins them, parse, and the program's first
    line falls inside that function. A whole program for another task (a top-level ``def`` of
    its own) does not."""
    if not isinstance(prompt, str) or not prompt.strip() or not program.strip():
        return False
    try:
        tree = ast.parse(f"{prompt}\n\n{program}")
    except (SyntaxError, ValueError):
        return False
    lines = program.split("\n")
    first = prompt.count("\n") + 3 + next(i for i, line in enumerate(lines) if line.strip())
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name == entry_point
        and node.lineno < first <= (node.end_lineno or 0)
        for node in tree.body
    )


def task_prompt(trace: Trace) -> str | None:
    """The task's prompt (``task.prompt``, as the repair-runs importer writes it), if any."""
    task: Any = trace.header.raw.get("task")
    prompt = task.get("prompt") if isinstance(task, dict) else None
    return prompt if isinstance(prompt, str) else None


def task_entry_point(trace: Trace) -> str | None:
    """The entry point the task's tests call: ``task.entry_point``, else the environment's
    ``config.entry_point`` (where the repair-runs importer writes both); None when the trace
    names none (then no candidate can be judged foreign)."""
    task: Any = trace.header.raw.get("task")
    entry = task.get("entry_point") if isinstance(task, dict) else None
    if entry is None:
        entry = trace.header.env_config.get("entry_point")
    return entry if isinstance(entry, str) and entry.isidentifier() else None


def is_foreign(candidate: Candidate, entry_point: str | None, prompt: str | None = None) -> bool:
    """A candidate is foreign when its task names an entry point its program does not
    define, on its own or as the completion of the task's ``prompt``. Candidates without
    program text (answers, empty content) are never foreign."""
    if entry_point is None or not candidate.content.strip():
        return False
    if defines_entry_point(candidate.content, entry_point):
        return False
    return not completes_prompt(candidate.content, prompt, entry_point)


def foreign_candidate_ids(trace: Trace) -> list[str]:
    """The ids (or event positions, for candidates without an id) of the trace's foreign
    candidates, in trace order."""
    entry = task_entry_point(trace)
    if entry is None:
        return []
    prompt = task_prompt(trace)
    return [
        e.candidate_id or f"@{e.index}"
        for e in trace.events
        if isinstance(e, Candidate) and is_foreign(e, entry, prompt)
    ]
