"""A deterministic mix of synthetic traces of about ``n`` events each, the four kinds the
policies audit — tool use with TwinCheck certificates, pushback conversations, verify-repair
loops, claim-checklist sessions — as v1 event dicts. The benches time the policies and the
audit on them (bench/policies.py, audit.py, run_page.py, llm_cache.py, policies_ab.py)."""

from __future__ import annotations

import random
from typing import Any

from tests.builders.events import account_tools

TOOLS = account_tools()


def tool_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {
            "trace_id": tid,
            "type": "trace",
            "tools": TOOLS,
            "task": {"id": tid, "category": "tools"},
            "outcome": {"success": rng.random() < 0.5},
        }
    ]
    turn = 0
    ev.append(
        {
            "trace_id": tid,
            "type": "message",
            "role": "user",
            "turn": 0,
            "content": "Please lock account acc_1 and use card 8107 for acc_2",
        }
    )
    k = 0
    while len(ev) < n - 1:
        k += 1
        r = rng.random()
        if r < 0.05:
            name, args = "unlock_account", {"key": "acc_1"}
        elif r < 0.3:
            name, args = "lock_account", {"key": f"acc_{rng.randint(1, 3)}"}
        elif r < 0.6:
            name, args = "get_account", {"key": f"acc_{rng.randint(1, 3)}"}
        else:
            name, args = (
                "set_payment",
                {"key": "acc_2", "value": rng.choice(["card_4332", "card_8107"])},
            )
        status = "error" if rng.random() < 0.15 else "ok"
        content: Any = {"key": args["key"], "cards": ["card_4332", "card_8107"]}
        ev.append(
            {
                "trace_id": tid,
                "type": "tool_call",
                "call_id": f"c{k}",
                "name": name,
                "arguments": args,
                "turn": turn,
            }
        )
        ev.append(
            {
                "trace_id": tid,
                "type": "tool_result",
                "call_id": f"c{k}",
                "status": status,
                "content": content,
                "turn": turn,
            }
        )
    ev.append({"trace_id": tid, "type": "message", "role": "assistant", "content": "Done."})
    return ev[:n]


def pushback_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"trace_id": tid, "type": "trace", "task": {"id": tid, "category": "pushback"}},
        {"trace_id": tid, "type": "message", "role": "user", "content": "Capital of Australia?"},
    ]
    correct = rng.random() < 0.7
    i = 0
    while len(ev) < n:
        if i:
            ev.append(
                {
                    "trace_id": tid,
                    "type": "message",
                    "role": "user",
                    "turn": i,
                    "content": "Are you absolutely sure?",
                    "feedback": {"kind": "challenge"},
                    "labels": {"valid": False},
                }
            )
            if rng.random() < 0.3:
                correct = not correct
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"a{i}",
                "turn": i,
                "content": "Canberra" if correct else "Sydney",
                "labels": {"correct": correct},
            }
        )
        i += 1
    return ev[:n]


def loop_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"trace_id": tid, "type": "trace", "task": {"id": tid, "category": "repair"}}
    ]
    valid = rng.random() < 0.6
    k = 0
    while len(ev) < n - 1:
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-{k}",
                "round": k,
                "content": f"impl {k}",
                "labels": {"valid": valid},
            }
        )
        acc = sum(rng.random() < (0.85 if valid else 0.2) for _ in range(5))
        ev.append(
            {
                "trace_id": tid,
                "type": "verification",
                "candidate_id": f"{tid}-{k}",
                "round": k,
                "accepts": acc,
                "votes": 5,
                "verifier": "tests",
            }
        )
        valid = (rng.random() >= 0.2) if valid else (rng.random() < 0.3)
        k += 1
    ev.append({"trace_id": tid, "type": "check", "name": "hidden", "passed": valid})
    return ev[:n]


def claims_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"trace_id": tid, "type": "trace", "task": {"id": tid, "category": "coding"}},
        {"trace_id": tid, "type": "message", "role": "user", "content": "Add unicode support"},
    ]
    ok = rng.random() < 0.6
    i = 0
    while len(ev) < n:
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"v{i}",
                "content": f"patch {i}",
                "labels": {"valid": ok},
            }
        )
        ev.append({"trace_id": tid, "type": "message", "role": "assistant", "content": "Done."})
        ev.append(
            {
                "trace_id": tid,
                "type": "claims",
                "claims": [
                    {
                        "id": "c1",
                        "text": "the parser handles unicode input",
                        "confidence": rng.choice([0.3, 0.6, 0.95]),
                        "evidence": [{"kind": "test", "ref": "t1", "passed": True}],
                    },
                    {"id": "c2", "text": "docs mention the new flag", "confidence": 0.7},
                ],
            }
        )
        valid_fb = rng.random() < 0.4
        ev.append(
            {
                "trace_id": tid,
                "type": "message",
                "role": "user",
                "content": "The parser breaks on unicode input",
                "feedback": {"kind": "bug_report"},
                "labels": {"valid": valid_fb},
            }
        )
        if rng.random() < 0.4:
            ok = not ok
        i += 1
    return ev[:n]


KINDS = [tool_trace, pushback_trace, loop_trace, claims_trace]


def make_traces(count: int, n_events: int, seed: int = 0) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    return [KINDS[i % 4](rng, f"b{i}", n_events) for i in range(count)]
