"""`manage.py audit --inline` from the command line ends its process without the interpreter's
teardown once the run is done (`auditor.management.commands.audit._end_process`): the report
printed in full, the exit handlers run, exit status 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.builders.v1 import jsonl
from tests.conftest import REPO, _db_url
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db(transaction=True)

# The command as manage.py runs it, in a process that says whether its exit handlers ran and
# whether the interpreter's normal exit began (it first waits for the threads and calls what
# `threading._register_atexit` registered, as concurrent.futures does).
SCRIPT = """
import atexit, os, sys, threading

threading._register_atexit(lambda: sys.stderr.write("teardown\\n"))
atexit.register(lambda: sys.stderr.write("atexit\\n"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
from django.core.management import execute_from_command_line

execute_from_command_line(["manage.py", "audit", *sys.argv[1:]])
"""


def _traces(n: int) -> bytes:
    events = []
    for i in range(n):
        tid = f"t-{i:03d}"
        events += [
            {"trace_id": tid, "type": "trace", "model": "m", "task": {"id": tid}},
            {"trace_id": tid, "type": "message", "role": "user", "content": "Hello?"},
            {"trace_id": tid, "type": "message", "role": "assistant", "content": "Hi."},
        ]
    return jsonl(events)


def _audit(project, postgres, *options: str) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    env = dict(os.environ, DATABASE_URL=_db_url(postgres))
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, "--project", project.name, "--json", *options],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_finished_inline_run_ends_without_the_interpreter_teardown(project, postgres):
    up, _ = upload_create(
        project=project, fileobj=_traces(120), filename="t.jsonl", source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).traces_accepted == 120
    out = _audit(project, postgres, "--inline", "--policies", "twincheck,checklist")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)  # all of it: flushed before the process ended
    assert (body["status"], body["traces"], body["errors"]) == ("done", 120, 0)
    stderr = out.stderr.splitlines()
    assert "atexit" in stderr
    assert "teardown" not in stderr


def test_a_command_error_exits_as_before(project, postgres):
    out = _audit(project, postgres, "--inline", "--policies", "nonesuch")
    assert out.returncode == 1
    stderr = out.stderr.splitlines()
    assert "atexit" in stderr and "teardown" in stderr
