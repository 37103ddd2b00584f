"""BFCLEnvironment: ground truth passes, perturbations fail as the package says, verdicts are
identical to the package's own checker (run in a subprocess, since it keeps instances in module
globals and evaluates strings), replays are isolated, TwinCheck splices through it.

No database: `-p no:django` works, and so does pytest-django.
"""

from __future__ import annotations

import copy
import io
import json
import pickle
import random
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from policies import audit_trace  # noqa: E402
from policies.environments.bfcl import BFCLEnvironment, call_string  # noqa: E402
from policies.replay import actor_outcome  # noqa: E402
from policies.tool_profile import BFCL_READ_ONLY  # noqa: E402
from policies.trace import ToolCall, Trace  # noqa: E402
from traces.importers.base import ImportReport  # noqa: E402
from traces.importers.bfcl import BFCLImporter, load_tasks, parse_call_string  # noqa: E402
from traces.samples.bfcl import _bind, _instances, _Turn, build_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ("base", "long_context", "miss_func", "miss_param")


# ---- building traces ----------------------------------------------------------------------------


def import_events(record: dict, model: str = "sample-FC") -> list[dict]:
    """v1 events of one result record, through the BFCL importer."""
    category = record["id"].rsplit("_", 1)[0].removeprefix("multi_turn_")
    stream = io.BytesIO(json.dumps(record).encode() + b"\n")
    stream.name = f"result/{model}/multi_turn/BFCL_v4_multi_turn_{category}_result.json"
    report = ImportReport(format="bfcl")
    events = [se.event for se in BFCLImporter().convert(stream, report)]
    assert not report.errors, report.errors
    return events


def import_trace(record: dict, model: str = "sample-FC") -> Trace:
    return Trace.from_events(import_events(record, model))


def gt_calls(task: dict) -> list[list[tuple[str, dict]]]:
    """The task's ground truth as parsed (name, keyword arguments) per turn."""
    _, methods = _instances(task, "long_context" in task["id"])
    turns = []
    for calls in task["ground_truth"]:
        turn = []
        for text in calls:
            parsed = parse_call_string(text)
            assert parsed is not None, text
            name, args = parsed
            turn.append((name, _bind(methods[name], args) if name in methods else args))
        turns.append(turn)
    return turns


def record_from_turns(task: dict, turns: list[list[Any]], seed: int = 0) -> dict:
    """A realistic FC result record whose model makes exactly `turns`' calls, one per step,
    then a text answer; an item ("raw", name, raw_args) is a step with an undecodable argument
    string (the turn ends there, as in the package's FC handler). Tool results come from fresh
    instances (bfcl_samples' whitelisted dispatch)."""
    rng = random.Random(seed)
    _, methods = _instances(task, "long_context" in task["id"])
    from traces.samples.bfcl import ADDED_FUNCTIONS_PROMPT

    missed = task.get("missed_function") or {}
    result, log = [], []
    for t, calls in enumerate(turns):
        query = task["question"][t] if t < len(task["question"]) else []
        if str(t) in missed and not query:
            query = [{"role": "user", "content": ADDED_FUNCTIONS_PROMPT}]
        turn = _Turn(query, rng)
        ended = False
        for item in calls:
            if item[0] == "raw":
                turn.broken_call(item[1], item[2], "Expecting ',' delimiter")
                ended = True
                break
            turn.call(methods, item[0], item[1])
        if not ended:
            turn.answer("Done.")
        result.append(turn.steps)
        log.append(turn.log)
    return {"id": task["id"], "result": result, "inference_log": log}


def replay_all(trace: Trace, env: BFCLEnvironment | None = None) -> tuple[bool | None, dict]:
    env = env or BFCLEnvironment()
    verdict = actor_outcome(trace, env)
    return verdict, env.last_check_details() or {}


def task_ids(category: str, n: int = 200, step: int = 1) -> list[str]:
    return [f"multi_turn_{category}_{i}" for i in range(0, n, step)]


# ---- perturbations of the ground truth ----------------------------------------------------------


def _first_str_arg(args: dict) -> str | None:
    return next((k for k, v in args.items() if isinstance(v, str)), None)


def perturb(gt: list[list[tuple[str, dict]]], kind: str, rng: random.Random) -> list | None:
    """A perturbed copy of the ground-truth calls, or None when `kind` does not apply."""
    turns: list[list[Any]] = copy.deepcopy(gt)
    with_calls = [t for t, calls in enumerate(turns) if calls]
    if not with_calls:
        return None
    t = rng.choice(with_calls)
    calls = turns[t]
    i = rng.randrange(len(calls))
    name, args = calls[i]
    if kind == "drop_call":
        del calls[i]
    elif kind == "wrong_arg":
        key = _first_str_arg(args)
        if key is None:
            key = next((k for k, v in args.items() if isinstance(v, int | float)), None)
            if key is None:
                return None
            args[key] = args[key] + 7
        else:
            args[key] = args[key] + "_x"
    elif kind == "force_terminated":
        turns = turns[:-1]
    elif kind == "empty_turn":
        turns[t] = []
    elif kind == "reverse_turn":
        if len(calls) < 2:
            return None
        calls.reverse()
    elif kind == "duplicate":
        calls.insert(i, (name, copy.deepcopy(args)))
    elif kind == "move_to_previous":
        later = [u for u in with_calls if u > 0]
        if not later:
            return None
        u = rng.choice(later)
        turns[u - 1].append(turns[u].pop(0))
    elif kind == "malformed_prefix":
        calls[i] = (f"functions.{name}", args)
    elif kind == "malformed_parens":
        calls[i] = (f"{name}()", args)
    elif kind == "malformed_tag":
        calls.insert(i, (f"{name}<|tool_call_end|>", args))
    elif kind == "unknown_function":
        calls.insert(i, ("open_the_pod_bay_doors", {"now": True}))
    elif kind == "extra_arg":
        calls[i] = (name, {**args, "unexpected_option": True})
    elif kind == "missing_arg":
        if not args:
            return None
        calls[i] = (name, dict(list(args.items())[1:]))
    elif kind == "broken_arguments":
        calls[i:] = [("raw", name, json.dumps(args)[:-2])]
    elif kind == "call_in_string":
        key = _first_str_arg(args)
        if key is None:
            return None
        args[key] = args[key] + " then ls(a=True) and cd(folder='x')"
    elif kind == "extra_ls":
        calls.insert(i, ("ls", {}))
    elif kind == "blocked_name":
        calls.insert(i, ("exit", {}))
    elif kind == "builtin_name":
        calls.insert(i, ("len", {"obj": "abc"}))
    else:  # pragma: no cover
        raise ValueError(kind)
    return turns


KINDS = (
    "drop_call",
    "wrong_arg",
    "force_terminated",
    "empty_turn",
    "reverse_turn",
    "duplicate",
    "move_to_previous",
    "malformed_prefix",
    "malformed_parens",
    "malformed_tag",
    "unknown_function",
    "extra_arg",
    "missing_arg",
    "broken_arguments",
    "call_in_string",
    "extra_ls",
    "blocked_name",
)


# ---- the package's own verdict, in a subprocess -------------------------------------------------

PACKAGE_SCRIPT = textwrap.dedent(
    r"""
    # The reference: eval_runner._evaluate_single_multi_turn_entry's checks (force-terminated,
    # FC decoding with convert_to_function_call, empty steps skipped) around the package's own
    # multi_turn_checker, with its eval-based execution. eval_runner and model_handler.utils
    # cannot be imported without the package's other dependencies, so these few lines are
    # copied from them verbatim in substance.
    import json, sys
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response

    def convert_to_function_call(function_call_list):
        if type(function_call_list) == dict:
            function_call_list = [function_call_list]
        execution_list = []
        for function_call in function_call_list:
            for key, value in function_call.items():
                if type(value) == str:
                    value = json.loads(value)
                execution_list.append(
                    f"{key}({','.join([f'{k}={repr(v)}' for k,v in value.items()])})"
                )
        return execution_list

    cases = json.load(sys.stdin)
    out = {}
    for case in cases:
        record, task, model = case["record"], case["task"], case["model"]
        result, gt = record["result"], task["ground_truth"]
        if type(result) != list:
            out[case["key"]] = {"valid": False, "error_type": "multi_turn:inference_error"}
            continue
        if len(result) != len(gt):
            out[case["key"]] = {"valid": False, "error_type": "multi_turn:force_terminated"}
            continue
        decoded = []
        for turn in result:
            steps = []
            for step in turn:
                try:
                    d = convert_to_function_call(step)
                    if is_empty_execute_response(d):
                        continue
                    steps.append(d)
                except Exception:
                    continue
            decoded.append(steps)
        r = multi_turn_checker(decoded, gt, task, task["id"].rsplit("_", 1)[0], model)
        out[case["key"]] = {"valid": r["valid"], "error_type": r.get("error_type")}
    json.dump(out, sys.stdout)
    """
)


def package_verdicts(cases: list[dict]) -> dict[str, dict]:
    proc = subprocess.run(
        [sys.executable, "-c", PACKAGE_SCRIPT],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, dict] = json.loads(proc.stdout)
    return result


# ---- 1. ground truth passes ---------------------------------------------------------------------


def test_ground_truth_passes_all_200_base_tasks() -> None:
    tasks = load_tasks()
    env = BFCLEnvironment()  # one environment for all: reset must give fresh instances
    failed = []
    for tid in task_ids("base"):
        record, _ = build_record(tasks[tid], perturb=False, state_log=False)
        trace = import_trace(record)
        assert sum(isinstance(e, ToolCall) for e in trace.events) >= 1
        verdict, details = replay_all(trace, env)
        if verdict is not True:
            failed.append((tid, details.get("error_type")))
        assert details["approximate"] == 0
    assert failed == []


@pytest.mark.parametrize("category", ["long_context", "miss_func", "miss_param"])
def test_ground_truth_passes_other_categories(category: str) -> None:
    tasks = load_tasks()
    env = BFCLEnvironment()
    failed = []
    for tid in task_ids(category, step=4):
        record, _ = build_record(tasks[tid], perturb=False, state_log=False)
        verdict, details = replay_all(import_trace(record), env)
        if verdict is not True:
            failed.append((tid, details.get("error_type")))
    assert failed == []


# ---- 2. perturbations fail with the package's error type ----------------------------------------


@pytest.mark.parametrize(
    ("tid", "kind", "error_type"),
    [
        ("multi_turn_base_0", "empty_turn", "multi_turn:empty_turn_model_response"),
        ("multi_turn_base_0", "force_terminated", "multi_turn:force_terminated"),
        ("multi_turn_base_3", "drop_call", None),
        ("multi_turn_base_0", "wrong_arg", None),
        ("multi_turn_base_100", "duplicate", None),
        ("multi_turn_base_120", "extra_arg", None),
    ],
)
def test_perturbed_calls_fail_with_the_package_error_type(
    tid: str, kind: str, error_type: str | None
) -> None:
    task = load_tasks()[tid]
    turns = next(
        t for seed in range(50) if (t := perturb(gt_calls(task), kind, random.Random(seed)))
    )
    verdict, details = replay_all(import_trace(record_from_turns(task, turns)))
    assert verdict is False
    assert details["error_type"] in (
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
        "multi_turn:empty_turn_model_response",
        "multi_turn:force_terminated",
    )
    if error_type is not None:
        assert details["error_type"] == error_type
    assert details["error_message"]
    json.dumps(details)  # JSON-ready


def test_dropping_a_state_changing_call_is_a_state_mismatch() -> None:
    task = load_tasks()["multi_turn_base_0"]
    gt = gt_calls(task)
    # turn 0 of base_0: cd('document'), mkdir('temp'), mv(...) — drop the mkdir
    turn = next(t for t, calls in enumerate(gt) if any(n == "mkdir" for n, _ in calls))
    gt[turn] = [c for c in gt[turn] if c[0] != "mkdir"]
    verdict, details = replay_all(import_trace(record_from_turns(task, gt)))
    assert verdict is False
    assert details["error_type"] == "multi_turn:instance_state_mismatch"
    assert details["turn"] == turn
    assert details["turns"][turn]["state"] == "mismatch"
    assert details["details"]["differences"]


def test_a_missing_read_is_a_response_mismatch() -> None:
    # A turn whose ground truth reads without changing state: skip the read.
    tasks = load_tasks()
    for tid in task_ids("base"):
        task = tasks[tid]
        gt = gt_calls(task)
        for t, calls in enumerate(gt):
            if len(calls) == 1 and calls[0][0] in ("cat", "ls", "pwd", "get_stock_info"):
                gt[t] = [("pwd", {}) if calls[0][0] != "pwd" else ("ls", {})]
                verdict, details = replay_all(import_trace(record_from_turns(task, gt)))
                assert verdict is False
                assert details["error_type"] == "multi_turn:execution_response_mismatch"
                assert details["details"]["missing_items"]
                return
    pytest.fail("no read-only turn found")


# ---- 3. shapes of real model output -------------------------------------------------------------


def test_extra_ls_calls_are_tolerated_like_the_package() -> None:
    task = load_tasks()["multi_turn_base_1"]
    gt = gt_calls(task)
    for calls in gt:
        calls.insert(0, ("ls", {}))
        calls.append(("ls", {"a": True}))
    verdict, details = replay_all(import_trace(record_from_turns(task, gt)))
    assert verdict is True, details  # ls changes no state; extra responses are allowed


def test_repeated_failing_calls_and_malformed_names_are_error_outcomes() -> None:
    task = load_tasks()["multi_turn_base_0"]
    trace = import_trace(record_from_turns(task, gt_calls(task)))
    env = BFCLEnvironment()
    env.reset(trace)
    bad = {"folder": "document", "unexpected_option": True}
    first = env.execute("cd", bad, turn=0)
    second = env.execute("cd", bad, turn=0)
    assert first == second
    assert first.status == "error"
    assert first.content == (
        "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument "
        "'unexpected_option'"
    )
    cases = {
        "functions.cd": "Error during execution: name 'functions' is not defined",
        "cd<|tool_call_end|>": "Error during execution: invalid syntax (<string>, line 1)",
        "cd()": "Error during execution: GorillaFileSystem.cd() missing 1 required positional "
        "argument: 'folder'",
        "no_such_tool": "Error during execution: name 'no_such_tool' is not defined",
        "exit": "Error during execution: Function call exit is not allowed.",
        "__import__('os').system": "Error during execution: not executed by the auditor: "
        "name '__import__' resolves inside the package",
        "": "Error during execution: invalid syntax. Maybe you meant '==' or ':=' instead of "
        "'='? (<string>, line 1)",
        "_load_scenario": "Error during execution: name '_load_scenario' is not defined",
    }
    for name, message in cases.items():
        out = env.execute(name, {"folder": "document"}, turn=0)
        assert out.status == "error"
        assert out.content == message, name
    assert env.execute("cd", {"folder": "document"}, turn=0).status == "ok"
    assert env.check() is False  # base_0's ground truth was not followed
    details = env.last_check_details()
    assert details is not None and details["approximate"] == 1  # only the __import__ call
    assert [c["approximate"] for c in env.calls if c.get("approximate")] == [True]
    json.dumps(env.state())
    json.dumps(env.calls)


def test_results_are_the_package_strings_and_json_ready() -> None:
    task = load_tasks()["multi_turn_base_0"]
    env = BFCLEnvironment()
    env.reset(import_trace(record_from_turns(task, gt_calls(task))))
    out = env.execute("ls", {}, turn=0)
    assert out.status == "ok" and json.loads(out.content) == {
        "current_directory_content": ["document", "archive"]
    }
    out = env.execute("cd", {"folder": "nowhere"}, turn=0)
    assert out.status == "error" and "No such file or directory" in out.content
    assert call_string("cd", {"folder": "a"}) == "cd(folder='a')"
    assert call_string("sort", {"_0": "x.pdf"}) == "sort('x.pdf')"


def test_strict_availability_refuses_hidden_functions() -> None:
    task = load_tasks()["multi_turn_miss_func_0"]  # sort is missed until turn 3
    trace = import_trace(record_from_turns(task, gt_calls(task)))
    package, strict = BFCLEnvironment(), BFCLEnvironment(availability="strict")
    for env in (package, strict):
        env.reset(trace)
    assert package.execute("sort", {"file_name": "x"}, turn=0).status == "error"  # no such file
    assert package.calls[-1]["hidden"].startswith("missed_function")
    out = strict.execute("sort", {"file_name": "x"}, turn=0)
    assert out.status == "error" and "not available" in out.content
    assert strict.calls[-1]["executed"] is False


def test_no_ground_truth_means_no_verdict() -> None:
    task = load_tasks()["multi_turn_base_0"]
    events = import_events(record_from_turns(task, gt_calls(task)))
    events[0] = {**events[0], "labels": {}}
    env = BFCLEnvironment()
    assert actor_outcome(Trace.from_events(events), env) is None
    assert env.last_check_details() is None


# ---- 4. fidelity: identical verdicts to the package's own checker -------------------------------


def _fidelity_cases() -> list[tuple[str, dict, dict, str]]:
    """(key, record, task, kind) for a sample of tasks × perturbations, plus bfcl_samples'
    perturbed records."""
    tasks = load_tasks()
    cases = []
    for category in CATEGORIES:
        for tid in task_ids(category, step=25):
            task = tasks[tid]
            gt = gt_calls(task)
            cases.append((f"{tid}:none", record_from_turns(task, gt), task, "none"))
            for k, kind in enumerate(KINDS):
                turns = perturb(gt, kind, random.Random(f"{tid}:{kind}"))
                if turns is not None:
                    rec = record_from_turns(task, turns, seed=k)
                    cases.append((f"{tid}:{kind}", rec, task, kind))
            for seed in range(3):
                record, chosen = build_record(task, seed=seed, perturb=True, state_log=False)
                if chosen:
                    cases.append((f"{tid}:samples{seed}", record, task, "+".join(chosen)))
    return cases


def test_verdicts_are_identical_to_the_package_checker() -> None:
    cases = _fidelity_cases()
    payload = []
    for n, (key, record, task, _) in enumerate(cases):
        payload.append({"key": key, "record": record, "task": task, "model": f"fid-{n}-FC"})
    reference = package_verdicts(payload)
    env = BFCLEnvironment()
    mismatches = []
    failing = 0
    for n, (key, record, _, kind) in enumerate(cases):
        verdict, details = replay_all(import_trace(record, model=f"fid-{n}-FC"), env)
        ours = {"valid": verdict, "error_type": details.get("error_type")}
        failing += verdict is False
        if ours != reference[key]:
            mismatches.append((key, kind, ours, reference[key]))
    assert mismatches == []
    assert len(cases) >= 400 and failing >= 200  # the sample exercises failures, not only passes


def test_checking_during_the_replay_or_from_scratch_gives_the_same_account() -> None:
    """check() runs the checker's turns alongside a replay (calls in turn order); a check in the
    middle of a replay makes the final check run from scratch on new worlds. Both give the same
    verdict, messages, details and per-turn account, on every fidelity case."""
    cases = _fidelity_cases()
    env, scratch = BFCLEnvironment(), BFCLEnvironment()
    differ = []
    for n, (key, record, _, _) in enumerate(cases):
        trace = import_trace(record, model=f"acc-{n}-FC")
        along = replay_all(trace, env)
        scratch.reset(trace)
        calls = [e for e in trace.events if isinstance(e, ToolCall)]
        for i, e in enumerate(calls):
            scratch.execute(e.name, dict(e.arguments), turn=e.turn)
            if i == 0:
                scratch.check()  # a check mid-way: the rest cannot be checked alongside
        if (scratch.check(), scratch.last_check_details() or {}) != along:
            differ.append(key)
    assert differ == []


def world_state(world) -> dict:  # type: ignore[no-untyped-def]
    """A world's public attributes per instance, as the package's state_checker compares them."""
    from policies.environments.bfcl import jsonable

    return {
        c: jsonable({k: v for k, v in vars(i).items() if not k.startswith("_")})
        for c, i in world.instances.items()
    }


def two_worlds(task: dict) -> tuple:
    """Two worlds of the task from the same snapshot of its initial state."""
    from policies.environments.bfcl import _World

    env = BFCLEnvironment()
    env.reset(import_trace(record_from_turns(task, gt_calls(task))))
    blob = env._initial_snapshot()
    return _World(pickle.loads(blob), "m_eval_x", {}), _World(pickle.loads(blob), "m_eval_x", {})


def test_direct_calls_match_the_evaluated_call_strings() -> None:
    """A decoded call whose text can only mean method(**arguments) is called directly instead
    of parsed and evaluated (_World.call); results, errors and state are the same as through
    the call string's AST (_World.run) — including argument mutation by the API."""
    tasks = load_tasks()
    direct = compared = 0
    for category in CATEGORIES:
        for tid in task_ids(category, step=10):
            task = tasks[tid]
            fast, slow = two_worlds(task)
            calls = [c for turn in gt_calls(task) for c in turn]
            extra = [("ls", {"a": 1}), ("cd", {"folder": "no(such"}), ("cd", {"from": "x"})]
            for name, args in calls + extra:
                text = call_string(name, args)
                got = fast.call(name, copy.deepcopy(args), text)
                assert got == slow.run(text), (tid, text)
                compared += 1
                direct += fast.has(name) and "(" not in json.dumps(args)
            assert world_state(fast) == world_state(slow), tid
    assert compared > 300 and direct > 200


def test_read_call_strings_match_the_evaluated_ones_on_every_ground_truth() -> None:
    """The checker's ground-truth calls, read as name(key=literal, …) and called directly
    (_World.run_text), give the results, errors and state of compiling and evaluating each
    string (_World.run): every ground-truth turn of every task of the four categories, in
    order, on two worlds from the same snapshot; plus strings the reader must leave alone."""
    from policies.environments.bfcl_calls import parse_call

    tasks = load_tasks()
    read = compared = 0
    odd = [
        "cd(folder='a(b')",  # the package's regex rewrites inside the string
        "cd(folder='x', folder='y')",  # SyntaxError: keyword argument repeated
        "cd(from='x')",  # SyntaxError: a keyword as the name
        "cd('x')",  # positional
        'cd(folder="it\'s")',
        "cd(folder='a\\'b')",  # an escape: left to the compiler
        "ls(a=True,b=None,c=[1,-2.5,[],['x',],],)",
        "ls(a=007)",  # SyntaxError: leading zeros
        "ls(a=1e3)",
        "ls(a=1) extra",
        " ls()",
        "rm(file_name='x')",
        "kill(x=1)",  # refused by name
        "nosuch(x=1)",
        "ls(a=" + "9" * 30 + ")",
    ]
    for category in CATEGORIES:
        for tid in task_ids(category, step=1):
            task = tasks[tid]
            fast, slow = two_worlds(task)
            texts = [c for turn in task["ground_truth"] for c in turn]
            for text in texts + (odd if tid.endswith("_0") else []):
                assert fast.run_text(text) == slow.run(text), (tid, text)
                compared += 1
                read += parse_call(text) is not None
            assert world_state(fast) == world_state(slow), tid
    assert compared > 4000 and read > 0.9 * compared
    assert parse_call("ls(a=True,b=None,c=[1,-2.5,[],['x',],],)") == (
        "ls",
        {"a": True, "b": None, "c": [1, -2.5, [], ["x"]]},
    )
    for text in ("cd('x')", "cd(folder='x', folder='y')", "ls(a=007)", "ls(a=1e3)", " ls()"):
        assert parse_call(text) is None, text


# ---- 5. isolation -------------------------------------------------------------------------------


def test_replays_are_isolated() -> None:
    tasks = load_tasks()
    task = tasks["multi_turn_base_0"]
    good = import_trace(record_from_turns(task, gt_calls(task)))
    env = BFCLEnvironment()
    first = replay_all(good, env)
    state_after = env.state()
    # A replay that wrecks the file system, on the same environment object …
    env.reset(good)
    env.execute("rm", {"file_name": "final_report.pdf"}, turn=0)
    env.execute("cd", {"folder": "document"}, turn=0)
    env.execute("rmdir", {"dir_name": "temp"}, turn=0)
    # … and another environment replaying the same task meanwhile
    other = BFCLEnvironment()
    assert replay_all(good, other) == first
    assert replay_all(good, env) == first
    assert env.state() == state_after
    env.reset(good)
    assert env.state() != state_after  # fresh instances at the initial state
    assert env.calls == []
    assert first[0] is True


def test_no_instances_in_module_globals() -> None:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    import policies.environments.bfcl as mod

    before = set(vars(multi_turn_utils))
    task = load_tasks()["multi_turn_base_0"]
    replay_all(import_trace(record_from_turns(task, gt_calls(task))))
    assert set(vars(multi_turn_utils)) == before
    assert not [k for k in vars(mod) if k.endswith("_instance")]


# ---- 6. TwinCheck spliced through the environment -----------------------------------------------


def test_twincheck_splices_through_the_environment() -> None:
    tasks = load_tasks()
    found = []
    for tid in task_ids("base", step=3):
        task = tasks[tid]
        gt = gt_calls(task)
        t = next(i for i, calls in enumerate(gt) if calls)
        name, args = gt[t][0]
        bad = {**args, "unexpected_option": True}
        gt[t][:0] = [(name, bad), (name, bad)]  # the same failing call, repeated
        events = import_events(record_from_turns(task, gt))
        results = audit_trace(events, policies=("twincheck",), environment=BFCLEnvironment())
        r = results["twincheck"]
        if r.continuation == "spliced":
            found.append(r)
            [d] = [d for d in r.record["decisions"] if d["gate"]["replace"]]
            assert d["certificate"]["name"] == "repeat_after_error"
            assert d["twin"]["name"] in BFCL_READ_ONLY and d["twin"]["name"] != name
            assert r.actor_success is True  # failed calls change nothing: the actor passes
            assert r.transition == "same"  # and a read in their place changes nothing either
            assert r.guarded_success in (True, False)
            assert r.transition in ("same", "harm", "rescue")
            executed = [e for e in r.guarded_trajectory or [] if e.get("meta", {}).get("executed")]
            assert executed and all(isinstance(e["content"], str) for e in executed)
            json.dumps(r.to_dict())
        if len(found) >= 3:
            break
    assert found, "TwinCheck accepted no twin on repeated failing BFCL calls"


def test_replay_passes_turns() -> None:
    task = load_tasks()["multi_turn_base_0"]
    trace = import_trace(record_from_turns(task, gt_calls(task)))
    env = BFCLEnvironment()
    actor_outcome(trace, env)
    recorded = [e.turn for e in trace.events if isinstance(e, ToolCall)]
    assert [c["turn"] for c in env.calls] == recorded
    per_turn = defaultdict(int)
    for c in env.calls:
        per_turn[c["turn"]] += 1
    details = env.last_check_details()
    assert details is not None
    assert [row["model_calls"] for row in details["turns"]] == [
        per_turn[t] for t in range(len(details["turns"]))
    ]


def test_unasked_brake_release_is_rescued_by_a_spliced_completion() -> None:
    """A real failure (gpt-oss runs, base_56): the model presses the brake,
    starts the engine, then releases the brake nobody asked to release; the ground truth keeps
    it pressed. inverse_action holds (BFCL table, argument-less target), the heuristic judge
    prefers the completion in both orders, and the splice through the package's checker turns
    the failure into a success."""
    task = load_tasks()["multi_turn_base_56"]
    gt = gt_calls(task)
    t = next(i for i, calls in enumerate(gt) if any(n == "startEngine" for n, _ in calls))
    gt[t].append(("releaseBrakePedal", {}))
    events = import_events(record_from_turns(task, gt))
    r = audit_trace(events, policies=("twincheck",), environment=BFCLEnvironment())["twincheck"]
    [d] = [d for d in r.record["decisions"] if d["gate"]["replace"]]
    assert d["certificate"]["name"] == "inverse_action" and d["certificate"]["table"] == "bfcl"
    assert d["certificate"]["pair"] == "brake pedal press/release"
    assert d["twin"]["kind"] == "completion" and d["call"]["name"] == "releaseBrakePedal"
    assert (r.actor_success, r.guarded_success, r.transition) == (False, True, "rescue")
    assert r.continuation == "spliced"
