"""Live continuation on BFCL multi-turn (SPEC §4 ``live``; Dai & Huang 2026, §4: exact replay
only *until* the first accepted replacement, then the actor continues).

`continue_live(trace, prefix_events, replacement_events, environment, client)`:

1. The prefix is exact replay: its recorded calls bring a fresh environment to the recorded
   state, and its recorded messages, calls and results become the chat history the actor saw
   (`bfcl_protocol.prefix_history`).
2. The replacement is executed in place of the replaced call (a twin call joins the step the
   replaced call belonged to; a completion response ends the turn; a deletion leaves the step
   without the call, and the actor is asked again from there).
3. The actor model continues under BFCL's protocol (`bfcl_protocol`): each step, a
   chat-completions request with the task's tools; tool calls are executed in the
   environment and their results appended; a reply without tool calls — or one whose
   argument JSON the package could not decode — ends the turn; after the package's step
   limit the run is force-terminated. Later user turns are added only when a turn ends.
4. The guarded trajectory is then replayed once more through the environment, and BFCL's
   checker (`BFCLEnvironment.check`) decides success.

Returns ``(trajectory_events, success, calls)``: ``success`` is None when the continuation
could not finish (a failed model call, the budget, a trace without its task) — the last entry
of ``calls`` then says why. ``calls`` holds every model call's reference (with turn and step)
and, last, a ``bfcl_check`` entry with the checker's verdict details.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..environments.base import Environment, ToolOutcome
from ..trace import JsonDict, ToolCall, Trace, event_from_dict
from . import bfcl_protocol as proto
from .calls import ModelCall
from .client import ModelClient


def _execute(env: Environment, name: str, args: dict[str, Any], turn: int) -> ToolOutcome:
    if getattr(env, "accepts_turn", False):
        return env.execute(name, args, turn=turn)  # type: ignore[call-arg]
    return env.execute(name, args)


def _note(error: str, **extra: Any) -> JsonDict:
    return {
        "purpose": "live",
        "model": None,
        "cache_key": None,
        "tokens": 0,
        "error": error,
        **extra,
    }


class _Live:
    """The state of one continuation (see module docstring)."""

    def __init__(
        self, trace: Trace, env: Environment, client: ModelClient, tools: proto.TaskTools
    ) -> None:
        self.trace = trace
        self.env = env
        self.client = client
        self.tools = tools
        self.events: list[JsonDict] = []
        self.calls: list[JsonDict] = []
        self.history: list[JsonDict] = []
        self.stopped: str | None = None  # why the continuation could not finish
        self.force_quit = False

    def event(self, kind: str, turn: int, **fields: Any) -> JsonDict:
        meta = {"guarded": True, "live": True, **fields.pop("meta", {})}
        e: JsonDict = {"trace_id": self.trace.trace_id, "type": kind, **fields, "turn": turn}
        e["meta"] = meta
        self.events.append(e)
        return e

    def run_step(self, turn: int, calls: list[tuple[str, str, dict[str, Any]]]) -> None:
        """Execute one step's calls ((call id, name, arguments)) and append their results."""
        for cid, name, args in calls:
            out = _execute(self.env, name, args, turn)
            content = proto.result_text(out.content)
            self.history.append({"role": "tool", "content": content, "tool_call_id": cid})
            self.event("tool_result", turn, call_id=cid, status=out.status, content=content)

    def query(self, turn: int, step: int) -> ModelCall | None:
        tools = proto.openai_tools(self.tools.docs_at(turn))
        call = self.client.chat(self.history, purpose="live", tools=tools)
        self.calls.append({**call.ref(), "turn": turn, "step": step})
        if call.error is not None:
            self.stopped = call.error
            return None
        return call

    def play_turn(self, turn: int, steps: int) -> None:
        """The package's step loop from ``steps`` steps into ``turn``."""
        while self.stopped is None:
            call = self.query(turn, steps)
            if call is None:
                return
            msg = call.message
            out = call.tool_calls()
            assistant: JsonDict = {"role": "assistant", "content": msg.get("content")}
            if out:
                assistant["tool_calls"] = msg.get("tool_calls")
            self.history.append(assistant)
            if not out:  # a reply without tool calls ends the turn
                self.event(
                    "message",
                    turn,
                    role="assistant",
                    content=call.text,
                    meta={"step": steps, "cache_key": call.key},
                )
                return
            bad = any(tc.arguments_error is not None for tc in out)
            prefix = f"live.t{turn}.s{steps}"
            executed: list[tuple[str, str, dict[str, Any]]] = []
            for k, tc in enumerate(out):
                meta: JsonDict = {"step": steps, "cache_key": call.key, "tool_call_id": tc.id}
                if tc.arguments_error is not None:
                    meta.update(raw_arguments=tc.raw_arguments, arguments_error=tc.arguments_error)
                elif bad:
                    meta["not_executed"] = True  # the package decodes a step whole
                self.event(
                    "tool_call",
                    turn,
                    call_id=f"{prefix}.c{k}",
                    name=tc.name,
                    arguments=tc.arguments if tc.arguments_error is None else {},
                    meta=meta,
                )
                executed.append((tc.id, tc.name, tc.arguments or {}))
            if bad:  # "Error decoding the model response. Proceed to next turn."
                return
            # results carry the model's tool-call ids in the history, ours in the events
            for k, (tid, name, args) in enumerate(executed):
                out_k = _execute(self.env, name, args, turn)
                content = proto.result_text(out_k.content)
                self.history.append({"role": "tool", "content": content, "tool_call_id": tid})
                self.event(
                    "tool_result",
                    turn,
                    call_id=f"{prefix}.c{k}",
                    status=out_k.status,
                    content=content,
                )
            steps += 1
            if steps > proto.step_limit():
                self.force_quit = True
                return


def continue_live(
    trace: Trace,
    prefix_events: Sequence[JsonDict],
    replacement_events: Sequence[JsonDict],
    environment: Environment,
    client: ModelClient,
) -> tuple[list[JsonDict], bool | None, list[JsonDict]]:
    """See the module docstring."""
    prefix = list(prefix_events)
    replacement = list(replacement_events)
    head = trace.header
    task = head.raw.get("task") if isinstance(head.raw.get("task"), dict) else {}
    questions = task.get("question") if isinstance(task, dict) else None
    cfg = head.env_config
    if head.env_name != "bfcl" or not isinstance(questions, list):
        why = "live continuation needs a BFCL trace whose header holds the task's questions"
        return prefix + replacement, None, [_note(why)]
    missed = cfg.get("missed_function") if isinstance(cfg.get("missed_function"), dict) else {}
    classes = [str(c) for c in cfg.get("involved_classes") or []]
    try:
        tools = proto.task_tools(classes, missed or {})
    except (KeyError, OSError) as exc:
        return prefix + replacement, None, [_note(f"no BFCL function docs for {exc}")]
    holdout = {int(t) for t in (missed or {}) if str(t).isdigit()}

    live = _Live(trace, environment, client, tools)
    # 1. exact replay of the prefix, on a world that knows no recorded calls
    environment.reset(Trace.from_events([head.raw]))
    hist = proto.prefix_history(prefix, holdout)
    live.history = hist.messages
    pending_ids = {c.call_id for c in hist.pending}
    for raw in prefix:
        e = event_from_dict(raw)
        if isinstance(e, ToolCall) and not proto.not_decoded(e) and e.call_id not in pending_ids:
            _execute(environment, e.name, dict(e.arguments), e.turn or 0)
    turn = hist.turn
    for r in replacement:
        if isinstance(r.get("turn"), int):
            turn = r["turn"]
    steps = hist.steps

    # 2. the replacement, in the replaced call's step
    step_calls = [
        (c.call_id, c.name, dict(c.arguments), proto.arguments_text(c)) for c in hist.pending
    ]
    twin_calls = [r for r in replacement if r.get("type") == "tool_call"]
    ends_turn = any(
        r.get("type") == "message" and r.get("role") == "assistant" for r in replacement
    )
    for r in twin_calls:
        args = r.get("arguments") if isinstance(r.get("arguments"), dict) else {}
        cid = str(r.get("call_id", ""))
        step_calls.append((cid, str(r.get("name", "")), dict(args or {}), proto.json_text(args)))
    if step_calls:
        live.history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                    for cid, n, _, a in step_calls
                ],
            }
        )
        live.run_step(turn, [(cid, n, args) for cid, n, args, _ in step_calls])
        steps += 1
        live.force_quit = steps > proto.step_limit()
    for r in replacement:
        if r.get("type") == "message" and r.get("role") == "assistant":
            live.history.append({"role": "assistant", "content": str(r.get("content", ""))})

    # 3. the actor continues: the rest of this turn, then each later turn
    if not ends_turn and not live.force_quit:
        live.play_turn(turn, steps)
    for t in range(turn + 1, len(questions)):
        if live.stopped is not None or live.force_quit:
            break
        msgs = questions[t] if isinstance(questions[t], list) else []
        if t in holdout:
            msgs = [{"role": "user", "content": proto.added_functions_prompt()}]
        for m in msgs:
            if isinstance(m, dict):
                role = str(m.get("role", "user"))
                content = str(m.get("content", ""))
                live.history.append({"role": role, "content": content})
                live.event("message", t, role=role, content=content, meta={"source": "task"})
        live.play_turn(t, 0)

    trajectory = prefix + replacement + live.events
    if live.stopped is not None:
        return trajectory, None, live.calls
    # 4. BFCL's checker on the guarded trajectory, replayed on fresh instances
    final = Trace.from_events(trajectory)
    environment.reset(final)
    for e in final.events:
        if isinstance(e, ToolCall):
            _execute(environment, e.name, dict(e.arguments), e.turn or 0)
    success = environment.check()
    details_fn = getattr(environment, "last_check_details", None)
    details = details_fn() if callable(details_fn) else None
    check: JsonDict = {
        "purpose": "bfcl_check",
        "valid": success,
        "force_terminated": live.force_quit,
    }
    if isinstance(details, dict):
        check.update({k: details.get(k) for k in ("error_type", "error_message", "turn")})
    return trajectory, success, [*live.calls, check]
