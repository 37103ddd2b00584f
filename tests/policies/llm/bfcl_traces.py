"""BFCL multi-turn traces in format v1 built from the installed package's task data, with
tool results from real execution (so tests need no result file and no importer)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from policies.environments.bfcl import BFCLEnvironment
from policies.llm.bfcl_protocol import func_docs
from policies.trace import Trace

Step = list[tuple[str, dict[str, Any]]] | str  # the calls of one step, or a text answer


@cache
def task(task_id: str) -> dict[str, Any]:
    import bfcl_eval

    data = Path(bfcl_eval.__file__).parent / "data"
    category = task_id.rsplit("_", 1)[0].removeprefix("multi_turn_")
    name = f"BFCL_v4_multi_turn_{category}.json"
    entry = next(
        json.loads(line)
        for line in (data / name).read_text().splitlines()
        if line.strip() and json.loads(line)["id"] == task_id
    )
    answers = (data / "possible_answer" / name).read_text().splitlines()
    gt = next(json.loads(a) for a in answers if a.strip() and json.loads(a)["id"] == task_id)
    return {**entry, "ground_truth": gt["ground_truth"]}


def header(task_id: str) -> dict[str, Any]:
    t = task(task_id)
    tools = [
        {"name": d["name"], "description": d.get("description", ""), "parameters": d["parameters"]}
        for c in t["involved_classes"]
        for d in func_docs(c)
    ]
    return {
        "trace_id": f"bfcl:{task_id}",
        "type": "trace",
        "agent": "scripted",
        "model": "actor",
        "task": {
            "id": task_id,
            "benchmark": "bfcl-v4",
            "category": task_id.rsplit("_", 1)[0],
            "question": t["question"],
        },
        "env": {
            "name": "bfcl",
            "config": {
                "initial_config": t.get("initial_config", {}),
                "involved_classes": t["involved_classes"],
                "excluded_function": t.get("excluded_function", []),
                "missed_function": t.get("missed_function", {}),
                "long_context": False,
            },
        },
        "labels": {"ground_truth": t["ground_truth"]},
        "tools": tools,
    }


def build(task_id: str, turns: list[list[Step]]) -> list[dict[str, Any]]:
    """The v1 events of an actor that takes ``turns`` (per turn, its steps)."""
    head = header(task_id)
    tid = head["trace_id"]
    env = BFCLEnvironment()
    env.reset(Trace.from_events([head]))
    events: list[dict[str, Any]] = [head]
    questions = task(task_id)["question"]
    for t, steps in enumerate(turns):
        for m in questions[t]:
            events.append({"trace_id": tid, "type": "message", "turn": t, **m})
        for s, step in enumerate(steps):
            if isinstance(step, str):
                events.append(
                    {
                        "trace_id": tid,
                        "type": "message",
                        "role": "assistant",
                        "content": step,
                        "turn": t,
                    }
                )
                continue
            ids = [f"t{t}.s{s}.c{k}" for k in range(len(step))]
            for cid, (name, args) in zip(ids, step, strict=True):
                events.append(
                    {
                        "trace_id": tid,
                        "type": "tool_call",
                        "call_id": cid,
                        "name": name,
                        "arguments": args,
                        "turn": t,
                    }
                )
            for cid, (name, args) in zip(ids, step, strict=True):
                out = env.execute(name, args, turn=t)
                events.append(
                    {
                        "trace_id": tid,
                        "type": "tool_result",
                        "call_id": cid,
                        "status": out.status,
                        "content": out.content,
                        "turn": t,
                    }
                )
    return events


def actor_success(events: list[dict[str, Any]]) -> bool | None:
    from policies.replay import actor_outcome

    return actor_outcome(Trace.from_events(events), BFCLEnvironment())
