#!/usr/bin/env python
"""OTLP ingest through the receiver, beside a file upload of the same spans, in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \
        .venv/bin/python bench/otlp_receiver.py [--traces 2000] [--batch 512] [--repeat 3]

Makes N agent traces of 4 spans each with the OpenTelemetry SDK (OpenInference attributes:
tests/importers/otlp_samples.py), encodes them as the SDK's OTLP/HTTP exporter does (its
encoder, protobuf, requests of --batch spans: the batch processor's default), then per round:
- accept: the requests POSTed, as the exporter's HTTP session sends them, to `/v1/traces` of
  this app served over HTTP in this process; until the last response (decode, token, insert).
  The client's encoding is done before the clock starts, as the file is written before the
  file upload's: it is the agent's work, not the receiver's (printed once, for scale);
- finish: the buffered traces imported as the workers do it, behind by the whole run (as they
  are whenever the receiver accepts faster than they import): each request's completion task
  (`otlp_finish_traces`, given the traces whose root span the request carried), in order, once
  the grace time has passed, then `upload_process` of each upload, in this process;
- file: the same spans as one OTLP/JSON file, `upload_create` + `upload_process`.
Each round uses fresh projects; the file upload and the receiver alternate which goes first.
Reports spans/s of each, per round and the median, and the ratio (accept + finish) / file in
time. One request warms the server up first (URLconf, Celery app), as a running server is.
The script only calls what both the receiver's earlier and present code have, so it measures
either tree: `python OTHER_TREE/bench/otlp_receiver.py` with this file copied there.
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def _round(
    args, spans, bodies, request_roots, payload, url, n: int, file_first: bool
) -> tuple[float, ...]:  # type: ignore[no-untyped-def]
    import requests
    from django.conf import settings

    from traces.models import Project, ProjectToken, Upload
    from traces.otlp_receiver.models import OtlpSpan
    from traces.otlp_receiver.tasks import otlp_finish_traces
    from traces.services import upload_create, upload_process

    stamp = f"{time.strftime('%H%M%S')}-{n}"
    receiver_project = Project.objects.create(name=f"otlp-bench-receiver-{stamp}")
    file_project = Project.objects.create(name=f"otlp-bench-file-{stamp}")
    _t, token = ProjectToken.issue(project=receiver_project, name="bench")
    session = requests.Session()
    headers = {"Content-Type": "application/x-protobuf", "authorization": f"Bearer {token}"}

    def file_upload() -> float:
        t0 = time.perf_counter()
        up, _ = upload_create(
            project=file_project,
            fileobj=payload,
            filename="spans.json",
            source="cli",
            enqueue=False,
        )
        done = upload_process(upload_id=up.pk)
        took = time.perf_counter() - t0
        assert done is not None and done.traces_accepted == args.traces
        return took

    file_time = file_upload() if file_first else 0.0
    t0 = time.perf_counter()
    for body in bodies:
        response = session.post(url, data=body, headers=headers, timeout=60)
        assert response.status_code == 200, response.content
    accept = time.perf_counter() - t0
    assert OtlpSpan.objects.filter(project=receiver_project).count() == len(spans)

    t0 = time.perf_counter()
    # Each request's completion task, in the order the requests came, once the grace time has
    # passed: the worker behind by the whole run, as it is whenever the receiver accepts
    # faster than the workers import.
    settings.TA_OTLP_GRACE_SECONDS = 0
    for roots in request_roots:
        otlp_finish_traces(receiver_project.pk, roots)
    complete = time.perf_counter() - t0
    uploads = list(Upload.objects.filter(project=receiver_project).order_by("pk"))
    for up in uploads:
        done = upload_process(upload_id=up.pk)
        assert done is not None and done.status == "done"
    finish = time.perf_counter() - t0
    assert not OtlpSpan.objects.filter(project=receiver_project, state="buffered").exists()
    if not file_first:
        file_time = file_upload()
    return accept, finish, file_time, complete, len(uploads)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from bench._site import bench_site

    _user, _p, _c = bench_site("otlp-bench", "otlp-bench-seed")
    from django.core.wsgi import get_wsgi_application
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from tests.importers.otlp_samples import openinference_spans, otlp_json
    from traces.models import ProjectToken

    spans = openinference_spans(tuple(f"City{i}" for i in range(args.traces)))
    payload = otlp_json(spans)
    t0 = time.perf_counter()
    bodies = [
        encode_spans(spans[i : i + args.batch]).SerializePartialToString()
        for i in range(0, len(spans), args.batch)
    ]
    encode = time.perf_counter() - t0
    # The trace ids whose root span each request carries: what its completion task is given.
    request_roots = [
        [f"{s.context.trace_id:032x}" for s in spans[i : i + args.batch] if s.parent is None]
        for i in range(0, len(spans), args.batch)
    ]
    n = len(spans)
    print(
        f"{n} spans in {args.traces} traces; OTLP/JSON file {len(payload) / 1e6:.1f} MB;"
        f" {len(bodies)} protobuf requests, {sum(map(len, bodies)) / 1e6:.1f} MB"
        f" (client encoding {n / encode:.0f} spans/s, not counted)"
    )

    server = make_server("127.0.0.1", 0, get_wsgi_application(), _Server, _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"

    # A running server is warm: the first request loads the URLconf and the Celery app.
    stamp = time.strftime("%H%M%S")
    _w, warm_token = ProjectToken.issue(project=_p, name=f"warm-{stamp}")
    warm = OTLPSpanExporter(endpoint=url, headers={"authorization": f"Bearer {warm_token}"})
    assert warm.export(openinference_spans((f"warm{stamp}",))) is SpanExportResult.SUCCESS

    rounds = []
    for r in range(args.repeat):
        accept, finish, file_time, complete, uploads = _round(
            args, spans, bodies, request_roots, payload, url, r, r % 2 == 1
        )
        rounds.append((accept, finish, file_time))
        print(
            f"round {r + 1}: accept {n / accept:5.0f}  finish {n / finish:5.0f}"
            f" (completion {complete:.2f} s of {finish:.2f} s, {uploads} uploads)"
            f"  total {n / (accept + finish):5.0f}  file {n / file_time:5.0f} spans/s;"
            f"  ratio {(accept + finish) / file_time:.2f}x"
        )
    server.shutdown()
    warm.shutdown()

    accept, finish, file_time = (statistics.median(x) for x in zip(*rounds, strict=True))
    ratio = statistics.median((a + f) / t for a, f, t in rounds)
    print(f"median of {args.repeat} rounds:")
    print(f"receiver accept: {n / accept:9.0f} spans/s ({accept:.2f} s, requests of {args.batch})")
    print(f"receiver finish: {n / finish:9.0f} spans/s ({finish:.2f} s)")
    print(f"receiver total : {n / (accept + finish):9.0f} spans/s")
    print(f"file upload    : {n / file_time:9.0f} spans/s ({file_time:.2f} s)")
    print(f"ratio (receiver total / file, time): {ratio:.2f}x (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
