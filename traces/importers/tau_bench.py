"""τ-bench and τ²-bench result files (JSON documents, read whole into memory).

- τ-bench (`historical_trajectories/*.json`): a list of records `{task_id, trial, reward, info:
  {task: {user_id, actions, instruction, outputs}, reward_info, source, user_cost}, traj: [...]}`
  where `traj` is OpenAI chat messages.
- τ²-bench (`data/simulations/*.json`): `{timestamp, info, tasks[], simulations[]}`; each
  simulation `{id, task_id, trial, reward_info, messages[], ...}` joins `tasks[]` by id.

One trace per record/simulation, id `tau-bench:<domain>:task<id>:trial<n>` (τ²: `tau2-bench:…`).
Outcome: `reward` as recorded, `success = reward >= 1 - 1e-6`, the full reward breakdown in
`outcome.details`; each reward component also becomes a `check` event at the end of the trace.
Record numbers in errors are 1-based positions in the record list (line 0: the whole document).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from ._chat import convert_messages
from ._common import (
    Trace,
    read_json_document,
    record_events,
    require,
    short,
    stream_name,
    success_from_reward,
)
from ._timing import amount, put_timing
from .base import ImportReport, SourceEvent

TAU_RECORD_KEYS = frozenset({"task_id", "trial", "reward", "info", "traj"})
TAU_INFO_KEYS = frozenset({"task", "reward_info"})
SIM_KEYS = frozenset(
    {"task_id", "trial", "reward_info", "messages"}
    | {"start_time", "end_time", "duration", "agent_cost", "user_cost"}
)
DOMAINS = ("airline", "retail", "telecom", "mock")


class TauBenchImporter:
    name = "tau_bench"
    label = "τ-bench / τ²-bench result file (JSON)"

    def sniff(self, head: bytes, filename: str) -> bool:
        start = head.lstrip()[:1]
        if start == b"[":
            return b'"task_id"' in head and (b'"traj"' in head or b'"reward"' in head)
        if start == b"{":
            return b'"simulations"' in head or (
                b'"tasks"' in head and b'"info"' in head and b'"num_trials"' in head
            )
        return False

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        doc = read_json_document(stream, report)
        if doc is None:
            return
        filename = os.path.basename(stream_name(stream, report))
        if isinstance(doc, list):
            yield from _convert_tau(doc, filename, report)
        elif isinstance(doc, dict) and "simulations" in doc:
            yield from _convert_tau2(doc, report)
        else:
            report.error(
                line=0,
                trace_id=None,
                path="$",
                message="expected a list of τ-bench records or an object with simulations[], found "
                + ("an object without simulations" if isinstance(doc, dict) else short(doc, 40)),
            )


# ---- τ-bench ---------------------------------------------------------------------------------


def _tau_domain(filename: str, traj: Any) -> str:
    """The domain, from the content first (the system prompt starts "# Airline Agent Policy" /
    "# Retail agent policy") so trace ids do not depend on the upload's name; else the name."""
    if isinstance(traj, list) and traj and isinstance(traj[0], dict):
        content = traj[0].get("content")
        if isinstance(content, str) and content.startswith("# "):
            word = content[2:].split(" ", 1)[0].lower()
            if word.isalnum():
                return word
    lowered = filename.lower()
    for domain in DOMAINS:
        if domain in lowered:
            return domain
    return "unknown"


def _tau_model(filename: str, domain: str) -> str | None:
    """τ-bench files carry no model name; the historical files are named `<model>-<domain>.json`."""
    stem = filename.rsplit(".", 1)[0]
    if stem.endswith(f"-{domain}"):
        return stem[: -len(domain) - 1] or None
    return None


def tau2_model(agent_info: Any) -> str | None:
    """τ²-bench names the agent's model in `info.agent_info.llm` (e.g. `xai/grok-3`)."""
    model = agent_info.get("llm") if isinstance(agent_info, dict) else None
    return model if isinstance(model, str) and model else None


def _convert_tau(records: list, filename: str, report: ImportReport) -> Iterator[SourceEvent]:
    seen: dict[str, int] = {}
    for index, record in enumerate(records, 1):
        ok = isinstance(record, dict)
        domain = _tau_domain(filename, record.get("traj") if ok else None)
        task_id = record.get("task_id") if ok else None
        trial = record.get("trial") if ok else None
        trace_id = f"tau-bench:{domain}:task{task_id}:trial{trial}"
        trace = Trace(trace_id, index, report)
        path = f"$[{index - 1}]"
        yield from record_events(
            trace, _tau_checked, trace, record, path, seen, index, domain, filename
        )


def _tau_checked(
    trace: Trace,
    record: Any,
    path: str,
    seen: dict[str, int],
    index: int,
    domain: str,
    filename: str,
) -> None:
    _one_per_task_trial(
        trace, record, path, seen, index,
        ("record", "a τ-bench record object", "a task id (integer or string)"),
    )  # fmt: skip
    _tau_record(trace, record, path, domain, _tau_model(filename, domain))


def _one_per_task_trial(
    trace: Trace,
    record: Any,
    path: str,
    seen: dict[str, int],
    index: int,
    words: tuple[str, str, str],
) -> None:
    """What a τ / τ² record must be before its contents are read: an object with a task id and
    a trial number, the only one of its (task, trial) in the file. ``words``: what the file
    calls a record, and how the errors describe the record and its task id."""
    noun, what, task_what = words
    require(trace, record, dict, path, what)
    require(trace, record.get("task_id"), (int, str), f"{path}.task_id", task_what)
    require(trace, record.get("trial"), int, f"{path}.trial", "a trial number")
    if trace.trace_id in seen:
        raise trace.fail(
            path,
            f"expected one {noun} per (task_id, trial), found a second one (first is {noun} "
            f"{seen[trace.trace_id]})",
        )
    seen[trace.trace_id] = index


def _tau_record(trace: Trace, record: dict, path: str, domain: str, model: str | None) -> None:
    reward = record.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        raise trace.fail(f"{path}.reward", f"expected a number, found {short(reward, 40)}")
    info = require(
        trace, record.get("info"), dict, f"{path}.info", "an object with task and reward_info"
    )
    task_src = require(trace, info.get("task"), dict, f"{path}.info.task", "a task object")
    task = {
        "id": str(record["task_id"]),
        "benchmark": "tau-bench",
        "category": domain,
        "instruction": task_src.get("instruction"),
        "expected_actions": task_src.get("actions"),
    }
    for key, value in task_src.items():
        if key not in ("instruction", "actions"):
            task[key] = value  # user_id, outputs: task-like, kept in the task
    reward_info = info.get("reward_info")
    header = trace.header(
        agent=None,
        model=model,
        task=task,
        env={"name": f"tau-bench:{domain}", "config": {"domain": domain}},
        outcome={"success": success_from_reward(reward), "reward": reward, "details": reward_info},
    )
    header["labels"] = {"trial": record["trial"]}
    if reward_info is None:
        trace.flag(header, "reward_info_missing", "reward_info_missing", True)
    trace.keep(header, info, TAU_INFO_KEYS, "info")
    trace.keep(header, record, TAU_RECORD_KEYS, "record")
    convert_messages(trace, record.get("traj"), f"{path}.traj", error_prefix=True)
    trace.turn = None
    if isinstance(reward_info, dict):
        details = reward_info.get("info")
        if isinstance(details, dict):
            for key, value in details.items():
                if (
                    key.startswith("r_")
                    and isinstance(value, int | float)
                    and not isinstance(value, bool)
                ):
                    trace.add(
                        "check",
                        name=key,
                        passed=value >= 1 - 1e-6,
                        source="tau-bench reward",
                        meta={"value": value},
                    )


# ---- τ²-bench --------------------------------------------------------------------------------


def _convert_tau2(doc: dict, report: ImportReport) -> Iterator[SourceEvent]:
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    env_info = (
        info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    )
    agent_info = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    domain = (
        env_info.get("domain_name") if isinstance(env_info.get("domain_name"), str) else "unknown"
    )
    tasks: dict[str, dict] = {}
    if isinstance(doc.get("tasks"), list):
        for task in doc["tasks"]:
            if isinstance(task, dict) and task.get("id") is not None:
                tasks[str(task["id"])] = task
    sims = doc.get("simulations")
    if not isinstance(sims, list):
        report.error(
            line=0,
            trace_id=None,
            path="$.simulations",
            message=f"expected an array of simulations, found {short(sims, 40)}",
        )
        return
    config = {k: v for k, v in info.items() if k not in ("agent_info", "environment_info")}
    config["domain"] = domain
    config.update({k: v for k, v in env_info.items() if k not in ("domain_name", "policy")})
    doc_extra = {k: v for k, v in doc.items() if k not in ("info", "tasks", "simulations")}
    seen: dict[str, int] = {}
    for index, sim in enumerate(sims, 1):
        ok = isinstance(sim, dict)
        task_id = sim.get("task_id") if ok else None
        trial = sim.get("trial") if ok else None
        trace_id = f"tau2-bench:{domain}:task{task_id}:trial{trial}"
        trace = Trace(trace_id, index, report)
        path = f"$.simulations[{index - 1}]"
        context = (domain, agent_info, config, env_info, tasks, doc_extra)
        yield from record_events(trace, _tau2_checked, trace, sim, path, seen, index, context)


def _tau2_checked(
    trace: Trace, sim: Any, path: str, seen: dict[str, int], index: int, context: tuple
) -> None:
    _one_per_task_trial(
        trace, sim, path, seen, index, ("simulation", "a simulation object", "a task id")
    )
    _tau2_sim(trace, sim, path, *context)


def _instruction_text(scenario: Any) -> str | None:
    """τ² user instructions are an object; the task instruction is its text fields joined."""
    if not isinstance(scenario, dict):
        return None
    instructions = scenario.get("instructions")
    if isinstance(instructions, str):
        return instructions
    if not isinstance(instructions, dict):
        return None
    parts = [f"{k}: {v}" for k, v in instructions.items() if isinstance(v, str) and k != "domain"]
    return "\n".join(parts) or None


def _tau2_sim(trace, sim, path, domain, agent_info, config, env_info, tasks, doc_extra) -> None:
    reward_info = require(
        trace, sim.get("reward_info"), dict, f"{path}.reward_info", "a reward_info object"
    )
    reward = reward_info.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        raise trace.fail(
            f"{path}.reward_info.reward", f"expected a number, found {short(reward, 40)}"
        )
    task_src = tasks.get(str(sim["task_id"]))
    task: dict = {"id": str(sim["task_id"]), "benchmark": "tau2-bench", "category": domain}
    if task_src is None:
        trace.report.note_flag("task_not_in_document")
    else:
        criteria = task_src.get("evaluation_criteria")
        task["instruction"] = _instruction_text(task_src.get("user_scenario"))
        task["expected_actions"] = criteria.get("actions") if isinstance(criteria, dict) else None
        for key, value in task_src.items():
            if key != "id":
                task[key] = value
    header = trace.header(
        agent=agent_info.get("implementation"),
        model=tau2_model(agent_info),
        task=task,
        env={"name": f"tau2-bench:{domain}", "config": config},
        outcome={"success": success_from_reward(reward), "reward": reward, "details": reward_info},
    )
    header["labels"] = {"trial": sim["trial"]}
    if task_src is None:
        header.setdefault("meta", {})["task_missing"] = True
    if agent_info:
        header.setdefault("meta", {})["agent_info"] = agent_info
    if doc_extra:
        header.setdefault("meta", {})["document"] = doc_extra
    _tau2_timing(trace, header, sim)
    trace.keep(header, sim, SIM_KEYS, "simulation")
    policy = env_info.get("policy")
    if isinstance(policy, str):
        # τ² keeps the agent's policy (its system prompt) in the document; τ keeps it in traj.
        trace.turn = 0
        trace.add(
            "message",
            role="system",
            content=policy,
            meta={"source": "info.environment_info.policy"},
        )
    convert_messages(trace, sim.get("messages"), f"{path}.messages")
    trace.turn = None
    _tau2_checks(trace, reward_info)


def _tau2_timing(trace: Trace, header: dict, sim: dict) -> None:
    """The simulation's start, end and duration (seconds) on the header, and its cost: the
    agent's plus the simulated user's, which is what its messages' costs add up to (each half
    is kept in `meta`)."""
    duration = amount(sim.get("duration"))
    costs = {k: sim.get(k) for k in ("agent_cost", "user_cost") if k in sim}
    usable = [amount(v) for v in costs.values()]
    put_timing(
        trace,
        header,
        ts=sim.get("start_time"),
        end_ts=sim.get("end_time"),
        duration_ms=duration * 1000 if duration is not None else sim.get("duration"),
        cost_usd=sum(v for v in usable if v is not None) if costs and None not in usable else None,
        source={"ts": "start_time", "end_ts": "end_time", "duration_ms": "duration"},
    )
    if costs:
        header.setdefault("meta", {}).update(costs)


def _tau2_checks(trace: Trace, reward_info: dict) -> None:
    db = reward_info.get("db_check")
    if isinstance(db, dict) and isinstance(db.get("db_match"), bool):
        trace.add("check", name="db_match", passed=db["db_match"], source="tau2-bench db_check")
    for key, inner, name_key, passed_key in (
        ("action_checks", "action", "name", "action_match"),
        ("env_assertions", "env_assertion", "func_name", "met"),
        ("nl_assertions", None, "nl_assertion", "met"),
        ("communicate_checks", None, "info", "met"),
    ):
        items = reward_info.get(key)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            if isinstance(item, dict) and isinstance(item.get(passed_key), bool):
                holder = item.get(inner) if inner else item
                label = holder.get(name_key) if isinstance(holder, dict) else None
                trace.add(
                    "check",
                    name=f"{key}[{i}]" + (f":{short(label, 80)}" if label else ""),
                    passed=item[passed_key],
                    source=f"tau2-bench {key}",
                )
