"""Smaller input cases: a BOM is stripped, a zip archive and a JSON
array each get a specific hint, and a gzip bomb of newlines is stopped after a few MiB of output
instead of ~100 MiB (the ratio is judged on the compressed bytes actually consumed)."""

from __future__ import annotations

import io
import time
import zipfile
import zlib

import orjson
import pytest

from tests.builders.v1 import jsonl, simple_trace
from traces.reader import LimitExceeded, Limits, _GzipGuard
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def _ingest(project, data: bytes, name: str, fmt: str = "auto"):  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=data, filename=name, fmt=fmt, source="cli", enqueue=False
    )
    return upload_process(upload_id=up.pk)


@pytest.mark.parametrize("fmt", ["auto", "v1"])
def test_bom_is_stripped_and_its_trace_kept(project, fmt):
    up = _ingest(project, b"\xef\xbb\xbf" + jsonl(simple_trace(f"bom-{fmt}")), "bom.jsonl", fmt)
    assert up.status == "done", (up.failure, up.errors)
    assert up.traces_accepted == 1 and up.error_count == 0, up.errors


@pytest.mark.parametrize("fmt", ["auto", "v1"])
@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_zip_archive_gets_a_hint(project, fmt, method):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        z.writestr("run.jsonl", jsonl(simple_trace("z")))
    up = _ingest(project, buf.getvalue(), "run.zip", fmt)
    assert up.status == "failed" and up.traces_accepted == 0
    assert "zip archive" in up.failure and ".jsonl" in up.failure


def test_json_array_gets_a_hint(project):
    up = _ingest(project, orjson.dumps(simple_trace("arr"), option=orjson.OPT_INDENT_2), "a.json")
    assert up.status == "failed"
    assert "JSON array" in up.failure and "jq -c" in up.failure


def _gzip_of_newlines(mib: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\n" * (1 << 20)
    return b"".join(z.compress(block) for _ in range(mib)) + z.flush()


def test_gzip_bomb_is_stopped_early():
    bomb = _gzip_of_newlines(400)  # ~400 KiB that expand to 400 MiB
    limits = Limits(
        max_upload_bytes=1 << 30,
        max_decompressed_bytes=1 << 40,
        max_gzip_ratio=100.0,
        max_line_bytes=1 << 20,
        max_depth=64,
        max_events_per_trace=10,
    )
    guard = _GzipGuard(io.BytesIO(bomb), limits)
    buf = bytearray(1 << 20)
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="zip bomb"):
        while guard.readinto(buf):
            pass
    # Stopped right past the 8 MiB grace, not after 100x the 400 KiB read (~40 MiB).
    assert guard._out <= _GzipGuard.RATIO_GRACE_BYTES + (2 << 20), guard._out
    assert time.monotonic() - started < 2.0


def test_gzip_bomb_upload_fails_with_the_ratio_message(project):
    up = _ingest(project, _gzip_of_newlines(64), "bomb.jsonl.gz", fmt="v1")
    assert up.status == "failed" and "TA_MAX_GZIP_RATIO" in up.failure
