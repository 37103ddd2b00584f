"""Shared checks for importer tests: run an importer, round-trip through v1 JSONL, invariants."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path

import orjson

from tests.real_data import data_root
from traces.importers import IMPORTERS, ImportReport
from traces.importers.v1 import V1Importer

# The real files: ../shared/data beside the repo, else the samples in tests/data/real.
DATA = data_root()


def run(fmt: str, data: bytes | Path, name: str = "") -> tuple[list, ImportReport]:
    """Convert `data` with importer `fmt`; returns (source events, report)."""
    report = ImportReport(format=fmt)
    if isinstance(data, Path):
        with data.open("rb") as stream:
            events = list(IMPORTERS[fmt].convert(stream, report))
    else:
        stream = io.BytesIO(data)
        if name:
            stream.name = name  # type: ignore[attr-defined]
        events = list(IMPORTERS[fmt].convert(stream, report))
    return events, report


def traces_of(events) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for se in events:
        ev = se.event if hasattr(se, "event") else se
        out[ev["trace_id"]].append(ev)
    return {k: sorted(v, key=lambda e: e["seq"]) for k, v in out.items()}


def check_invariants(events) -> dict[str, list[dict]]:
    """Every trace starts with one header, seq is 0..n-1, call ids are unique and pair up."""
    traces = traces_of(events)
    for tid, evs in traces.items():
        assert evs[0]["type"] == "trace", tid
        assert [e["seq"] for e in evs] == list(range(len(evs))), tid
        assert sum(e["type"] == "trace" for e in evs) == 1, tid
        calls = [e["call_id"] for e in evs if e["type"] == "tool_call"]
        assert len(calls) == len(set(calls)), f"{tid}: duplicate call ids"
        seen: set[str] = set()
        for e in evs:
            assert isinstance(e.get("meta", {}), dict)
            if e["type"] == "tool_call":
                assert isinstance(e["arguments"], dict)
                seen.add(e["call_id"])
            elif e["type"] == "tool_result" and not e.get("meta", {}).get("unpaired"):
                assert e["call_id"] in seen, f"{tid}: result before/without call {e['call_id']}"
    return traces


def roundtrip(events) -> None:
    """Serialise as v1 JSONL with orjson, parse back with the v1 importer: same traces."""
    blob = b"".join(orjson.dumps(se.event) + b"\n" for se in events)
    back, report = [], ImportReport(format="v1")
    back = list(V1Importer().convert(io.BytesIO(blob), report))
    assert report.errors == []
    assert traces_of(back) == traces_of(events)


def validate_all(events) -> None:
    """When the app's validator exists, every imported event must pass it."""
    try:
        from traces.validate import validate_event  # type: ignore[import-not-found]
    except ImportError:
        return
    for se in events:
        assert validate_event(se.event) == [], se.event


def count_jsonl(path: Path) -> int:
    """Records in a JSONL file, counted independently of the importers."""
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def assert_no_internal_errors(report: ImportReport) -> None:
    """Fuzzed input may be rejected, but only with a data error, never an importer bug."""
    from traces.importers._common import INTERNAL_ERROR

    bugs = [e for e in report.errors if INTERNAL_ERROR in e.message]
    assert not bugs, bugs[0]


def check_fuzzed(events, report: ImportReport) -> None:
    """What an importer yields from mutated input is still valid v1, and it never crashed."""
    assert_no_internal_errors(report)
    validate_all(events)
    check_invariants(events)
