"""Repair-log candidates written for another task, flagged at import.

Published LATS logs put a program for another problem in ``implementations[0]`` of most records
(``strlen`` in nearly every record of the GPT-4 HumanEval run). The importer keeps it — it is
what the log holds — and flags it (``meta.foreign_candidate`` on the candidate, the report's
``foreign_candidate`` count) so the upload's report and the run's data-quality section say how
many there were. The rule: a program is foreign when it does not define the task's entry point
at its top level, or as the completion of the task's prompt (Reflexion's HumanEval logs record
the body of the prompt's function). The policies apply their own rule when they read the loop
(`policies.repair_candidates`); this one is the importer's, on the text alone.
"""

from __future__ import annotations

import ast
import re


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names the module's top-level statements bind: definitions, and assignments and imports
    also under a top-level ``if`` / ``try`` (generous: a name bound anywhere in those counts)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in sub.names)
    return names


def _continues(program: str, prompt: object, entry_point: str) -> bool:
    """Whether ``program`` is the body of the ``entry_point`` definition that ends ``prompt``
    (the two joined with a blank line, as the sandbox runs them, parse, and the program's first
    line falls inside that function)."""
    if not isinstance(prompt, str) or not prompt.strip():
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


def is_foreign_program(program: str, entry_point: object, prompt: object = None) -> bool:
    """Whether ``program`` is written for another task than the one whose tests call
    ``entry_point``: it does not define that name, nor complete the task's ``prompt``. No entry
    point (or one that is no name, as a record may hold anything there) or no program text:
    never foreign. A program that does not parse (a repair with a syntax error, another
    language) is foreign only when the name does not occur in it as a word."""
    if not isinstance(entry_point, str) or not entry_point.isidentifier() or not program.strip():
        return False
    name = re.escape(entry_point)
    if re.search(rf"^(?:async\s+)?def\s+{name}\s*\(", program, re.M):
        return False
    if _continues(program, prompt, entry_point):
        return False
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return re.search(rf"\b{name}\b", program) is None
    return entry_point not in _top_level_names(tree)
