"""A run's model budget is one row shared by every worker process: concurrent reservations
from several connections never take more calls than the limit."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from auditor.llm.store import RunBudget
from auditor.models import AuditRun, RunModelUsage

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_reservations_stop_exactly_at_the_limit(postgres, project):  # type: ignore[no-untyped-def]
    # PostgreSQL: several worker processes writing one row at once; SQLite locks the table
    # for a writer and answers the others "database table is locked".
    run = AuditRun.objects.create(project=project, policies=["twincheck"], judge="llm")
    RunBudget(run.pk, 25, None)  # creates the usage row
    taken: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        # Its own connection, as another worker process would have.
        budget = RunBudget(run.pk, 25, None)
        got = [budget.reserve() for _ in range(20)]
        with lock:
            taken.extend(got)
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert taken.count(True) == 25 and len(taken) == 80
    usage = RunModelUsage.objects.get(run=run)
    assert usage.calls == 25 and usage.budget_reached
    state = RunBudget(run.pk, 25, None).state()
    assert state.reached and state.message().startswith("Model budget reached (25 of 25")


def test_a_token_limit_stops_calls_once_spent(project):
    run = AuditRun.objects.create(project=project, policies=["twincheck"], judge="llm")
    budget = RunBudget(run.pk, None, 100)
    assert budget.reserve()
    budget.charge(120)
    assert not budget.reserve() and budget.reached
    budget.refund()  # a reserved call that never reached the model gives its call back
    assert RunModelUsage.objects.get(run=run).calls == 0


def test_without_limits_counts_are_added_per_batch(project):
    run = AuditRun.objects.create(project=project, policies=["twincheck"], judge="llm")
    budget = RunBudget(run.pk, None, None)
    for _ in range(3):
        assert budget.reserve()
        budget.charge(10)
    assert RunModelUsage.objects.get(run=run).calls == 0  # not yet: no query per call
    RunModelUsage.objects.filter(run=run).update(**budget.take())
    usage = RunModelUsage.objects.get(run=run)
    assert (usage.calls, usage.tokens, usage.budget_reached) == (3, 30, False)
    assert budget.take() == {}
