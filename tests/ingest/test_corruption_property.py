"""Property: whatever random damage a valid file suffers, ingestion does not crash, reports every
bad line, and stores every undamaged trace exactly once."""

from __future__ import annotations

import uuid

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.builders.v1 import simple_trace
from tests.conftest import fuzz_examples
from traces.collect import trace_id_from_raw
from traces.models import Project, Trace, Upload
from traces.services import upload_create, upload_process
from traces.validate import validate_event

pytestmark = pytest.mark.django_db

N_TRACES = 4


def _damage(line: bytes, kind: str, pos: int, byte: int) -> bytes:
    pos = pos % (len(line) + 1)
    if kind == "delete":
        return line[:pos] + line[pos + 1 :]
    if kind == "insert":
        return line[:pos] + bytes([byte]) + line[pos:]
    if kind == "truncate":
        return line[:pos]
    if kind == "wrong_type":
        ev = orjson.loads(line)
        ev[sorted(ev)[pos % len(ev)]] = [byte]
        return orjson.dumps(ev)
    raise AssertionError(kind)


damage = st.tuples(
    st.sampled_from(["delete", "insert", "truncate", "wrong_type"]),
    st.integers(0, 10_000),
    st.integers(0, 255),
)


@settings(
    max_examples=fuzz_examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    damages=st.dictionaries(st.integers(0, N_TRACES * 7 - 1), damage, max_size=6),
    swap=st.booleans(),
)
# A newline inserted into line 1 makes line 2 the file's line 3 (found in CI: the oracle had
# numbered lines before the damage).
@example(damages={0: ("insert", 0, 10), 1: ("delete", 0, 0)}, swap=False)
def test_random_damage_never_crashes_and_keeps_good_traces(damages, swap):  # type: ignore[no-untyped-def]
    originals = [orjson.dumps(e) for i in range(N_TRACES) for e in simple_trace(f"t{i}")]
    owner = [orjson.loads(x)["trace_id"] for x in originals]
    lines = list(originals)
    for index, (kind, pos, byte) in damages.items():
        lines[index] = _damage(lines[index], kind, pos, byte)
    expected = list(originals)
    if swap:  # interleave the traces, keeping each one's order: allowed, so it harms nothing
        order = sorted(range(len(lines)), key=lambda k: (k % 7, k // 7))
        lines, owner, expected = ([seq[k] for k in order] for seq in (lines, owner, expected))
    data = b"\n".join(lines) + b"\n"
    # A damage that inserts a newline byte splits its line in two: the reader's line numbers are
    # the file's, so the oracle numbers the parts as the file has them (each part keeps the
    # line's owner and original; a part equal to the original is undamaged).
    split: tuple[list[bytes], list[str], list[bytes]] = ([], [], [])
    for line, own, orig in zip(lines, owner, expected, strict=True):
        for part in line.split(b"\n"):
            split[0].append(part)
            split[1].append(own)
            split[2].append(orig)
    lines, owner, expected = split

    # The oracle, computed line by line without the pipeline.
    bad_lines, tainted = set(), set()
    for n, (line, orig) in enumerate(zip(lines, expected, strict=True), start=1):
        if line != orig:
            tainted.add(owner[n - 1])
        if not line.strip():
            continue  # a line damaged into a blank one is no event at all
        if line != orig:
            try:
                # Invalid UTF-8 is repaired (U+FFFD) with a warning, not rejected.
                ev = orjson.loads(line.decode("utf-8", errors="replace"))
            except orjson.JSONDecodeError:
                ev = None
                tid = trace_id_from_raw(line)
            else:
                tid = ev.get("trace_id") if isinstance(ev, dict) else None
            tainted.add(owner[n - 1])
            if isinstance(tid, str):
                tainted.add(tid)
            if ev is None or validate_event(ev):
                bad_lines.add(n)

    project = Project.objects.create(name=f"p-{uuid.uuid4()}")
    upload, _ = upload_create(
        project=project,
        fileobj=data,
        filename="f.jsonl",
        fmt="v1",
        source=Upload.Source.CLI,
        enqueue=False,
    )
    result = upload_process(upload_id=upload.pk)
    assert result is not None and result.status == "done"

    reported = {e["line"] for e in result.errors}
    assert bad_lines <= reported, f"unreported bad lines: {bad_lines - reported}"
    stored = dict(Trace.objects.filter(project=project).values_list("external_id", "event_count"))
    for i in range(N_TRACES):
        tid = f"t{i}"
        if tid not in tainted:
            assert stored.get(tid) == 7, f"undamaged trace {tid} not stored intact"
    assert Trace.objects.filter(project=project).count() == len(stored)  # each at most once
    assert result.traces_accepted == len(stored)
