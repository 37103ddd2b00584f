"""The receiver against mutated OTLP/JSON requests (values dropped, retyped or truncated, as
the importers' fuzz tests do to files): every request gets an OTLP answer (200, with partial
success, or 400), never a 500 or a retry code, and whatever it buffered imports with data
errors at worst, never an internal one."""

from __future__ import annotations

import itertools

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from tests.importers.fuzz import mutate
from tests.importers.otlp_samples import openinference_spans, otlp_json
from tests.ingest.test_otlp_receiver import post
from traces.importers._common import INTERNAL_ERROR
from traces.models import Upload
from traces.otlp_receiver.models import OtlpSpan
from traces.otlp_receiver.store import Outcome, trace_finish
from traces.services import upload_process

pytestmark = pytest.mark.django_db

BASE = orjson.loads(otlp_json(openinference_spans(("Paris",))))
NUMBERS = itertools.count(1)


def fresh_doc() -> dict:
    """The base request with a trace id no earlier example used."""
    doc = orjson.loads(orjson.dumps(BASE))
    trace_id = f"{next(NUMBERS):032x}"
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                span["traceId"] = trace_id
    return doc


@settings(
    max_examples=fuzz_examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_mutated_requests_get_an_otlp_answer_and_import_cleanly(
    data, project, upload_token, monkeypatch
):
    monkeypatch.setattr("traces.otlp_receiver.tasks.finish_later", lambda p, ts: True)
    body = mutate(data, fresh_doc(), jsonl=False)
    assume(body)  # Django's test client sends an empty body without its Content-Type
    r = post(upload_token, body, "application/json")
    assert r.status_code in (200, 400), (r.status_code, r.content[:300])
    waiting = set(
        OtlpSpan.objects.filter(project=project, state="buffered").values_list(
            "trace_id", flat=True
        )
    )
    for trace_id in waiting:
        assert trace_finish(project.pk, trace_id, force=True) is Outcome.IMPORTED
    for up in Upload.objects.filter(project=project, status=Upload.Status.PENDING):
        done = upload_process(upload_id=up.pk)
        assert done is not None and done.status in ("done", "failed"), done
        bugs = [e for e in done.errors if INTERNAL_ERROR in e.get("message", "")]
        assert not bugs, bugs[0]
        assert INTERNAL_ERROR not in (done.failure or "")
