#!/usr/bin/env python
"""OTLP ingest through the receiver, beside a file upload of the same spans, in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \
        .venv/bin/python bench/otlp_receiver.py [--traces 500] [--batch 512]

Makes N agent traces of 4 spans each with the OpenTelemetry SDK (OpenInference attributes:
tests/importers/otlp_samples.py), then:
- accept: the SDK's OTLP/HTTP exporter (protobuf) sends them in batches of --batch spans (the
  batch processor's default) to `/v1/traces` of this app served over HTTP in this process;
  spans/s until the last response (decode, token, one INSERT per request);
- finish: the buffered traces imported as the worker does it — the traces whose root span came
  in one request as one upload (`traces_finish`, then `upload_process`), in this process;
- file: the same spans as one OTLP/JSON file, `upload_create` + `upload_process`.
Reports spans/s of each and the ratio (accept + finish) / file, in time. One request warms the
server up first (URLconf, Celery app), as a running server is.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=500)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()

    from bench._site import bench_site

    _user, _p, _c = bench_site("otlp-bench", "otlp-bench-seed")
    from django.core.wsgi import get_wsgi_application
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from tests.importers.otlp_samples import openinference_spans, otlp_json
    from traces.models import Project, ProjectToken, Upload
    from traces.otlp_receiver.models import OtlpSpan
    from traces.otlp_receiver.store import traces_finish
    from traces.services import upload_create, upload_process

    stamp = time.strftime("%H%M%S")
    receiver_project = Project.objects.create(name=f"otlp-bench-receiver-{stamp}")
    file_project = Project.objects.create(name=f"otlp-bench-file-{stamp}")
    _t, token = ProjectToken.issue(project=receiver_project, name="bench")

    spans = openinference_spans(tuple(f"City{i}" for i in range(args.traces)))
    payload = otlp_json(spans)
    print(f"{len(spans)} spans in {args.traces} traces; OTLP/JSON file {len(payload) / 1e6:.1f} MB")

    server = make_server("127.0.0.1", 0, get_wsgi_application(), _Server, _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    exporter = OTLPSpanExporter(endpoint=url, headers={"authorization": f"Bearer {token}"})

    # A running server is warm: the first request loads the URLconf and the Celery app.
    _w, warm_token = ProjectToken.issue(project=_p, name=f"warm-{stamp}")
    warm = OTLPSpanExporter(endpoint=url, headers={"authorization": f"Bearer {warm_token}"})
    assert warm.export(openinference_spans((f"warm{stamp}",))) is SpanExportResult.SUCCESS

    t0 = time.perf_counter()
    for i in range(0, len(spans), args.batch):
        assert exporter.export(spans[i : i + args.batch]) is SpanExportResult.SUCCESS
    accept = time.perf_counter() - t0
    assert OtlpSpan.objects.filter(project=receiver_project).count() == len(spans)

    t0 = time.perf_counter()
    trace_ids = (
        OtlpSpan.objects.filter(project=receiver_project)
        .values_list("trace_id", flat=True)
        .distinct()
    )
    ids = list(trace_ids)
    per_request = max(args.batch // 4, 1)  # the traces whose root came in one request
    for i in range(0, len(ids), per_request):
        traces_finish(receiver_project.pk, ids[i : i + per_request], force=True)
    for up in Upload.objects.filter(project=receiver_project).order_by("pk"):
        upload_process(upload_id=up.pk)
    finish = time.perf_counter() - t0

    t0 = time.perf_counter()
    up, _ = upload_create(
        project=file_project, fileobj=payload, filename="spans.json", source="cli", enqueue=False
    )
    done = upload_process(upload_id=up.pk)
    file_time = time.perf_counter() - t0
    assert done is not None and done.traces_accepted == args.traces
    server.shutdown()
    exporter.shutdown()

    n = len(spans)
    print(f"receiver accept: {n / accept:9.0f} spans/s ({accept:.2f} s, requests of {args.batch})")
    print(f"receiver finish: {n / finish:9.0f} spans/s ({finish:.2f} s, an upload per request)")
    print(f"receiver total : {n / (accept + finish):9.0f} spans/s")
    print(f"file upload    : {n / file_time:9.0f} spans/s ({file_time:.2f} s)")
    print(f"ratio (receiver total / file, time): {(accept + finish) / file_time:.2f}x")
    print(f"ratio (accept only / file, time):    {accept / file_time:.2f}x")


if __name__ == "__main__":
    main()
