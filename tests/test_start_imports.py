"""What a process does at start: `django.setup()` and the `audit` command's module
import only what every run of them needs (the rest loads where it is used), and the garbage
collector keeps out of the way of the objects start makes."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after ``code`` ran."""
    script = f"import sys\n{code}\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "auditor.settings"}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return eval(out.strip().splitlines()[-1])  # noqa: S307 — a list of names we printed


def test_django_start_loads_no_export_reimport():
    """The export re-import (a receiver of finished uploads) and the payload reader it uses
    load with the first finished upload, not in every process."""
    loaded = _loaded_after(
        "import django\ndjango.setup()", ("auditor.exports.reimport", "traces.reader")
    )
    assert loaded == []


def test_django_start_loads_no_audit_machinery():
    """The receivers connected at start (a finished run opens the human gate's queue) import
    what they call when it is called: the web server and most commands never audit, and the
    run machinery, the policies and numpy were 40-60 ms of every process's start."""
    loaded = _loaded_after(
        "import django\ndjango.setup()",
        ("auditor.runs.work", "auditor.annotation.human_gate", "policies", "numpy"),
    )
    assert loaded == []


def test_the_audit_command_loads_no_progress_bar_until_it_shows_one():
    """tqdm (and the multiprocessing lock its first bar makes) only for a bar on a terminal or
    --progress: `manage.py audit --inline --json` never draws one, nor an inline ingest. The
    lock's module, not `multiprocessing`: Django's SQLite backend imports that at start."""
    loaded = _loaded_after(
        "import django\ndjango.setup()\nimport auditor.management.commands.audit\n"
        "import traces.management.commands.ingest",
        ("tqdm", "multiprocessing.synchronize"),
    )
    assert loaded == []


def test_the_upload_receiver_still_reaches_the_reimport():
    """Connected at start without importing it: the receiver `upload_done` calls imports it."""
    from auditor.apps import _reimport_on_upload_done
    from traces.signals import upload_done

    assert any(r[1]() is _reimport_on_upload_done for r in upload_done.receivers)


def test_tune_gc_collects_only_the_young_generations(settings):
    """A full collection after Django start traversed ~70,000 objects to free a few dozen:
    13-27 ms of CPU, 2-4 % of a 200-trace inline audit."""
    from auditor.limits import tune_gc

    generations: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            generations.append(info["generation"])

    before = gc.get_threshold()
    settings.TA_GC_THRESHOLDS = ["20000", "50", "100"]
    gc.callbacks.append(seen)
    try:
        tune_gc()
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
        gc.set_threshold(*before)
    assert generations and max(generations) <= 1


def test_manage_py_starts_without_collections_and_freezes_what_start_made():
    """The collector is off while Django starts in a manage.py process (auditor/gcstart.py),
    then back on, with what start made frozen out of its view."""
    probe = "import gc; print(gc.isenabled(), gc.get_freeze_count() > 50_000)"
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", probe],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "auditor.settings"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[-1] == "True True"


def test_a_worker_pool_process_loads_the_calibration_before_its_first_run():
    """A pool process loads at its start what a run's start would load on first use (the VRR
    calibration and numpy, ~80 ms inside the first run in a fresh worker), before its start
    is frozen; a plain Django start still does not (above)."""
    loaded = _loaded_after(
        "import django\ndjango.setup()\nfrom auditor.tasks import _prepare_process\n"
        "_prepare_process()",
        ("policies.vrr.calibration", "numpy"),
    )
    assert loaded == ["numpy", "policies.vrr.calibration"]
