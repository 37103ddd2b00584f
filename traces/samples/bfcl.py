"""Realistic BFCL multi-turn result files built from the `bfcl-eval` package's ground truth.

No real BFCL result file ships with the repo, so this builds them: the model "answers" each turn
with the ground-truth calls (one function-calling step per call, then a final text answer, as an
OpenAI-style FC handler records it), executed on fresh instances of the package's API classes so
the tool results and state snapshots are the real ones. With `perturb=True` some records also get
the faults real models produce:

- `extra_ls`: an unnecessary `ls()` before the turn's first call (file-system tasks);
- `repeated_failure`: the same failing call (an argument the function does not take) twice;
- `malformed_name`: a call whose function name is mangled (`functions.cd`, `cd<|tool_call_end|>`),
  which fails, followed by the correct call;
- `broken_arguments`: a turn's last call with a truncated JSON argument string; the handler cannot
  decode it, so (as in `base_handler.inference_multi_turn_FC`) the turn ends there.

Calls are parsed with `ast` and dispatched to whitelisted public methods — nothing is `eval`ed —
on instances that are created per record and never stored in module globals.

Used by the importer tests and to build the app's demo data::

    python -m traces.samples.bfcl OUT_DIR [--per-category N] [--seed S]
"""

from __future__ import annotations

import argparse
import copy
import importlib
import inspect
import json
import random
from pathlib import Path
from typing import Any

from traces.importers.bfcl import CATEGORIES, load_tasks, parse_call_string

MODEL = "trace-auditor-sample-FC"
PERTURBATIONS = ("extra_ls", "repeated_failure", "malformed_name", "broken_arguments")
ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"
STATELESS = {"MathAPI"}
FINAL_ANSWERS = (
    "I have completed your request.",
    "Done. Let me know if there is anything else I can help with.",
    "The requested operations have been carried out.",
)


def _instances(task: dict, long_context: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fresh instances of the task's classes and a name → bound method map of public methods."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    instances: dict[str, Any] = {}
    methods: dict[str, Any] = {}
    for class_name in task["involved_classes"]:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
        instance = cls()
        if class_name not in STATELESS:
            instance._load_scenario(
                copy.deepcopy(task.get("initial_config", {}).get(class_name, {})),
                long_context=long_context,
            )
        instances[class_name] = instance
        for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
            if not name.startswith("_"):
                methods[name] = method
    return instances, methods


def _jsonable(value: Any) -> Any:
    # Same rule as bfcl_eval.utils.make_json_serializable: str() what JSON cannot hold.
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _state_log(instances: dict[str, Any]) -> list[dict]:
    return [
        {
            "role": "state_info",
            "class_name": name,
            "content": {k: _jsonable(v) for k, v in vars(inst).items() if not k.startswith("_")},
        }
        for name, inst in instances.items()
        if name not in STATELESS
    ]


def _bind(method: Any, args: dict) -> dict:
    """Name positional ground-truth arguments (`sort('a.pdf')`) from the method's signature."""
    if not any(k.startswith("_") for k in args):
        return args
    params = [p for p in inspect.signature(method).parameters]
    out = {}
    for key, value in args.items():
        if key.startswith("_") and key[1:].isdigit() and int(key[1:]) < len(params):
            out[params[int(key[1:])]] = value
        else:
            out[key] = value
    return out


def _execute(methods: dict[str, Any], name: str, args: dict) -> str:
    """Run one call the way execute_multi_turn_func_call reports it (string result)."""
    method = methods.get(name)
    if method is None:
        return f"Error during execution: name '{name.split('.')[0].split('<')[0]}' is not defined"
    try:
        result = method(**args)
    except Exception as exc:  # the package reports any exception of the API as a string
        return f"Error during execution: {exc}"
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


def _decoded(name: str, args: dict) -> str:
    return f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"


class _Turn:
    """Accumulates one turn's result steps, inference log and metadata."""

    def __init__(self, query: list, rng: random.Random) -> None:
        self.steps: list = []
        self.log: dict = {"begin_of_turn_query": query}
        self.rng = rng
        self.input_tokens: list = []
        self.output_tokens: list = []
        self.latency: list = []

    def _meta(self) -> None:
        self.input_tokens.append(self.rng.randint(900, 4000))
        self.output_tokens.append(self.rng.randint(10, 120))
        self.latency.append(round(self.rng.uniform(0.4, 3.0), 3))

    def call(self, methods: dict, name: str, args: dict, raw_args: str | None = None) -> None:
        raw = raw_args if raw_args is not None else json.dumps(args)
        output = [{name: raw}]
        step = [{"role": "assistant", "content": output}]
        self.log[f"step_{len(self.steps)}"] = step
        self.steps.append(output)
        self._meta()
        step.append(
            {
                "role": "handler_log",
                "content": "Successfully decoded model response.",
                "model_response_decoded": [_decoded(name, args)],
            }
        )
        step.append({"role": "tool", "content": _execute(methods, name, args)})

    def broken_call(self, name: str, raw_args: str, error: str) -> None:
        output = [{name: raw_args}]
        self.log[f"step_{len(self.steps)}"] = [
            {"role": "assistant", "content": output},
            {
                "role": "handler_log",
                "content": "Error decoding the model response. Proceed to next turn.",
                "error": error,
            },
        ]
        self.steps.append(output)
        self._meta()

    def answer(self, text: str) -> None:
        self.log[f"step_{len(self.steps)}"] = [
            {"role": "assistant", "content": text},
            {
                "role": "handler_log",
                "content": "Error decoding the model response. Proceed to next turn.",
                "error": "'str' object has no attribute 'items'",
            },
        ]
        self.steps.append(text)
        self._meta()


def build_record(
    task: dict, *, seed: int = 0, perturb: bool = True, state_log: bool = True
) -> tuple[dict, list[str]]:
    """One result-file record for `task` (a multi-turn entry with `ground_truth`).

    Returns (record, perturbations applied). Deterministic for a given (task id, seed).
    """
    rng = random.Random(f"{task['id']}:{seed}")
    long_context = "long_context" in task["id"]
    instances, methods = _instances(task, long_context)
    chosen = [p for p in PERTURBATIONS if perturb and rng.random() < 0.35]
    if "extra_ls" in chosen and "ls" not in methods:
        chosen.remove("extra_ls")
    gt_turns = task["ground_truth"]
    # Each perturbation hits one turn that has ground-truth calls.
    call_turns = [t for t, calls in enumerate(gt_turns) if calls] or [0]
    where = {p: rng.choice(call_turns) for p in chosen}
    inference_log: list = []
    if state_log:
        inference_log.append(_state_log(instances))
    result, tokens_in, tokens_out, latency = [], [], [], []
    missed = task.get("missed_function") or {}
    for t, calls in enumerate(gt_turns):
        query = task["question"][t] if t < len(task["question"]) else []
        if str(t) in missed and not query:
            query = [{"role": "user", "content": ADDED_FUNCTIONS_PROMPT}]
        turn = _Turn(query, rng)
        parsed = [parse_call_string(c) for c in calls]
        ended = False
        for i, item in enumerate(parsed):
            if item is None:
                continue
            name, args = item
            method = methods.get(name)
            args = _bind(method, args) if method is not None else args
            if i == 0 and where.get("extra_ls") == t:
                turn.call(methods, "ls", {})
            if i == 0 and where.get("repeated_failure") == t:
                bad = {**args, "unexpected_option": True}
                turn.call(methods, name, bad)
                turn.call(methods, name, bad)
            if i == 0 and where.get("malformed_name") == t:
                mangled = rng.choice([f"functions.{name}", f"{name}<|tool_call_end|>", f"{name}()"])
                turn.call(methods, mangled, args)
            if i == len(parsed) - 1 and where.get("broken_arguments") == t:
                raw = json.dumps(args)
                broken = raw[: max(1, len(raw) - 2)]
                try:
                    json.loads(broken)
                    error = "Expecting value"
                except json.JSONDecodeError as exc:
                    error = str(exc)
                turn.broken_call(name, broken, error)
                ended = True
                break
            turn.call(methods, name, args)
        if not ended:
            turn.answer(rng.choice(FINAL_ANSWERS))
        result.append(turn.steps)
        inference_log.append(turn.log)
        tokens_in.append(turn.input_tokens)
        tokens_out.append(turn.output_tokens)
        latency.append(turn.latency)
        if state_log:
            inference_log.append(_state_log(instances))
    record = {
        "id": task["id"],
        "result": result,
        "input_token_count": tokens_in,
        "output_token_count": tokens_out,
        "latency": latency,
        "inference_log": inference_log,
    }
    return record, chosen


def generate(
    categories: tuple[str, ...] = CATEGORIES,
    per_category: int = 5,
    *,
    seed: int = 0,
    perturb: bool = True,
    state_log: bool = True,
) -> dict[str, list[dict]]:
    """Records per result-file name (`BFCL_v4_multi_turn_<category>_result.json`)."""
    tasks = load_tasks()
    files: dict[str, list[dict]] = {}
    for category in categories:
        prefix = f"multi_turn_{category}_"
        ids = sorted(
            (i for i in tasks if i.startswith(prefix) and i[len(prefix) :].isdigit()),
            key=lambda i: int(i[len(prefix) :]),
        )[:per_category]
        files[f"BFCL_v4_multi_turn_{category}_result.json"] = [
            build_record(tasks[i], seed=seed, perturb=perturb, state_log=state_log)[0] for i in ids
        ]
    return files


def write_samples(out_dir: Path, **kwargs: Any) -> list[Path]:
    """Write result files as the package lays them out: OUT/<model>/multi_turn/<file>."""
    target = Path(out_dir) / MODEL / "multi_turn"
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, records in generate(**kwargs).items():
        path = target / name
        with path.open("w") as f:
            for record in records:
                f.write(json.dumps(record) + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--per-category", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-perturb", action="store_true")
    parser.add_argument("--no-state-log", action="store_true")
    args = parser.parse_args(argv)
    for path in write_samples(
        args.out_dir,
        per_category=args.per_category,
        seed=args.seed,
        perturb=not args.no_perturb,
        state_log=not args.no_state_log,
    ):
        print(path)


if __name__ == "__main__":
    main()
