"""A run's VRR calibration tallied in parallel (issue 17): at 10⁵ bench traces the start
tallied 25,000 loops alone for 13–15 s while the other worker processes waited. The start cuts
the loops into consecutive parts (`auditor.runs.queueing.tally_parts`); a task per part tallies
its loops per (model, verifier) group and stores the tallies as a `CalibrationPart`; the task
that stores the last part merges them in part order — `VoteTally.merge` makes that the tally of
the whole group, to the last bit — stores the calibrations and queues the loops' chunks.

Nothing here is needed for correctness: a part that never arrives (its worker died) leaves the
run uncalibrated and silent, and the sweep calibrates it whole (`audit_run_calibrate`), after
which a late part finds the run calibrated and does nothing.

Parts are stored as plain data (numbers, lists, bytes) and read by an unpickler that builds no
objects of any class: a part's bytes cannot run code.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from auditor.runs.calibration import Group, store_calibrations, tally_groups
from auditor.runs.models import AuditRun, CalibrationPart


def store_part(run: AuditRun, index: int, trace_ids: Sequence[int]) -> None:
    """Tally the part's loops and store their groups' tallies, in order of first occurrence
    (a redelivered part stores nothing twice)."""
    groups = tally_groups(run, trace_ids, execute=False)
    state = [
        (model, verifier, g.tally.state(), g.traces, g.hidden_tests)
        for (model, verifier), g in groups.items()
    ]
    CalibrationPart.objects.bulk_create(
        [CalibrationPart(run=run, index=index, state=pickle.dumps(state, protocol=5))],
        ignore_conflicts=True,
    )


def finish_parts(run_id: int, parts: int, inputs: str = "") -> AuditRun | None:
    """If all ``parts`` are stored and the run is not calibrated yet: merge them in order,
    store the calibrations, mark the run calibrated and drop the parts — under the run's row
    lock, so of two tasks storing the last parts at once one calibrates. The run if it did.
    ``inputs``: the calibration's key for later runs (`auditor.runs.calibration_cache`)."""
    from policies.vrr_calibration import VoteTally  # numpy: see auditor.runs.calibration

    with transaction.atomic():
        run = AuditRun.objects.select_for_update().select_related("project").get(pk=run_id)
        if run.status != AuditRun.Status.RUNNING or run.calibrated_at is not None:
            return None
        stored = CalibrationPart.objects.filter(run=run).order_by("index")
        if stored.count() < parts:
            return None
        groups: dict[tuple[str, str], Group] = {}
        for state in stored.values_list("state", flat=True).iterator(chunk_size=4):
            for model, verifier, tally, traces, hidden in _loads(bytes(state)):
                group = groups.setdefault((model, verifier), Group())
                group.tally.merge(VoteTally.from_state(tally))
                group.traces += traces
                group.hidden_tests = group.hidden_tests or hidden
        store_calibrations(run, groups, execute=False, inputs=inputs)
        AuditRun.objects.filter(pk=run.pk).update(calibrated_at=timezone.now())
        stored.delete()
    return run


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a calibration part names {module}.{name}")


def _loads(data: bytes) -> list[tuple[str, str, dict[str, Any], int, bool]]:
    return _PlainUnpickler(io.BytesIO(data)).load()  # type: ignore[no-any-return]
