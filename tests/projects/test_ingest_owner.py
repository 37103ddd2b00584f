"""A project the CLI's ingest creates has an owner, so that someone sees it in the browser:
--owner, else the first superuser; with neither, the command says how to add one."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.builders.v1 import jsonl, simple_trace
from traces.models import Membership, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def trace_file(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "one.jsonl"
    path.write_bytes(jsonl(simple_trace("t-1")))
    return path


def ingest(path, *args: str) -> str:  # type: ignore[no-untyped-def]
    err = io.StringIO()
    call_command("ingest", str(path), "--inline", *args, stderr=err, stdout=io.StringIO())
    return err.getvalue()


def owners(name: str) -> list[str]:
    return list(
        Membership.objects.filter(project__name=name, role="owner").values_list(
            "user__username", flat=True
        )
    )


def test_the_named_owner_owns_the_new_project_and_sees_it(trace_file, alice, client):
    said = ingest(trace_file, "--project", "cli-made", "--owner", "alice")
    assert "created project 'cli-made' (owner alice)" in said
    assert owners("cli-made") == ["alice"]
    client.force_login(alice)
    assert "cli-made" in client.get("/", follow=True).content.decode()


def test_without_owner_the_first_superuser_owns_it(trace_file, django_user_model, alice):
    root = django_user_model.objects.create_superuser("root", password="root-pw")
    django_user_model.objects.create_superuser("later", password="later-pw")
    ingest(trace_file, "--project", "cli-made")
    assert owners("cli-made") == [root.username]
    assert Project.objects.get(name="cli-made").created_by == root


def test_without_any_superuser_it_says_how_to_add_one_then_owner_fixes_it(trace_file, alice):
    said = ingest(trace_file, "--project", "cli-made")
    assert "has no members, so no one sees it in the browser" in said and "--owner" in said
    assert Project.objects.get(name="cli-made").traces.count() == 1
    said = ingest(trace_file, "--project", "cli-made", "--owner", "alice")
    assert owners("cli-made") == ["alice"] and "no members" in said.split("alice owns it")[0]


def test_an_unknown_owner_is_refused_before_anything_is_made(trace_file):
    with pytest.raises(CommandError, match="--owner 'nobody': no such user"):
        ingest(trace_file, "--project", "cli-made", "--owner", "nobody")
    assert not Project.objects.filter(name="cli-made").exists()
