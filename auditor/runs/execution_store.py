"""Code candidates' sandbox outcomes kept per project across runs (`ExecutionResult`), for
`policies.sandbox.code_tests.execute_hidden_tests`: without them, re-auditing a project that
executes its candidates would run every one of them again, which is most of each run's start. A
program's key covers its text, the sandbox's limits and code and the interpreter, so a changed
limit or launcher runs it anew; a run stopped by the wall clock is never kept (it depends on the
machine's load). TA_SANDBOX_REUSE=0 runs every program every time."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from django.conf import settings as django_settings

from auditor.runs.models import ExecutionResult

#: Keys per query (a project of 10⁵ loops has several times as many programs).
_PART = 5000


class ProjectResults:
    """`policies.sandbox.code_tests.ResultStore` over one project's `ExecutionResult` rows."""

    def __init__(self, project_id: int) -> None:
        self.project_id = project_id

    def get_many(self, keys: Collection[str]) -> dict[str, tuple[bool, str]]:
        wanted = list(keys)
        out: dict[str, tuple[bool, str]] = {}
        for start in range(0, len(wanted), _PART):
            rows = ExecutionResult.objects.filter(
                project_id=self.project_id, key__in=wanted[start : start + _PART]
            ).values_list("key", "passed", "detail")
            out.update((key, (passed, detail)) for key, passed, detail in rows)
        return out

    def put_many(self, outcomes: Mapping[str, tuple[bool, str]]) -> None:
        ExecutionResult.objects.bulk_create(
            [
                ExecutionResult(project_id=self.project_id, key=k, passed=p, detail=d)
                for k, (p, d) in outcomes.items()
            ],
            ignore_conflicts=True,  # a run beside this one stored the same program first
            batch_size=1000,
        )


def project_results(project_id: int) -> ProjectResults | None:
    """The project's store, or None where the setting turns reuse off."""
    return ProjectResults(project_id) if django_settings.TA_SANDBOX_REUSE else None
