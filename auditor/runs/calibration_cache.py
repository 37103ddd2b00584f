"""A run's VRR calibration taken from an earlier run of the same inputs (issue 17: "calibrations
… cached across runs by their inputs"). Re-auditing a project — another policy subset, another
judge, after annotating — calibrated the same loops again: at 4,000 bench traces 0.6–1.0 s
of a one-process run's start, while nothing else is audited (0.2–0.4 s copying; README).

What a calibration is computed from, all of it in the key (`calibration_inputs`):
- the run's traces with verification votes, by id and in order. A trace is immutable once its
  upload is done (runs read only those) and ids are never reused (PostgreSQL identity columns;
  Django's SQLite AUTOINCREMENT), so the ids stand for the events and the trace's model;
- the bootstrap's size (TA_CALIBRATION_BOOTSTRAP; the seed is fixed at 0);
- the code that reads loops and fits the parameters: a digest of the `policies` package's source
  and of the modules here that group and merge tallies, so a changed parser or estimator never
  serves a stale calibration (`code_digest`).
Not cached (`calibration_inputs` gives ""): projects that execute code candidates — their
labels come from sandbox runs with time limits, which need not repeat.

The cached value is the earlier run's `Calibration` rows, copied to this run: the rest of the
product reads a run's own rows, as before. The copy names its source in the run's timings
(``calibration_from``). TA_CALIBRATION_REUSE turns the reuse off (each run calibrates).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from django.conf import settings as django_settings
from django.db import transaction

import policies
from auditor.runs.models import AuditRun, Calibration

#: Modules of this package whose code decides a calibration besides the policies library's.
_OWN_MODULES = ("calibration.py", "calibration_parts.py", "calibration_cache.py")


def _digested() -> list[tuple[str, Path]]:
    lib = Path(policies.__file__).resolve().parent
    here = Path(__file__).resolve().parent
    root = lib.parent
    files = sorted(lib.rglob("*.py")) + [here / name for name in _OWN_MODULES]
    return [(path.relative_to(root).as_posix(), path) for path in files]


def digested_files() -> set[str]:
    """The files `code_digest` reads, relative to the project's root."""
    return {name for name, _ in _digested()}


@cache
def code_digest() -> str:
    """The digest of the calibration's code: every module of `policies`, and this package's
    calibration modules, by path and content (read once per process: ~1 MB, a few ms)."""
    h = hashlib.sha256()
    for name, path in _digested():
        h.update(name.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def calibration_inputs(run: AuditRun, votes: Sequence[int]) -> str:
    """The key of what the run's calibration is computed from ("" if it may not be reused)."""
    if not django_settings.TA_CALIBRATION_REUSE or not votes:
        return ""
    if run.project.execute_code_candidates:
        return ""
    h = hashlib.sha256()
    h.update(f"v1 {code_digest()} boot={django_settings.TA_CALIBRATION_BOOTSTRAP} ".encode())
    h.update(array("q", votes).tobytes())
    return h.hexdigest()


def reuse_calibration(run: AuditRun, inputs: str) -> int | None:
    """Copy the calibration of the project's latest calibrated run with these inputs to `run`;
    the source run's id, or None if there is none (or ``inputs`` is "")."""
    if not inputs:
        return None
    source = (
        Calibration.objects.filter(
            inputs=inputs, run__project_id=run.project_id, run__calibrated_at__isnull=False
        )
        .exclude(run_id=run.pk)
        .order_by("-run_id")
        .values_list("run_id", flat=True)
        .first()
    )
    if source is None:
        return None
    rows = list(Calibration.objects.filter(run_id=source, inputs=inputs))
    if not rows:  # the source run was deleted meanwhile
        return None
    with transaction.atomic():
        for row in rows:
            Calibration.objects.update_or_create(
                run=run,
                model=row.model,
                verifier=row.verifier,
                defaults={
                    "traces": row.traces,
                    "observations": row.observations,
                    "params": row.params,
                    "inputs": inputs,
                },
            )
    return source
