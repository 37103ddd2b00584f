"""BFCL multi-turn result files, as written by the `bfcl-eval` package.

File: `result/<model>/multi_turn/BFCL_v4_multi_turn_<category>_result.json` — JSONL despite the
name — one object per line (`bfcl_eval/_llm_response_generation.py`, `multi_threaded_inference`):
`{"id": "multi_turn_base_0", "result": [turn][step] -> model output, "inference_log": [...],
"input_token_count", "output_token_count", "latency", ["reasoning_content"]}`; when inference
crashed, `result` is the string "Error during inference: …" and `traceback` is set.

A step's model output is, for function-calling models, a list of `{func_name: "<JSON args>"}`;
for prompting models (and an FC model's final text answer), a string. `inference_log` holds, in
order, optional state snapshots (lists of `{"role": "state_info", …}`) and one dict per turn:
`{"begin_of_turn_query": [messages], "step_0": [{"role": "assistant"}, {"role": "handler_log",
"model_response_decoded": [...]}, {"role": "tool", "content": result}, …], …}`.

The task (question turns, `initial_config`, `involved_classes`, `missed_function`,
`excluded_function`) and ground truth come from the package's data files, joined by `id`; the
header's tools are the func docs of the involved classes (BFCL types mapped to JSON Schema).
Malformed function names and argument strings are kept and flagged, never dropped.

`input_token_count`, `output_token_count` and `latency` (seconds), per turn and step, are kept
as recorded in the header's `meta`; each step's value goes on the step's first event when a list
has the steps' shape, else its sum is the header's `usage` or `duration_ms` (`_bfcl_usage`) —
the time spent in model inference, the only duration BFCL records (tool execution is not timed).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ._bfcl_drift import drifted_turns, file_release
from ._bfcl_releases import ReleaseMatch, release_task, release_tasks
from ._bfcl_usage import put_step_figures
from ._call_order import results_follow_calls
from ._chat import ROLES
from ._common import (
    Trace,
    convert_jsonl,
    head_lines,
    parse_arguments,
    require,
    short,
    stream_name,
)
from ._timing import put_timing
from .base import ImportReport, SourceEvent

CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
RECORD_KEYS = frozenset({"id", "result", "inference_log"})
META_KEYS = ("input_token_count", "output_token_count", "latency", "reasoning_content", "traceback")
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
FILE_RE = re.compile(r"BFCL_v\d+_multi_turn_\w+_result\.json(l)?\Z")
FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
    "WebSearchAPI": "web_search.json",
    "MemoryAPI_kv": "memory_kv.json",
    "MemoryAPI_vector": "memory_vector.json",
    "MemoryAPI_rec_sum": "memory_rec_sum.json",
}
# BFCL's own type names → JSON Schema (bfcl_eval.constants.type_mappings.GORILLA_TO_OPENAPI).
TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "any": None}


# ---- package data -------------------------------------------------------------------------------


def package_data_dir() -> Path | None:
    """`bfcl_eval/data` of the installed package, or None when it is not installed."""
    try:
        import bfcl_eval
    except ImportError:
        return None
    path = Path(bfcl_eval.__file__).parent / "data"
    return path if path.is_dir() else None


def _read_jsonl(path: Path) -> list[dict]:
    with path.open("rb") as f:
        return [orjson.loads(line) for line in f if line.strip()]


@lru_cache(maxsize=1)
def load_tasks() -> dict[str, dict]:
    """Every multi-turn task by id, with its ground truth under `ground_truth` (cached)."""
    base = package_data_dir()
    if base is None:
        return {}
    tasks: dict[str, dict] = {}
    for path in sorted(base.glob("BFCL_v*_multi_turn_*.json")):
        for entry in _read_jsonl(path):
            tasks[entry["id"]] = entry
        answers = base / "possible_answer" / path.name
        if answers.exists():
            for answer in _read_jsonl(answers):
                if answer["id"] in tasks:
                    tasks[answer["id"]] = {
                        **tasks[answer["id"]],
                        "ground_truth": answer["ground_truth"],
                    }
    return tasks


@lru_cache(maxsize=1)
def installed_release() -> str | None:
    """The release of the installed multi-turn tasks ("v4"), from their file names."""
    base = package_data_dir()
    names = sorted(p.name for p in base.glob("BFCL_v*_multi_turn_*.json")) if base else []
    return file_release(names[-1]) if names else None


@cache
def load_func_docs(class_name: str) -> tuple[dict, ...]:
    base = package_data_dir()
    file = FUNC_DOC_FILES.get(class_name)
    if base is None or file is None or not (base / "multi_turn_func_doc" / file).exists():
        return ()
    return tuple(_read_jsonl(base / "multi_turn_func_doc" / file))


def to_json_schema(schema: Any) -> Any:
    """BFCL parameter docs use `dict`/`float`/`tuple`/`any`; map them to JSON Schema types."""
    if isinstance(schema, list):
        return [to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str) and value in TYPE_MAP:
            if TYPE_MAP[value] is not None:
                out[key] = TYPE_MAP[value]
        elif key in ("properties",) and isinstance(value, dict):
            out[key] = {k: to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    return out


def tools_for(task: dict) -> list[dict]:
    missed: dict[str, list] = task.get("missed_function") or {}
    missed_at = {
        name: int(turn) for turn, names in missed.items() for name in names if isinstance(name, str)
    }
    tools = []
    for class_name in task.get("involved_classes") or []:
        for doc in load_func_docs(class_name):
            tool = {
                "name": doc["name"],
                "description": doc.get("description", ""),
                "parameters": to_json_schema(doc.get("parameters", {})),
                "meta": {"class": class_name, "response": doc.get("response")},
            }
            if doc["name"] in missed_at:
                tool["meta"]["available_from_turn"] = missed_at[doc["name"]]
            tools.append(tool)
    return tools


# ---- the importer -------------------------------------------------------------------------------


class BFCLImporter:
    name = "bfcl"
    label = "BFCL multi-turn result file (bfcl-eval)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if FILE_RE.search(filename or ""):
            return True
        records = head_lines(head, 1)
        if records:
            rec = records[0]
            return (
                isinstance(rec, dict)
                and str(rec.get("id", "")).startswith("multi_turn_")
                and "result" in rec
            )
        # A first line longer than the head: inference logs make lines long.
        return re.match(rb'\s*\{"id":\s*"multi_turn_', head) is not None and b'"result"' in head

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        tasks = load_tasks()
        if not tasks:
            report.note_unmapped(
                "bfcl-eval package data", "not installed: no task, tools or ground truth"
            )
        name = stream_name(stream, report)
        model = _model_from_path(name)
        release = file_release(name)

        def identify(record: Any, line: int) -> tuple[str, str, str]:
            rid = record.get("id") if isinstance(record, dict) else None
            trace_id = f"bfcl:{rid}" if isinstance(rid, str) else f"bfcl:line{line}"
            return trace_id, "$.id", f"expected a unique id, found {rid!r}"

        yield from convert_jsonl(
            stream,
            report,
            identify=identify,
            build=lambda trace, record: _record(trace, record, tasks, model, release),
        )


def _model_from_path(path: str) -> str | None:
    # result/<model>/multi_turn/BFCL_v4_multi_turn_base_result.json (older: result/<model>/…)
    parts = Path(path).parts if path else ()
    if len(parts) >= 3 and parts[-2] == "multi_turn":
        return parts[-3]
    if len(parts) >= 2 and FILE_RE.search(parts[-1]) and parts[-2] not in ("", ".", "result"):
        return parts[-2]
    return None


def _record(
    trace: Trace, record: Any, tasks: dict, model: str | None, release: str | None = None
) -> None:
    record = require(trace, record, dict, "$", "a BFCL result object")
    rid = require(trace, record.get("id"), str, "$.id", "a test id string")
    if not rid.startswith("multi_turn_"):
        raise trace.fail(
            "$.id",
            f"expected a multi-turn test id (multi_turn_<category>_<n>), found {short(rid, 60)}",
        )
    category = rid.rsplit("_", 1)[0]
    task = tasks.get(rid)
    result = record.get("result")
    if not isinstance(result, list | str):
        raise trace.fail(
            "$.result",
            f"expected an array of turns (or an inference error string), found "
            f"{short(result, 40) if result is not None else 'nothing'}",
        )
    log = record.get("inference_log")
    if log is not None and not isinstance(log, list):
        raise trace.fail("$.inference_log", f"expected an array, found {short(log, 40)}")
    # A file of an earlier release whose tasks are kept: its own release's task, never the
    # installed one (`_bfcl_releases`)
    kept = release_tasks(release) if release and release != installed_release() else None
    match: ReleaseMatch | None = None
    if kept is not None:
        versions = kept.get(rid) or []
        match = release_task(versions, recorded_turns(log)) if versions else None
        task = None if match is None else match.task or versions[-1]["task"]

    header = trace.header(
        agent="bfcl-eval",
        model=model,
        task={"id": rid, "benchmark": f"bfcl-{release if kept else 'v4'}", "category": category},
    )
    meta = header.setdefault("meta", {})
    if release is not None:
        meta["recorded_release"] = release
    for key in META_KEYS:
        if key in record:
            meta[key] = record[key]
    trace.keep(header, record, RECORD_KEYS | set(META_KEYS), "record")
    _timing(trace, header, record)
    tool_names: set[str] = set()
    if kept is not None:
        _note_release(trace, header, release, match)
    if task is None:
        trace.flag(header, "task_not_found", "task_not_found", True)
        where = f"the {release} release's" if kept is not None else "the installed"
        trace.report.note_unmapped(f"tests not in {where} bfcl-eval data", rid)
        questions: list = []
    else:
        questions = task.get("question") or []
        header["task"].update(
            {
                "question": questions,
                "path": task.get("path"),
                "missed_function": task.get("missed_function"),
                "excluded_function": task.get("excluded_function"),
            }
        )
        header["env"] = {
            "name": "bfcl",
            "config": {
                "initial_config": task.get("initial_config", {}),
                "involved_classes": task.get("involved_classes", []),
                "excluded_function": task.get("excluded_function", []),
                "missed_function": task.get("missed_function", {}),
                "long_context": "long_context" in category,
            },
        }
        header["labels"] = {"ground_truth": task.get("ground_truth")}
        header["tools"] = tools_for(task)
        tool_names = {t["name"] for t in header["tools"]}

    if isinstance(result, str):
        # Inference crashed: nothing but the error was recorded; keep it, the run failed.
        header["outcome"] = {"success": False, "reward": None}
        trace.flag(header, "inference_error", "inference_error", result)
        return

    turn_logs, states = _split_log(trace, log)
    if states:
        meta["state_log"] = states
    if task is not None and kept is None:
        _check_drift(trace, header, turn_logs, questions, release)
    if log is None:
        trace.report.note_flag("no_inference_log")
    firsts: list[list[dict[str, Any]]] = []  # per turn, each step's first event
    for t, steps in enumerate(result):
        tpath = f"$.result[{t}]"
        steps = require(trace, steps, list, tpath, "an array of steps")
        trace.turn = t
        turn_log = turn_logs[t] if t < len(turn_logs) else None
        _user_turn(trace, t, turn_log, questions, task)
        firsts.append([])
        for s, output in enumerate(steps):
            step_log = turn_log.get(f"step_{s}") if turn_log else None
            step_log = step_log if isinstance(step_log, list) else None
            firsts[-1].append(_step(trace, t, s, output, step_log, tool_names))
        if turn_log:
            extra = [
                k
                for k in turn_log
                if k != "begin_of_turn_query"
                and not (k.startswith("step_") and k[5:].isdigit() and int(k[5:]) < len(steps))
            ]
            if extra:
                trace.report.note_unmapped(
                    "inference_log steps without a result step",
                    f"{trace.trace_id} turn {t}: {extra}",
                )
                trace.events[-1].setdefault("meta", {})["unmatched_log_steps"] = {
                    k: turn_log[k] for k in extra
                }
    if len(turn_logs) > len(result):
        meta["unmatched_log_turns"] = turn_logs[len(result) :]
        trace.report.note_unmapped("inference_log turns without a result turn", trace.trace_id)
    trace.turn = None
    put_step_figures(trace, header, record, firsts)


def _check_drift(
    trace: Trace, header: dict, turn_logs: list[dict], questions: list, release: str | None
) -> None:
    """Flag a run whose recorded user turns differ from the installed task's (`_bfcl_drift`):
    its outcome cannot be scored against the installed task."""
    differ, compared = drifted_turns(turn_logs, questions)
    installed = installed_release()
    if release and installed and release != installed:
        # Same user turns can still come with another ground truth: said, never hidden.
        header["meta"]["installed_release"] = installed
        trace.report.note_flag("recorded_release_differs")
    if differ:
        drift = {"turns": differ, "compared": compared, "recorded_release": release}
        trace.flag(header, "task_differs_from_installed", "task_drift", drift)
        trace.report.note_unmapped(
            "tasks that differ from the installed bfcl-eval release", trace.trace_id
        )
    elif turn_logs and not compared:
        trace.report.note_flag("task_version_unverified")


def recorded_turns(log: list | None) -> list[dict]:
    """The inference log's turns (each with its ``begin_of_turn_query``), states aside."""
    return [x for x in log or () if isinstance(x, dict) and "begin_of_turn_query" in x]


def _note_release(
    trace: Trace, header: dict, release: str | None, match: ReleaseMatch | None
) -> None:
    """Say which task of the file's own release the run is scored against (`_bfcl_releases`):
    the one its user turns match, or none — the ground truth changed between the releases it
    may come from, no version has its user turns (drift), or it records no user turn to
    compare (unverified)."""
    meta = header["meta"]
    meta["installed_release"] = installed_release()
    trace.report.note_flag("recorded_release_differs")
    if match is None:
        return
    releases = list(match.releases)
    if match.status == "matched":
        meta["task_release"] = {"release": release, "bfcl_eval": releases}
        trace.report.note_flag("scored_against_recorded_release")
    elif match.status == "ground_truth_changed":
        changed = {"recorded_release": release, "bfcl_eval": releases, "compared": match.compared}
        trace.flag(header, "ground_truth_changed", "ground_truth_changed", changed)
    elif match.status == "unverified":
        unverified = {"recorded_release": release, "compared": 0}
        trace.flag(header, "task_version_unverified", "task_unverified", unverified)
    else:
        drift = {
            "turns": list(match.turns),
            "compared": match.compared,
            "recorded_release": release,
        }
        trace.flag(header, "task_differs_from_release", "task_drift", drift)


def _split_log(trace: Trace, log: list | None) -> tuple[list[dict], list]:
    turns: list[dict] = []
    states: list = []
    for i, item in enumerate(log or []):
        if isinstance(item, dict) and "begin_of_turn_query" in item:
            turns.append(item)
        elif isinstance(item, list):
            states.append({"after_turn": len(turns) - 1, "state": item})
        else:
            states.append({"after_turn": len(turns) - 1, "unknown": item})
            trace.report.note_unmapped(
                "inference_log entries", f"{trace.trace_id} [{i}]: {short(item)}"
            )
    return turns, states


def _user_turn(
    trace: Trace, t: int, turn_log: dict | None, questions: list, task: dict | None
) -> None:
    query = turn_log.get("begin_of_turn_query") if turn_log else None
    source = "inference_log"
    if not isinstance(query, list):
        query, source = (questions[t] if t < len(questions) else None), "task"
    if not isinstance(query, list) or not query:
        missed = (task or {}).get("missed_function") or {}
        event = trace.add("message", role="user", content="")
        event["meta"] = {"empty_turn": True}
        if str(t) in missed:
            event["meta"]["functions_added"] = missed[str(t)]
        return
    for msg in query:
        if not isinstance(msg, dict):
            trace.report.note_unmapped(
                "non-object query message", f"{trace.trace_id}: {short(msg)}"
            )
            event = trace.add("message", role="user", content=short(msg, 10_000))
            trace.flag(event, "query_message_not_object", "raw", msg)
            continue
        source_role = msg.get("role")
        role = ROLES.get(source_role, "user") if isinstance(source_role, str) else "user"
        content = msg.get("content")
        event = trace.add(
            "message",
            role=role,
            content=content if isinstance(content, str) else short(content, 10_000),
        )
        if role != msg.get("role") or not isinstance(content, str):
            trace.flag(event, "query_message_unexpected", "raw", msg)
        if source == "task":  # no inference log for this turn: the question from the package
            event.setdefault("meta", {})["query_source"] = "task"


def _step(
    trace: Trace, t: int, s: int, output: Any, log: list | None, tool_names: set[str]
) -> dict[str, Any]:
    """The events of one step (one model call) of turn `t`; returns its first event, the model's
    output."""
    spath = f"$.result[{t}][{s}]"
    start = len(trace.events)
    decoded = handler = None
    tool_outputs: list = []
    extra_log: list = []
    if log:
        for entry in log:
            role = entry.get("role") if isinstance(entry, dict) else None
            if role == "tool":
                tool_outputs.append(entry.get("content"))
            elif role == "handler_log":
                handler = entry
                if isinstance(entry.get("model_response_decoded"), list):
                    decoded = entry["model_response_decoded"]
            elif role == "assistant":
                if entry.get("reasoning_content"):
                    extra_log.append({"reasoning_content": entry["reasoning_content"]})
            else:
                extra_log.append(entry)
    calls: list[dict] = []
    first: dict | None = None
    if isinstance(output, dict):
        output = [output]
    if isinstance(output, list):
        for k, item in enumerate(output):
            ipath = f"{spath}[{k}]"
            if isinstance(item, dict):
                for name, raw_args in item.items():
                    calls.append(
                        _call(
                            trace,
                            t,
                            s,
                            len(calls),
                            name,
                            raw_args,
                            f'{ipath}["{name}"]',
                            tool_names,
                        )
                    )
            elif isinstance(item, str):
                parsed = parse_call_string(item)
                if parsed is None:
                    ev = trace.add("message", role="assistant", content=item)
                    trace.flag(ev, "unparsable_call_item", "source_path", ipath)
                    first = first or ev
                else:
                    ev = _call(trace, t, s, len(calls), parsed[0], parsed[1], ipath, tool_names)
                    ev.setdefault("meta", {})["source_text"] = item
                    calls.append(ev)
            else:
                ev = trace.add("message", role="assistant", content="")
                trace.flag(ev, "call_item_not_object", "raw_item", item)
                first = first or ev
    elif isinstance(output, str):
        ev = trace.add("message", role="assistant", content=output)
        first = ev
        # Prompting models: the handler decoded the text into call strings that were executed.
        if decoded:
            for k, text in enumerate(decoded):
                parsed = parse_call_string(text) if isinstance(text, str) else None
                if parsed is None:
                    trace.flag(ev, "unparsable_decoded_call", f"undecodable_{k}", text)
                    continue
                call = _call(
                    trace,
                    t,
                    s,
                    len(calls),
                    parsed[0],
                    parsed[1],
                    f"{spath} (decoded {k})",
                    tool_names,
                )
                call.setdefault("meta", {})["source_text"] = text
                calls.append(call)
    else:
        ev = trace.add("message", role="assistant", content="")
        trace.flag(ev, "step_output_unexpected", "raw_output", output)
        first = ev
    first = first or (calls[0] if calls else None)
    if first is None:
        # The model answered with nothing (the handler logs "Empty response from the model"):
        # the call still took its time and tokens, and ended the turn, so it is a step.
        first = trace.add("message", role="assistant", content="")
        trace.flag(first, "empty_model_response", "empty_response", True)
    meta = first.setdefault("meta", {})
    meta["step"] = s
    if handler is not None:
        meta["handler_log"] = handler.get("content")
        if "error" in handler:
            meta["handler_error"] = handler["error"]
    if extra_log:
        meta["inference_log"] = extra_log
    # The step's calls ran one after another (execute_multi_turn_func_call): the k-th output is
    # the k-th call's, and each result goes right after its own call.
    for k, content in enumerate(tool_outputs):
        if k < len(calls):
            _result(trace, calls[k]["call_id"], content)
        else:
            ev = _result(trace, f"t{t}.s{s}.extra{k}", content)
            trace.flag(ev, "tool_result_unpaired", "unpaired", True)
    if log is not None and len(calls) > len(tool_outputs):
        for call in calls[len(tool_outputs) :]:
            trace.flag(call, "tool_call_not_executed", "not_executed", True)
    if len(calls) > 1:
        trace.flag(calls[0], "parallel_step", "parallel_calls", len(calls))
    results_follow_calls(trace.events, start)
    return first


def _call(
    trace: Trace, t: int, s: int, k: int, name: Any, raw_args: Any, path: str, tool_names: set[str]
) -> dict:
    name_text = name if isinstance(name, str) else short(name, 200)
    event = trace.add("tool_call", call_id=f"t{t}.s{s}.c{k}", name=name_text or "<empty>")
    if not NAME_RE.match(name_text):
        trace.flag(event, "malformed_function_name", "malformed_name", True)
        if name_text != name or not name_text:
            event["meta"]["source_name"] = name
        trace.report.note_unmapped("malformed function names", f"{trace.trace_id}: {name_text!r}")
    elif tool_names and name_text not in tool_names:
        trace.flag(event, "unknown_function", "unknown_function", True)
    args, problem = parse_arguments(raw_args)
    if problem is None:
        event["arguments"] = args
    else:
        event["arguments"] = {}
        event.setdefault("meta", {}).update(
            raw_arguments=raw_args, arguments_error=f"{path}: {problem}"
        )
        trace.report.note_flag("malformed_arguments")
        trace.report.note_unmapped(
            "malformed argument strings", f"{trace.trace_id}: {short(raw_args)}"
        )
    return event


def _result(trace: Trace, call_id: str, content: Any) -> dict:
    status = "ok"
    if isinstance(content, str):
        if content.startswith("Error during execution"):
            status = "error"
        elif content.startswith("{") and '"error"' in content:
            try:
                parsed = orjson.loads(content)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict) and "error" in parsed:
                status = "error"
    return trace.add(
        "tool_result",
        call_id=call_id,
        status=status,
        content=content if content is not None else "",
    )


def parse_call_string(text: str) -> tuple[str, dict] | None:
    """`"cd(folder='x')"` → ("cd", {"folder": "x"}) with literal arguments only; else None.

    Parses, never evaluates: only keyword arguments with Python literal values are accepted
    (positional arguments are kept under "_0", "_1", … since their names need the func doc).
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    name = ".".join(reversed(parts))
    args: dict[str, Any] = {}
    try:
        for i, arg in enumerate(node.args):
            args[f"_{i}"] = ast.literal_eval(arg)
        for kw in node.keywords:
            if kw.arg is None:
                return None
            args[kw.arg] = ast.literal_eval(kw.value)
    except (ValueError, SyntaxError, TypeError, RecursionError):
        return None
    try:
        orjson.dumps(args)
    except TypeError:
        args = {
            k: (v if isinstance(v, str | int | float | bool | None | list | dict) else repr(v))
            for k, v in args.items()
        }
        try:
            orjson.dumps(args)
        except TypeError:
            return None
    return name, args


def _nested_sum(value: Any) -> float | int | None:
    """The sum of a number or of nested lists of numbers (BFCL's [turn][step] counts); None when
    anything in it is not a non-negative number, or there is nothing."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if value >= 0 else None
    if not isinstance(value, list) or not value:
        return None
    parts = [_nested_sum(v) for v in value]
    return None if None in parts else sum(p for p in parts if p is not None)


def _timing(trace: Trace, header: dict, record: dict) -> None:
    usage = {}
    for source, name in (
        ("input_token_count", "input_tokens"),
        ("output_token_count", "output_tokens"),
    ):
        total = _nested_sum(record.get(source))
        if total is not None and float(total).is_integer():
            usage[name] = int(total)
    latency = _nested_sum(record.get("latency"))
    put_timing(
        trace,
        header,
        usage=usage or None,
        duration_ms=latency * 1000 if latency is not None else None,
    )
