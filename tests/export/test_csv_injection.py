"""CSV exports neutralise agent-controlled cells a spreadsheet would run as formulas."""

from __future__ import annotations

import csv
import io

import pytest

from auditor.exports.selectors import export_open
from auditor.exports.services import export_build, export_create
from traces.models import Trace

pytestmark = pytest.mark.django_db

FORMULAS = ['=HYPERLINK("http://evil","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx"]


def test_formula_cells_are_neutralised_in_csv_exports(audited):
    project, _run = audited
    traces = list(Trace.objects.filter(project=project).order_by("pk")[: len(FORMULAS)])
    for t, f in zip(traces, FORMULAS, strict=True):
        t.external_id = f
        t.save(update_fields=["external_id"])
    export = export_create(project=project, format="csv", enqueue=False)
    export = export_build(export_id=export.pk)
    assert export is not None and export.status == "done", export and export.error
    with export_open(export) as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read().decode("utf-8"), newline="")))
    ids = {r["trace_id"] for r in rows}
    for f in FORMULAS:
        assert f not in ids
        assert "'" + f in ids
    for r in rows:
        for cell in r.values():
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
