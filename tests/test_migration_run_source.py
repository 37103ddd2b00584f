"""The run-source data migration: uploads stored before runs existed get the model, agent and
benchmark their traces share (traces.0008_upload_run_source_backfill); trace ids stay."""

from __future__ import annotations

import pytest

from tests.migrating import migrated_back

BEFORE = [("traces", "0007_upload_run_source")]


def test_existing_uploads_get_the_run_their_traces_share(postgres, transactional_db):  # type: ignore[no-untyped-def]
    with migrated_back(BEFORE) as migration:
        apps = migration.apps
        Project = apps.get_model("traces", "Project")
        Upload = apps.get_model("traces", "Upload")
        Trace = apps.get_model("traces", "Trace")
        project = Project.objects.create(name="old")

        def upload(n: int, rows: list[tuple[str, str, str]]):  # type: ignore[no-untyped-def]
            up = Upload.objects.create(
                project=project,
                file=f"u{n}.jsonl",
                filename=f"u{n}.jsonl",
                size=1,
                content_hash=f"h{n}",
                source="cli",
                status="done",
            )
            for i, (agent, model, bench) in enumerate(rows):
                Trace.objects.create(
                    project=project,
                    upload=up,
                    external_id=f"repair:T/{n}-{i}",
                    agent=agent,
                    model=model,
                    benchmark=bench,
                )
            return up.pk

        one_run = upload(1, [("ldb", "gpt-4", "mbpp"), ("ldb", "gpt-4", "mbpp")])
        mixed = upload(2, [("ldb", "gpt-4", "mbpp"), ("reflexion", "gpt-3.5", "")])
        apps = migration.forward()
        Upload = apps.get_model("traces", "Upload")
        Trace = apps.get_model("traces", "Trace")
        a, b = Upload.objects.get(pk=one_run), Upload.objects.get(pk=mixed)
        assert (a.run_model, a.run_agent, a.run_benchmark) == ("gpt-4", "ldb", "mbpp")
        # Traces that disagree name no run; a value only some traces have is still the one.
        assert (b.run_model, b.run_agent, b.run_benchmark) == ("", "", "mbpp")
        assert set(Trace.objects.values_list("external_id", flat=True)) == {
            "repair:T/1-0",
            "repair:T/1-1",
            "repair:T/2-0",
            "repair:T/2-1",
        }


pytestmark = pytest.mark.django_db(transaction=True)
