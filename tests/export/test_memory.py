"""Bounded memory (SPEC §9): the peak of Python allocations while building a
snapshot does not grow with the number of rows — it is set by the chunk size. Measured with
tracemalloc (N vs 4N decisions, chunk size 50), not timed."""

from __future__ import annotations

import tracemalloc

import pytest

from auditor.exports.services import export_build, export_create
from tests.export.conftest import synthetic_decisions
from traces.models import Project

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

CHUNK = 50
SMALL, BIG = 300, 1200  # traces; × 2 policies = 600 and 2,400 decisions (12 and 48 chunks)


def peak_of_build(project: Project, fmt: str) -> tuple[int, int]:
    export = export_create(project=project, format=fmt, enqueue=False)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        built = export_build(export_id=export.pk, chunk_size=CHUNK)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert built is not None and built.status == "done", built and built.error
    return peak, built.rows


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_peak_memory_does_not_grow_with_the_row_count(fmt, capsys):
    small = Project.objects.create(name="small")
    big = Project.objects.create(name="big")
    synthetic_decisions(small, SMALL)
    synthetic_decisions(big, BIG)
    peak_of_build(small, fmt)  # warm-up: imports, compiled queries, pyarrow's first use
    peak_small, rows_small = peak_of_build(small, fmt)
    peak_big, rows_big = peak_of_build(big, fmt)
    assert rows_big == 4 * rows_small
    with capsys.disabled():
        print(
            f"\n[export memory] {fmt}: peak {peak_small / 1024:.0f} KiB for {rows_small} rows, "
            f"{peak_big / 1024:.0f} KiB for {rows_big} rows (chunk {CHUNK})"
        )
    # Four times the rows, (almost) the same peak: 15% + 128 KiB of slack for allocator noise.
    assert peak_big <= peak_small * 1.15 + 128 * 1024, (peak_small, peak_big)
