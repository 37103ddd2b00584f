"""Data written in the forms audit runs no longer read, migrated forward: records naming their
settings get them back (auditor.0019), guarded trajectories stored whole become suffixes that
rebuild the same trajectory (auditor.0020)."""

from __future__ import annotations

import pytest

from tests.migrating import migrated_back

BEFORE = [("auditor", "0018_run_stalls"), ("traces", "0012_project_created_by")]

pytestmark = pytest.mark.django_db(transaction=True)


def test_old_records_and_trajectories_migrate_to_the_one_form(postgres, transactional_db):  # type: ignore[no-untyped-def]
    with migrated_back(BEFORE) as migration:
        apps = migration.apps
        Project = apps.get_model("traces", "Project")
        Upload = apps.get_model("traces", "Upload")
        Trace = apps.get_model("traces", "Trace")
        Event = apps.get_model("traces", "Event")
        AuditRun = apps.get_model("auditor", "AuditRun")
        AuditResult = apps.get_model("auditor", "AuditResult")
        project = Project.objects.create(name="old")
        upload = Upload.objects.create(
            project=project,
            file="u.jsonl",
            filename="u.jsonl",
            size=1,
            content_hash="h",
            source="cli",
            status="done",
        )
        trace = Trace.objects.create(project=project, upload=upload, external_id="t")
        events = [{"type": "message", "role": "user", "content": f"e{i}"} for i in range(4)]
        for i, payload in enumerate(events):
            Event.objects.create(trace=trace, seq=i, type="message", line=i, payload=payload)
        settings = {"theta": 0.5, "schedule": "always_on"}
        run = AuditRun.objects.create(
            project=project,
            policies=["checklist", "commit", "vrr"],
            record_settings={"k1": settings},
        )
        twin = {"type": "tool_call", "name": "fixed"}
        whole = [*events[:2], twin, events[3]]
        common = {
            "run": run,
            "trace": trace,
            "applied": True,
            "transition": "same",
            "continuation": "exact",
        }
        named = AuditResult.objects.create(
            **common,
            policy="checklist",
            record={"applied": True, "settings_ref": "k1"},
            guarded_trajectory=whole,
            guarded_from=None,
        )
        missing = AuditResult.objects.create(
            **common,
            policy="commit",
            record={"applied": True, "settings_ref": "gone"},
        )
        inline = AuditResult.objects.create(
            **common,
            policy="vrr",
            record={"applied": True, "settings": {"k": 3}},
            guarded_trajectory=[twin],
            guarded_from=2,
        )
        migration.forward()
        from auditor.models import AuditResult as Result

        got = {r.pk: r for r in Result.objects.all()}
        assert got[named.pk].record == {"applied": True, "settings": settings}
        assert got[missing.pk].record == {"applied": True, "settings_ref": "gone"}
        assert got[inline.pk].record == {"applied": True, "settings": {"k": 3}}
        # the whole trajectory is now its suffix from the divergence, and rebuilds the same
        assert (got[named.pk].guarded_from, got[named.pk].guarded_trajectory) == (2, whole[2:])
        assert got[named.pk].full_trajectory() == whole
        assert got[inline.pk].full_trajectory() == [*events[:2], twin]
        assert got[missing.pk].full_trajectory() is None
