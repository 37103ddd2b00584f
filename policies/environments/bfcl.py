"""BFCL multi-turn as an executable environment (SPEC §4), through the `bfcl-eval` package.

`BFCLEnvironment` replays a BFCL multi-turn trace (as the BFCL importer writes it: header
``env.config`` = initial_config, involved_classes, excluded/missed functions, long-context flag;
``labels.ground_truth``; every event carries its ``turn``) on the package's own API classes and
judges it with the package's own checker logic, so that replaying a run's recorded calls gives
the run's recorded verdict.

What the package does, and what this module does instead:

- The package executes a call by building ``name(k=repr(v), …)`` (the FC handler's
  ``convert_to_function_call``), prefixing known method names with an instance variable name
  (``multi_turn_utils._process_method_calls``), refusing a few names, and ``eval``-ing the string
  with the instances kept in the module's globals (keyed by model name and test id). Here the same
  string is built and prefixed (with the package's own function), refused by the same rule, then
  *compiled to an AST only* and interpreted by a small evaluator that knows nothing but the
  task's fresh instances, their public methods and Python literals. A string that can only mean
  ``method(**arguments)`` (a decoded call with plain arguments; a ground-truth string that reads
  as ``name(key=literal, …)``, `bfcl_calls`) calls the method directly, with the same outcome.
  So results, error messages ("Error during execution: …", including SyntaxError/NameError/
  TypeError texts for malformed names) and state changes are the package's, and nothing is
  ever evaluated. Expressions the
  evaluator cannot reproduce without eval (a call of a builtin or of a name of the package's
  module, attribute access on a result, ``**kwargs``) are not executed: the call gets an error
  outcome and the verdict is marked ``approximate``.
- The package's ``multi_turn_checker`` executes through that eval path, so it is mirrored here
  step for step (force-terminated and inference-error checks of ``eval_runner``, then per turn:
  execute the model's calls and the ground truth on fresh instances, empty-turn check, then the
  package's own ``state_checker`` and ``response_checker`` functions, which are called directly).
- Every ``reset`` (and every check) gets new instances, restored from a pickled snapshot of the
  task's initial state that the environment keeps; no instance lives in module globals, so one
  replay never sees another's state. The checker's turns run alongside a replay whose calls
  come in turn order (``_TurnChecker``), so a check does not execute the calls a second time.

Whitelist: public (not ``_``-prefixed) bound methods of the task's involved classes, exactly the
package's ``class_method_name_mapping``. The package neither hides ``excluded_function`` nor
missed functions from execution (only from the prompt), so by default neither does this module
(``availability="package"``, for fidelity); ``availability="strict"`` refuses them.

Worlds and the executor of call strings are `bfcl_world`'s; this module holds the environment
and the checker's turns. No Django here (SPEC §2); the package is imported when an environment
is built.
"""

from __future__ import annotations

import copy
import json
import pickle
from dataclasses import dataclass
from typing import Any, Literal

from ..outcome_gaps import task_drift_reason
from ..trace import JsonDict, ToolCall, Trace
from .base import ToolOutcome
from .bfcl_world import (
    ERROR_PREFIX,
    _initial_instances,
    _Layout,
    _layout,
    _package,
    _World,
    call_string,
    jsonable,
    outcome_status,
)

# Initial-state snapshots one environment keeps (a few KB each; a run revisits tasks).
SNAPSHOTS_KEPT = 256
NOT_DECODED = (
    "Not executed: the package could not decode this step's arguments, so it neither executed "
    "nor scored its calls"
)


@dataclass(slots=True)
class _Recorded:
    turn: int | None
    name: str
    arguments: dict[str, Any]
    not_decoded: bool
    key: str | None = None  # _canon(arguments), once needed

    def same_arguments(self, args: dict[str, Any], key: str | None) -> tuple[bool, str | None]:
        """(whether ``args`` are this call's arguments as canonical JSON, ``args``' canonical
        JSON if it had to be computed). A replay passes a copy of the recorded dict holding
        the very same values, which needs no serialising."""
        mine = self.arguments
        if mine.keys() == args.keys() and all(v is args[k] for k, v in mine.items()):
            return True, key
        if self.key is None:
            self.key = _canon(mine)
        key = key or _canon(args)
        return self.key == key, key


def _canon(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)


def _check_turn(
    t: int,
    gt_calls: list[str],
    texts: list[str],
    model_results: list[str],
    model: _World,
    truth: _World,
    all_model: list[str],
    turns: list[JsonDict],
) -> JsonDict | None:
    """One turn of multi_turn_checker, the model's calls of the turn already executed on
    ``model`` (their results ``model_results``): execute the ground truth's on ``truth``, then the
    empty-turn, state and response checks. The failure, or None; appends the turn's row."""
    checker, _, _, _ = _package()
    gt_results = [truth.run_text(x)[0] for x in gt_calls]
    all_model.extend(model_results)
    row: JsonDict = {
        "turn": t,
        "model_calls": len(texts),
        "ground_truth_calls": len(gt_calls),
        "state": "skipped",
        "response": "skipped",
    }
    turns.append(row)
    if gt_calls and not texts:
        row["state"] = row["response"] = "not_checked"
        return {
            "turn": t,
            "error_type": "multi_turn:empty_turn_model_response",
            "error_message": f"Model response list is empty for turn {t}",
            "details": {"model": [], "ground_truth": gt_results},
        }
    if not gt_calls:
        return None
    state = checker.state_checker(model.instances, truth.instances)
    if not state["valid"]:
        row["state"], row["response"] = "mismatch", "not_checked"
        return {
            "turn": t,
            "error_type": state["error_type"],
            "error_message": state["error_message"],
            "details": {"differences": jsonable(state["details"]["differences"])},
        }
    row["state"] = "ok"
    response = checker.response_checker(all_model, gt_results, t)
    if not response["valid"]:
        row["response"] = "mismatch"
        return {
            "turn": t,
            "error_type": response["error_type"],
            "error_message": response["error_message"],
            "details": {"missing_items": jsonable(response["details"]["missing_items"])},
        }
    row["response"] = "ok"
    return None


class _TurnChecker:
    """The checker's turn loop run alongside a replay, on the replay's own world: when the
    calls come in turn order (a replay's always do), the world at the first call of turn t+1 is
    the checker's model world at the end of turn t, and the results are the ones the checker's
    re-execution would get. So turn t is checked then, against a ground-truth world advanced
    turn by turn, and ``check`` needs no second model world nor a second execution of every
    call. A call of an earlier (closed) turn, of a turn past the ground truth, or after a check
    drops it; ``check`` then runs the checker from scratch (the same function per turn)."""

    def __init__(self, ground_truth: list[list[str]]) -> None:
        self.gt = ground_truth
        self.truth: _World | None = None
        self.closed = 0  # turns below this one are checked
        self.turns: list[JsonDict] = []
        self.all_model: list[str] = []
        self.results: dict[int, list[str]] = {}
        self.failure: JsonDict | None = None
        self.finished = False

    def accepts(self, turn: int) -> bool:
        return not self.finished and self.closed <= turn < len(self.gt)

    def close(self, until: int, env: BFCLEnvironment) -> None:
        """Check the turns below ``until``: the world's state now is their end state."""
        while self.closed < until:
            t = self.closed
            if self.failure is None:  # the checker stops at the first failing turn
                if self.truth is None:
                    self.truth = env._new_world("_ground_truth")
                assert env._world is not None
                self.failure = _check_turn(
                    t,
                    self.gt[t],
                    env._turn_calls.get(t, []),
                    self.results.get(t, []),
                    env._world,
                    self.truth,
                    self.all_model,
                    self.turns,
                )
            self.closed += 1


class BFCLEnvironment:
    """The `Environment` protocol over a BFCL multi-turn task.

    ``execute(name, arguments, turn=None)`` runs one parsed call (``turn``: the user turn it
    belongs to; without it the turn of the matching recorded call, else the current turn) and
    returns ``ToolOutcome(status, content)`` with the package's result string as content.
    ``check()`` is the package's verdict on the calls executed since ``reset``;
    ``last_check_details()`` its error type, message and per-turn account.
    """

    accepts_turn = True  # policies.replay passes each call's turn

    def __init__(
        self,
        *,
        availability: Literal["package", "strict"] = "package",
        model_name: str | None = None,
    ) -> None:
        if availability not in ("package", "strict"):
            raise ValueError(f"availability must be 'package' or 'strict', not {availability!r}")
        _package()  # ImportError now rather than mid-audit when bfcl-eval is not installed
        self.availability = availability
        self._model_name = model_name
        self._trace_id = ""
        self._task_id = ""
        self._category = ""
        self._model = "model"
        self._classes: list[str] = []
        self._initial: dict[str, Any] = {}
        self._long_context = False
        self._ground_truth: list[list[str]] | None = None
        self._excluded: set[str] = set()
        self._available_from: dict[str, int] = {}
        self._n_turns = 0
        self._inference_error: str | None = None
        self._problem: str | None = None
        self._world: _World | None = None
        self._snapshots: dict[tuple[Any, ...], bytes] = {}
        self._blob: bytes | None = None  # the current task's, once asked for
        self._initial_json: tuple[Any, str] = (None, "")  # (initial config, its JSON)
        self._parsed: dict[tuple[str, str], Any] = {}  # (instance names, call string) → AST
        self._parsed_for: tuple[str, str] = ("", "")  # the (model, task id) they belong to
        self._layouts: dict[tuple[str, tuple[str, ...]], _Layout] = {}  # theirs too
        self._read: dict[str, tuple[str, dict[str, Any]] | None] = {}  # for every task
        self._turn_check: _TurnChecker | None = None
        self._recorded: list[_Recorded] = []
        self._cursor = 0
        self._turn = 0
        self._turn_calls: dict[int, list[str]] = {}
        self._approximate = 0
        self._details: JsonDict | None = None
        self._verdict: bool | None = None
        self._checked = False
        self.calls: list[JsonDict] = []

    # -- protocol -------------------------------------------------------------------------------

    def reset(self, trace: Trace) -> None:
        h = trace.header
        cfg = h.env_config
        self._trace_id = trace.trace_id
        self._task_id = h.task_id
        self._category = h.category or self._task_id.rsplit("_", 1)[0]
        self._model = self._model_name or h.model or "model"
        classes = cfg.get("involved_classes")
        self._classes = [str(c) for c in classes] if isinstance(classes, list) else []
        initial = cfg.get("initial_config")
        self._initial = initial if isinstance(initial, dict) else {}
        flag = cfg.get("long_context")
        self._long_context = (
            flag
            if isinstance(flag, bool)
            else ("long_context" in self._category or "composite" in self._category)
        )
        gt = h.labels.get("ground_truth")
        self._ground_truth = (
            [[str(c) for c in turn] for turn in gt if isinstance(turn, list)]
            if isinstance(gt, list) and all(isinstance(turn, list) for turn in gt)
            else None
        )
        excluded = cfg.get("excluded_function")
        self._excluded = {str(f) for f in excluded} if isinstance(excluded, list) else set()
        missed = cfg.get("missed_function")
        self._available_from = {}
        if isinstance(missed, dict):
            for turn, names in missed.items():
                if str(turn).isdigit() and isinstance(names, list):
                    for n in names:
                        if isinstance(n, str):
                            self._available_from[n] = int(turn)
        error = h.meta.get("inference_error")
        self._inference_error = error if isinstance(error, str) else None
        turns = [e.turn for e in trace.events if e.turn is not None and e.type != "trace"]
        # Turns as recorded (the importer numbers every result turn); a trace without turn
        # numbers is one turn, a trace with no event besides its header has none.
        body = any(e.type != "trace" for e in trace.events)
        self._n_turns = max(turns) + 1 if turns else int(body and not self._inference_error)
        self._recorded = [
            _Recorded(
                e.turn,
                e.name,
                e.arguments,
                bool(e.meta.get("arguments_error") or e.meta.get("not_executed")),
            )
            for e in trace.events
            if isinstance(e, ToolCall)
        ]
        self._cursor = 0
        self._turn = 0
        self._turn_calls = {}
        self._approximate = 0
        self.calls = []
        self._invalidate()
        self._problem = None
        self._world = None
        self._blob = None
        if self._parsed_for != (self._model, self._task_id):
            # Keys carry the instance names (model, task id): a replay of the same task
            # (TwinCheck's splice after the actor's) reuses the parses, another never would.
            self._parsed = {}
            self._layouts = {}
            self._parsed_for = (self._model, self._task_id)
        if h.env_name and h.env_name != "bfcl":
            self._problem = f"not a BFCL trace (env.name = {h.env_name!r})"
        elif (drift := task_drift_reason(h)) is not None:
            self._problem = drift  # never scored against a task the run was not made on
        elif not self._classes:
            self._problem = "the trace header names no involved classes (env.config)"
        else:
            try:
                self._world = self._new_world()
            except KeyError as exc:
                self._problem = f"unknown BFCL class {exc.args[0]!r}"
        gt = self._ground_truth
        self._turn_check = (
            _TurnChecker(gt)
            if self._world is not None
            and gt is not None
            and self._inference_error is None
            and self._n_turns == len(gt)
            else None
        )

    def execute(self, name: str, arguments: dict[str, Any], turn: int | None = None) -> ToolOutcome:
        self._invalidate()
        args = dict(arguments) if isinstance(arguments, dict) else {}
        recorded = self._match(name, args, turn)
        if turn is None:
            turn = recorded.turn if recorded is not None and recorded.turn is not None else None
        turn = self._turn if turn is None else turn
        self._turn = max(self._turn, turn)
        record: JsonDict = {"turn": turn, "name": name, "arguments": args}
        self.calls.append(record)
        if self._world is None:
            record.update(executed=False, status="error")
            return ToolOutcome("error", f"{ERROR_PREFIX}{self._problem or 'no task loaded'}")
        if recorded is not None and recorded.not_decoded:
            record.update(executed=False, status="error", not_decoded=True)
            return ToolOutcome("error", NOT_DECODED)
        hidden = self._hidden(name, turn)
        if hidden:
            record["hidden"] = hidden
            if self.availability == "strict":
                record.update(executed=False, status="error")
                return ToolOutcome("error", f"{ERROR_PREFIX}{name} is not available: {hidden}")
        text = call_string(name, args)
        if self._turn_check is not None:
            if self._turn_check.accepts(turn):
                self._turn_check.close(turn, self)
            else:
                self._turn_check = None
        content, faithful = self._world.call(name, args, text)
        if self._turn_check is not None:
            self._turn_check.results.setdefault(turn, []).append(content)
        status = outcome_status(content)
        self._turn_calls.setdefault(turn, []).append(text)
        record.update(executed=True, call=text, status=status)
        if not faithful:
            record["approximate"] = True
            self._approximate += 1
        return ToolOutcome(status, content)

    def state(self) -> dict[str, Any]:
        if self._world is None:
            return {}
        return {
            name: {k: jsonable(v) for k, v in vars(inst).items() if not k.startswith("_")}
            for name, inst in self._world.instances.items()
        }

    def check(self) -> bool | None:
        if not self._checked:
            self._details = self._run_checker()
            valid = self._details.get("valid") if self._details is not None else None
            self._verdict = valid if isinstance(valid, bool) else None
            self._checked = True
        return self._verdict

    def last_check_details(self) -> JsonDict | None:
        """The last `check()`'s result: ``valid``, and when invalid ``error_type`` /
        ``error_message`` as the package names them, ``turn`` (the failing turn), ``details``
        (state differences or missing responses, JSON-ready); always ``turns`` (per turn: calls
        executed, ground-truth calls, ``state``/``response`` = ok, mismatch, skipped (no
        ground truth that turn), not_checked) and ``approximate`` (calls the package would
        have eval-ed in a way not reproduced here). None before any check or without ground
        truth."""
        return copy.deepcopy(self._details)

    # -- internals ------------------------------------------------------------------------------

    def _invalidate(self) -> None:
        self._checked = False
        self._details = None
        self._verdict = None

    def _new_world(self, suffix: str = "") -> _World:
        # The package's instance variable names: f"{model}[_ground_truth]_eval_{test id}_…"
        # (they only matter where its regex rewrites "name(" inside string arguments).
        instances = pickle.loads(self._initial_snapshot())  # noqa: S301 — our own bytes, see below
        prefix = f"{self._model}{suffix}_eval_{self._task_id}"
        key = (prefix, tuple(instances))
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = _layout(prefix, instances)
        return _World(instances, prefix, self._parsed, layout, self._read)

    def _initial_snapshot(self) -> bytes:
        """The task's instances at their initial state, pickled once per initial state: every
        world of a replay and of its checks (and of other traces of the same task) is restored
        from these bytes — eight times faster than instantiating and loading the scenario
        again, and the same state (the fidelity tests compare verdicts with the package's).
        Kept per environment, last used first, never in module globals."""
        if self._blob is not None:
            return self._blob
        # The initial state's JSON once per header: TwinCheck's second replay of the trace
        # resets with the same one.
        initial, text = self._initial_json
        if initial is not self._initial:
            text = json.dumps(self._initial, sort_keys=True, default=repr)
            self._initial_json = (self._initial, text)
        key = (tuple(self._classes), self._long_context, text)
        blob = self._snapshots.pop(key, None)
        if blob is None:
            instances = _initial_instances(self._classes, self._initial, self._long_context)
            blob = pickle.dumps(instances, protocol=pickle.HIGHEST_PROTOCOL)
        self._snapshots[key] = blob
        while len(self._snapshots) > SNAPSHOTS_KEPT:
            del self._snapshots[next(iter(self._snapshots))]
        self._blob = blob
        return blob

    def _match(self, name: str, args: dict[str, Any], turn: int | None) -> _Recorded | None:
        """The next recorded call this execution replays (the replay executes recorded calls
        in order, with replacements in between)."""
        key = None
        for i in range(self._cursor, len(self._recorded)):
            r = self._recorded[i]
            if turn is not None and r.turn is not None and r.turn > turn:
                return None
            if r.name != name or (turn is not None and r.turn is not None and r.turn != turn):
                continue
            same, key = r.same_arguments(args, key)
            if same:
                self._cursor = i + 1
                return r
        return None

    def _hidden(self, name: str, turn: int) -> str | None:
        if name in self._excluded:
            return "excluded_function"
        start = self._available_from.get(name)
        if start is not None and turn < start:
            return f"missed_function (available from turn {start})"
        return None

    def _run_checker(self) -> JsonDict | None:
        """eval_runner._evaluate_single_multi_turn_entry + multi_turn_checker, with this
        module's executor in place of execute_multi_turn_func_call (which evaluates strings)."""
        gt = self._ground_truth
        if gt is None or self._problem is not None:
            return None
        turns: list[JsonDict] = []
        base: JsonDict = {"approximate": self._approximate, "turns": turns}
        if self._inference_error is not None:
            return {
                **base,
                "valid": False,
                "error_type": "multi_turn:inference_error",
                "error_message": "Error during inference phase. Model did not output a list "
                "of model responses.",
                "turn": None,
            }
        if self._n_turns != len(gt):
            return {
                **base,
                "valid": False,
                "error_type": "multi_turn:force_terminated",
                "error_message": "Model was force-terminated during inference phase. The length "
                f"of the model result turns ({self._n_turns}) does not match the length of the "
                f"ground truth turns ({len(gt)}).",
                "turn": None,
            }
        inc = self._turn_check
        failure: JsonDict | None
        if inc is not None:
            inc.close(len(gt), self)
            inc.finished = True
            turns.extend(inc.turns)
            failure = inc.failure
        else:
            model = self._new_world()
            truth = self._new_world("_ground_truth")
            all_model: list[str] = []
            failure = None  # the checker from scratch: calls not in turn order, or re-checked
            for t, gt_calls in enumerate(gt):
                texts = self._turn_calls.get(t, [])
                results = [model.run_text(x)[0] for x in texts]
                failure = _check_turn(t, gt_calls, texts, results, model, truth, all_model, turns)
                if failure is not None:
                    break
        if failure is None:
            return {**base, "valid": True}
        for t in range(len(turns), len(gt)):
            turns.append(
                {
                    "turn": t,
                    "model_calls": len(self._turn_calls.get(t, [])),
                    "ground_truth_calls": len(gt[t]),
                    "state": "not_checked",
                    "response": "not_checked",
                }
            )
        return {**base, "valid": False, **failure}
