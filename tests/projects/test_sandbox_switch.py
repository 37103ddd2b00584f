"""The per-project switch that executes code candidates: off by default, shown on
the project page with its warning, switched only by an owner, bad input a clear 400 — and only
for projects a staff user created, or on every project where the operator allows it
(TA_SANDBOX_ALLOW_ALL_PROJECTS), enforced by the model whatever the path."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import site
from django.urls import reverse

from auditor.runs.calibration import executes_code
from auditor.runs.services import audit_run_create
from traces.admin import ProjectForm
from traces.models import ExecutionRefused, Membership, Project
from traces.projects import project_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("sam", password="sam-pw", is_staff=True)


@pytest.fixture
def staff_made(project, staff):  # type: ignore[no-untyped-def]
    """Alice's project "alpha", created by a staff user."""
    project.created_by = staff
    project.save(update_fields=["created_by"])
    return project


def test_off_by_default_with_a_warning_on_the_project_page(client, alice, project):
    assert project.execute_code_candidates is False
    client.force_login(alice)
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert "this executes uploaded code" in body and 'data-execute="off"' in body


def test_only_an_owner_switches_it(client, alice, django_user_model, staff_made):
    project = staff_made
    bob = django_user_model.objects.create_user("bob", password="bob-pw")
    Membership.objects.create(project=project, user=bob, role=Membership.Role.ANNOTATOR)
    url = reverse("traces:project-sandbox", args=[project.pk])
    client.force_login(bob)
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 403
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert "data-execute=" not in body  # no switch for non-owners
    project.refresh_from_db()
    assert project.execute_code_candidates is False

    client.force_login(alice)
    r = client.post(url, {"execute_code_candidates": "maybe"})
    assert r.status_code == 400 and b"'on' or 'off'" in r.content
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 302
    project.refresh_from_db()
    assert project.execute_code_candidates is True
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert 'data-execute="on"' in body and "Switch off" in body
    assert client.get(url).status_code == 405  # a switch is a POST


def test_outsiders_do_not_see_the_project(client, charlie, project):
    client.force_login(charlie)
    url = reverse("traces:project-sandbox", args=[project.pk])
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 404


def test_a_project_a_non_staff_user_created_cannot_have_execution(client, alice):
    project = project_create(name="mine", user=alice)  # any registered user can do this
    assert project.created_by == alice and project.execution_refusal
    client.force_login(alice)
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert 'id="sandbox-refusal"' in body and "created by a staff user" in body
    assert "Switch on: execute uploaded code" not in body  # no button that would be refused
    r = client.post(
        reverse("traces:project-sandbox", args=[project.pk]), {"execute_code_candidates": "on"}
    )
    assert r.status_code == 403
    assert r.content.startswith(b"Code execution refused: code execution is available only")
    assert b"TA_SANDBOX_ALLOW_ALL_PROJECTS=1" in r.content
    project.refresh_from_db()
    assert project.execute_code_candidates is False
    # the model refuses whatever the path (a shell, a script, the CLI's helpers)
    project.execute_code_candidates = True
    with pytest.raises(ExecutionRefused, match="created by a staff user"):
        project.save()
    with pytest.raises(ExecutionRefused):
        Project.objects.create(name="direct", execute_code_candidates=True)
    # switching off is always possible
    project.execute_code_candidates = False
    project.save()


def test_owners_of_staff_projects_or_any_project_the_operator_allows(
    client, alice, staff, settings
):
    made = project_create(name="by-staff", user=staff)
    Membership.objects.create(project=made, user=alice, role=Membership.Role.OWNER)
    client.force_login(alice)  # an owner who is not staff
    url = reverse("traces:project-sandbox", args=[made.pk])
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 302
    made.refresh_from_db()
    assert made.execute_code_candidates is True

    own = project_create(name="alices", user=alice)
    settings.TA_SANDBOX_ALLOW_ALL_PROJECTS = True
    url = reverse("traces:project-sandbox", args=[own.pk])
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 302
    own.refresh_from_db()
    assert own.execute_code_candidates is True and own.execution_refusal is None


def test_a_refused_project_executes_nothing_even_with_the_switch_on(alice, staff, settings):
    """The run's start checks again: a creator no longer staff, a withdrawn operator setting or
    a switch set past the model (a queryset update) executes nothing."""
    project = project_create(name="p", user=staff)
    project.execute_code_candidates = True
    project.save()
    run = audit_run_create(project=project, environment="none", enqueue=False)
    assert executes_code(run)
    staff.is_staff = False
    staff.save()
    run = audit_run_create(project=Project.objects.get(pk=project.pk), environment="none",
                           enqueue=False)  # fmt: skip
    assert not executes_code(run)
    other = project_create(name="q", user=alice)
    Project.objects.filter(pk=other.pk).update(execute_code_candidates=True)
    run = audit_run_create(project=Project.objects.get(pk=other.pk), environment="none",
                           enqueue=False)  # fmt: skip
    assert not executes_code(run)
    settings.TA_SANDBOX_ALLOW_ALL_PROJECTS = True
    assert executes_code(run)


def test_the_admin_form_names_the_refusal_and_records_the_creator(rf, alice, staff):
    project = project_create(name="p", user=alice)
    form = ProjectForm({"name": "p", "execute_code_candidates": "on"}, instance=project)
    assert not form.is_valid()
    assert "created by a staff user" in form.errors["execute_code_candidates"][0]
    admin = site._registry[Project]
    request = rf.post("/admin/")
    request.user = staff
    made = Project(name="from-admin")
    admin.save_model(request, made, None, change=False)
    assert Project.objects.get(name="from-admin").created_by == staff


def test_runs_that_execute_code_go_to_the_sandbox_queue_when_one_is_set(alice, staff, settings):
    from auditor.runs.queueing import execution_queue

    executing = project_create(name="e", user=staff)
    executing.execute_code_candidates = True
    executing.save()
    plain = project_create(name="plain", user=alice)
    run_e = audit_run_create(project=executing, environment="none", enqueue=False)
    run_p = audit_run_create(project=plain, environment="none", enqueue=False)
    assert execution_queue(run_e.pk) is None  # no queue set: the audit queue, as before
    settings.TA_SANDBOX_QUEUE = "sandbox"
    assert execution_queue(run_e.pk) == "sandbox" and execution_queue(run_p.pk) is None
