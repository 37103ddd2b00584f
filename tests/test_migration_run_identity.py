"""Data migration traces.0014: traces stored before `Trace.run_source` get the run part their
id holds; uploads keep a blank request key, and the same file stated the same way is still
recognised as the upload it was."""

from __future__ import annotations

import pytest

from tests.migrating import migrated_back

BEFORE = [("traces", "0013_otlp_span_buffer")]

pytestmark = pytest.mark.django_db(transaction=True)


def test_existing_traces_get_their_run_part_and_old_uploads_stay_no_ops(postgres, transactional_db):  # type: ignore[no-untyped-def]
    with migrated_back(BEFORE) as migration:
        apps = migration.apps
        Project = apps.get_model("traces", "Project")
        Upload = apps.get_model("traces", "Upload")
        Trace = apps.get_model("traces", "Trace")
        project = Project.objects.create(name="old")
        up = Upload.objects.create(
            project=project,
            file="u.jsonl",
            filename="u.jsonl",
            size=1,
            content_hash="h1",
            format_requested="auto",
            source="cli",
            status="done",
            run_agent="reflexion",
            run_model="gpt-4",
        )
        for tid in ("repair:reflexion/gpt-4:T/1", "repair:T/2"):
            Trace.objects.create(project=project, upload=up, external_id=tid)
        migration.forward()
        from traces.models import Project as P
        from traces.models import Trace as T
        from traces.models import Upload as U
        from traces.run_source import RunSource
        from traces.services import upload_same_request

        assert dict(T.objects.values_list("external_id", "run_source")) == {
            "repair:reflexion/gpt-4:T/1": "reflexion/gpt-4",
            "repair:T/2": "",  # an id of before runs: no run part
        }
        old = U.objects.get(pk=up.pk)
        assert old.request_key == "" and old.run_stated == {}
        project = P.objects.get(pk=project.pk)
        # Stated as before (or not at all): the old upload; another run or format: a new one.
        assert upload_same_request(project, "h1", "auto", RunSource()) == old
        assert upload_same_request(project, "h1", "auto", RunSource(model="gpt-4")) == old
        assert upload_same_request(project, "h1", "auto", RunSource(label="b")) is None
        assert upload_same_request(project, "h1", "repair_runs", RunSource()) is None
