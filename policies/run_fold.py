"""A policy's run summary as a fold that parts of a run can compute on their own and merge
(issue 17: run summaries "computed incrementally").

`PolicyFold` holds everything a run summary of one policy is made from: `RunSummary` (counts
and the paper table), TwinCheck's `TwincheckReport` and the transition-matrix cells. A worker
folds each batch of results while it still holds them, and the run's summary is the merge of
its batches' folds, in the run's order — instead of reading every stored record back at the
end (at 10⁵ traces that was 9–24 s of the finishing worker, at 4,000 a tenth of the run).
Merging in order gives exactly what one fold over the whole run gives: counts are added with
each key's first occurrence kept (`merging.merge_counts`), per-trace values appended in
order; where that cannot be exact (`NotMergeable`) the caller summarises from the rows.

The folds travel through the database as pickles, read back by `loads`, which builds only the
classes of this fold and the containers they use (the standard library's "restricting
globals") — a stored blob that names anything else is refused, not executed. `FOLD_VERSION`
is a hash of the source of the modules whose classes are pickled: a fold written by other code
(a worker of an earlier release in the middle of an upgrade) is recognised and not merged.
"""

from __future__ import annotations

import array
import collections
import hashlib
import io
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import merging, paper_tables, report, twincheck_report
from .merging import NotMergeable, merge_counts
from .report import RunSummary
from .twincheck_report import TwincheckReport

__all__ = ["FOLD_VERSION", "MATRIX_KEY", "NotMergeable", "PolicyFold", "dumps", "loads"]

#: Where a policy's summary keeps its transition-matrix cells, [[actor, guarded, n], …] in the
#: order of their first occurrence (the run page draws the matrix from them).
MATRIX_KEY = "transition_matrix"

NOT_APPLICABLE = "not_applicable"


class PolicyFold:
    """One policy's run summary as a fold over its result rows in the run's order: `add` a row
    with its trace's category, `merge` the fold of the rows that follow, then `result`."""

    def __init__(self, policy: str, *, queue_items: bool = False) -> None:
        self.policy = policy
        self.summary = RunSummary(policy, queue_items=queue_items)
        self.report = TwincheckReport() if policy == "twincheck" else None
        self.cells: dict[tuple[Any, Any], int] = {}

    @property
    def n(self) -> int:
        return self.summary.n

    def add(self, row: Mapping[str, Any], category: str) -> None:
        self.summary.add(row, category)
        if self.report is not None:
            self.report.add(row, category)
        if row["transition"] != NOT_APPLICABLE:
            key = (row["actor_success"], row["guarded_success"])
            self.cells[key] = self.cells.get(key, 0) + 1

    def merge(self, other: PolicyFold) -> None:
        self.summary.merge(other.summary)
        if self.report is not None and other.report is not None:
            self.report.merge(other.report)
        merge_counts(self.cells, other.cells)

    def result(self, *, n_boot: int) -> dict[str, Any]:
        """The policy's part of the run summary (with its report for TwinCheck)."""
        if not self.summary.n:
            return {"n": 0, MATRIX_KEY: []}
        out = self.summary.result(n_boot=n_boot)
        out[MATRIX_KEY] = [[a, g, n] for (a, g), n in self.cells.items()]
        if self.report is not None:  # the paper's per-certificate table and Fig. 2 (gate AUC/AP)
            out["report"] = self.report.result(n_boot=n_boot, seed=0)
        return out


# --- stored form -------------------------------------------------------------------------------

_MODULES = (merging, paper_tables, report, twincheck_report)


def _version() -> str:
    digest = hashlib.blake2b(digest_size=8)
    for path in (*(str(m.__file__) for m in _MODULES), __file__):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


#: The folds' code, as a key: folds are merged only with folds of the same code.
FOLD_VERSION = _version()

_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "Counter"): collections.Counter,
    ("collections", "defaultdict"): collections.defaultdict,
    ("array", "array"): array.array,
    ("array", "_array_reconstructor"): array._array_reconstructor,  # type: ignore[attr-defined]
    (__name__, "PolicyFold"): PolicyFold,
    ("policies.report", "RunSummary"): RunSummary,
    ("policies.report", "_Queue"): report._Queue,
    ("policies.twincheck_report", "TwincheckReport"): TwincheckReport,
    ("policies.twincheck_report", "CertificateCounts"): twincheck_report.CertificateCounts,
    ("policies.twincheck_report", "GateRanking"): twincheck_report.GateRanking,
    **{
        ("policies.paper_tables", name): getattr(paper_tables, name)
        for name in (
            "Rate",
            "Total",
            "GateScores",
            "TwincheckTable",
            "ChecklistTable",
            "VrrTable",
            "CommitTable",
        )
    },
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"a stored fold may not name {module}.{name}")
        return found


def dumps(folds: Mapping[str, PolicyFold]) -> bytes:
    """Folds per policy as bytes for the database."""
    return pickle.dumps(dict(folds), protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> dict[str, PolicyFold]:
    """`dumps`' folds back, building nothing but the fold's own classes."""
    out = _Unpickler(io.BytesIO(data)).load()
    if not isinstance(out, dict) or not all(isinstance(f, PolicyFold) for f in out.values()):
        raise pickle.UnpicklingError("not a dict of policy folds")
    return out
