"""Building v1 files for tests."""

from __future__ import annotations

import gzip

import orjson


def header(tid: str, **extra) -> dict:  # type: ignore[no-untyped-def]
    h = {
        "trace_id": tid,
        "type": "trace",
        "agent": "bot",
        "model": "m-1",
        "task": {"id": f"task-{tid}", "benchmark": "bench", "category": "cat"},
        "outcome": {"success": True, "reward": 1.0},
    }
    h.update(extra)
    return h


def simple_trace(tid: str, n_calls: int = 2) -> list[dict]:
    events = [header(tid), {"trace_id": tid, "type": "message", "role": "user", "content": "do it"}]
    for i in range(n_calls):
        events.append(
            {
                "trace_id": tid,
                "type": "tool_call",
                "call_id": f"c{i}",
                "name": "ls",
                "arguments": {"path": f"/d{i}"},
            }
        )
        events.append(
            {
                "trace_id": tid,
                "type": "tool_result",
                "call_id": f"c{i}",
                "status": "ok",
                "content": "a b c",
            }
        )
    events.append({"trace_id": tid, "type": "message", "role": "assistant", "content": "done"})
    return events


def jsonl(events: list) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


def lock_cases(n: int) -> bytes:
    """n TwinCheck Fig. 4 traces (an unasked unlock after a lock) as JSONL, each with its own id
    and a user message naming its case, so a scripted model server can answer per trace."""
    from tests.builders.events import lock_unlock_trace

    events: list[dict] = []
    for i in range(n):
        for e in lock_unlock_trace(f"Please lock account acc_1 (case {i})"):
            events.append({**e, "trace_id": f"lock-{i}"})
    return jsonl(events)
