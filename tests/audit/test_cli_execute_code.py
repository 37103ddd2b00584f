"""`manage.py audit --execute-code on|off` switches the project's sandboxed execution of code
candidates as the project page does, under the same refusal rule (staff-created projects)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from auditor.models import AuditRun

pytestmark = pytest.mark.django_db


def audit(project, *extra: str) -> None:  # type: ignore[no-untyped-def]
    call_command("audit", "--project", project.name, "--policies", "commit", "--inline", *extra)


def test_switches_execution_on_and_off_for_a_staff_made_project(project, django_user_model, capsys):  # type: ignore[no-untyped-def]
    project.created_by = django_user_model.objects.create_user("sam", "", "pw", is_staff=True)
    project.save(update_fields=["created_by"])
    audit(project, "--execute-code", "on")
    project.refresh_from_db()
    assert project.execute_code_candidates is True and AuditRun.objects.count() == 1
    audit(project, "--execute-code", "off")
    project.refresh_from_db()
    assert project.execute_code_candidates is False and AuditRun.objects.count() == 2


def test_refused_where_the_project_may_not_execute_code(project):  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError, match="code execution refused"):
        audit(project, "--execute-code", "on")
    project.refresh_from_db()
    assert project.execute_code_candidates is False and AuditRun.objects.count() == 0
    audit(project)  # without the option nothing is switched and the run goes ahead
    project.refresh_from_db()
    assert project.execute_code_candidates is False and AuditRun.objects.count() == 1
