"""A NUL read from a broken line must not make the upload's error report unstorable: PostgreSQL's
jsonb cannot hold U+0000, and the report is where the user learns what was wrong."""

import orjson
import pytest

from tests.builders.v1 import simple_trace
from traces.models import Project, Trace, Upload
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def test_a_raw_nul_in_a_broken_lines_trace_id_is_reported_not_a_crash() -> None:
    lines = [orjson.dumps(e) for e in simple_trace("t0")] + [
        orjson.dumps(e) for e in simple_trace("t1")
    ]
    lines[1] = lines[1].replace(b'"t0"', b'"t\x000"')  # a raw NUL: the line is not JSON
    project = Project.objects.create(name="nul")
    upload, _ = upload_create(
        project=project,
        fileobj=b"\n".join(lines) + b"\n",
        filename="f.jsonl",
        fmt="v1",
        source=Upload.Source.CLI,
        enqueue=False,
    )
    result = upload_process(upload_id=upload.pk)
    assert result is not None and result.status == "done"
    assert [e["line"] for e in result.errors] == [2]
    assert "\x00" not in orjson.dumps(result.errors).decode()
    # The undamaged trace is kept whole.
    assert Trace.objects.get(project=project, external_id="t1").event_count == 7
