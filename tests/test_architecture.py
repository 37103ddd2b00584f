"""The shape of the code, checked: imports between packages point one way (import-linter's
contracts in pyproject.toml, also run by scripts/test), no import cycle that is not cut by a
function-level import with a comment saying why, and no oversized module.

`policies` is in the cycle check too: its judges' registry is reached from `policies.judges`
only through commented function-level and type-only imports.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("auditor", "traces", "common")
# The cycle check also covers policies (its size rule is the policy engineers' to adopt).
CYCLE_PACKAGES = (*PACKAGES, "policies")
MAX_LINES = 400  # a module to read in one sitting (STYLE); the exceptions hold one job each
ONE_JOB_EXCEPTIONS = {
    # BFCL's importer: one format, its many real-world quirks (docs/importers.md).
    "traces/importers/bfcl.py",
    # The v1 validator: one JSON Schema's rules written out for speed, field by field.
    "traces/validate.py",
}


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*CYCLE_PACKAGES, include_external_packages=False, cache_dir=None)


def _explained_lazy_import(module: str, line_number: int) -> bool:
    """An import inside a function (indented) with a comment on it or just above it."""
    path = REPO / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = REPO / module.replace(".", "/") / "__init__.py"
    lines = path.read_text().splitlines()
    line = lines[line_number - 1]
    if not line.startswith((" ", "\t")):
        return False
    above = lines[line_number - 2].strip() if line_number > 1 else ""
    return "#" in line or above.startswith("#")


def _cycles(graph: grimp.ImportGraph, skip: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), without `skip` edges."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if (v, w) in skip:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph.modules):
        if v not in index:
            visit(v)
    return out


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_every_import_cycle_is_cut_by_an_explained_lazy_import():
    graph = _graph()
    explained = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            details = graph.get_import_details(importer=importer, imported=imported)
            if details and all(_explained_lazy_import(importer, d["line_number"]) for d in details):
                explained.add((importer, imported))
    assert _cycles(graph, explained) == []


def test_the_cycle_check_sees_a_cycle():
    """The check itself: two modules importing each other at module level form a cycle."""
    graph = grimp.ImportGraph()
    for m in ("a", "b", "c"):
        graph.add_module(m)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="a")
    graph.add_import(importer="b", imported="c")
    assert _cycles(graph, set()) == [["a", "b"]]
    assert _cycles(graph, {("b", "a")}) == []


def test_no_module_over_the_size_limit_but_the_single_job_exceptions():
    big = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if "/migrations/" in rel or rel in ONE_JOB_EXCEPTIONS:
                continue
            if len(path.read_text().splitlines()) > MAX_LINES:
                big.append(rel)
    assert big == []
