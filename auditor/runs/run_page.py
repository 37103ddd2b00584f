"""The run page's reads, at the cost of a page whatever the run's size (SPEC §9: p95 < 300 ms at
100k results): the run with its summary less the annotation queues (cached), and each policy's
transition matrix, from the cells the summary keeps.

A large run's summary is nearly all annotation queues (one entry per unknown result) that the
page never shows; and counting the matrix over all the run's results would exceed the page's
budget (bench/run_page.py measures both)."""

from __future__ import annotations

import orjson
from django.core.cache import cache
from django.db import connection
from django.db.models.expressions import RawSQL

from auditor.runs.models import AuditRun
from auditor.runs.selectors import run_list
from policies.data_quality import data_quality_section
from policies.stats.report import MATRIX_KEY


def run_page_get(*, user, run_id: int) -> AuditRun | None:  # type: ignore[no-untyped-def]
    """The run, scoped to the user, with `summary` less every policy's annotation queue (the
    page shows no queue; the annotation pages read their own).

    Cut down in the database — which still reads all of it — and cached under
    the row's version (xmin and cmin: the transaction and the command in it that wrote this
    version of the row, so every UPDATE of the run gives a new one — and every change to its
    results ends by writing its summary), so a run unchanged since is read once. Other
    databases (SQLite, for development) read the whole summary."""
    if connection.vendor != "postgresql":
        return run_list(user=user).filter(pk=run_id).first()
    run = (
        run_list(user=user)
        .defer("summary")
        .annotate(
            row_version=RawSQL(
                "auditor_auditrun.xmin::text || '.' || auditor_auditrun.cmin::text", ()
            )
        )
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        return None
    key = f"ta:run-page-summary:{run.pk}:{run.row_version}"  # type: ignore[attr-defined]
    summary = cache.get(key)
    if summary is None:
        with connection.cursor() as cur:
            cur.execute(
                """SELECT (SELECT jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) = 'object'
                                                  THEN value - 'annotation_queue' ELSE value END)
                           FROM jsonb_each(summary))::text
                   FROM auditor_auditrun WHERE id = %s""",
                [run.pk],
            )
            row = cur.fetchone()
        summary = orjson.loads(row[0]) if row and row[0] else {}
        cache.set(key, summary, 24 * 3600)
    run.summary = summary
    return run


def data_quality(run: AuditRun) -> dict | None:
    """The run's data-quality section (`policies.data_quality`), from the counts its summary
    keeps per policy: what import flagged and how the flagged traces' decisions came out."""
    return data_quality_section(run.summary, list(run.policies))


def matrix_counts(run: AuditRun) -> dict[str, list[list]]:
    """Per policy: [actor_success, guarded_success, n] of its applicable results, as the run's
    summary keeps them (`policies.stats.report.PolicyFold`)."""
    summary = run.summary or {}
    return {p: list((summary.get(p) or {}).get(MATRIX_KEY) or []) for p in run.policies}


def transition_matrix(run: AuditRun) -> dict[str, list[list[dict]]]:
    """Per policy, a 3×3 grid of counts: rows = actor success (yes, no, unknown), columns =
    guarded success (yes, no, unknown) — the 2×2 of SPEC §5.5 plus the unknowns."""
    counts = {(policy, a, g): n for policy, rows in matrix_counts(run).items() for a, g, n in rows}
    keys = [(True, "success"), (False, "failure"), (None, "unknown")]
    out = {}
    for policy in run.policies:
        grid = []
        for a, a_name in keys:
            row = []
            for g, g_name in keys:
                kind = (
                    "rescue"
                    if (a, g) == (False, True)
                    else "harm"
                    if (a, g) == (True, False)
                    else "same"
                    if a is not None and a == g
                    else "unknown"
                )
                row.append(
                    {
                        "actor": a_name,
                        "guarded": g_name,
                        "n": counts.get((policy, a, g), 0),
                        "kind": kind,
                    }
                )
            grid.append(row)
        out[policy] = grid
    return out
