"""Executable environments for spliced replay (SPEC §4).

An environment resets to a trace's initial state, executes one call, exposes its state and
checks success against ground truth. The BFCL multi-turn environment lives elsewhere; this
module defines the interface and a tiny in-memory `ToyEnvironment` for tests and demos.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol

from ..trace import Trace


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    status: str  # "ok" | "error"
    content: Any


class Environment(Protocol):
    def reset(self, trace: Trace) -> None:
        """Return to the trace's initial state (fresh instances: nothing leaks between
        replays)."""
        ...

    def execute(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Execute one parsed call. Never evaluates strings."""
        ...

    def state(self) -> dict[str, Any]: ...

    def check(self) -> bool | None:
        """Success against ground truth, None when the environment has none."""
        ...


class ToyEnvironment:
    """A key-value world. Initial state: ``env.config.state`` of the trace header (or the
    constructor's ``state``); ground truth: ``env.config.goal``, a dict that must be a subset
    of the final state. Tools are interpreted by their verb (the name's first ``_`` part):

    - ``get``/``find``/``list``/``lookup``/``check`` (key) → the value, error if absent
    - ``set``/``update`` (key, value) → sets it
    - ``lock``/``unlock`` (key) → ``locked:<key>`` True/False, error if already so
    - ``add``/``remove`` (key, item) → list membership
    - ``create``/``delete`` (key) → presence
    ``fail`` in the config lists call names that always return an error.
    """

    def __init__(
        self, state: dict[str, Any] | None = None, goal: dict[str, Any] | None = None
    ) -> None:
        self._initial = copy.deepcopy(state or {})
        self._initial_goal = copy.deepcopy(goal)
        self._goal = goal
        self._state: dict[str, Any] = {}
        self._fail: set[str] = set()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def reset(self, trace: Trace) -> None:
        cfg = trace.header.env_config
        init = cfg.get("state")
        self._state = copy.deepcopy(init if isinstance(init, dict) else self._initial)
        goal = cfg.get("goal")
        # Nothing of the previous trace survives a reset: without a goal of its own a trace
        # gets the constructor's (usually none), never the last trace's.
        if isinstance(goal, dict):
            self._goal = goal
        else:
            self._goal = None if self._initial_goal is None else dict(self._initial_goal)
        fail = cfg.get("fail")
        self._fail = set(fail) if isinstance(fail, list) else set()
        self.calls = []

    def execute(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.calls.append((name, dict(arguments)))
        if name in self._fail:
            return ToolOutcome("error", f"{name} failed")
        verb = name.split("_", 1)[0]
        key = str(arguments.get("key", arguments.get("id", "")))
        st = self._state
        if verb in ("get", "find", "list", "lookup", "check"):
            if key not in st:
                return ToolOutcome("error", f"{key} not found")
            return ToolOutcome("ok", {key: st[key]})
        if verb in ("set", "update"):
            st[key] = arguments.get("value")
            return ToolOutcome("ok", {key: st[key]})
        if verb in ("lock", "unlock"):
            flag = f"locked:{key}"
            want = verb == "lock"
            if bool(st.get(flag)) == want:
                return ToolOutcome("error", f"{key} already {verb}ed")
            st[flag] = want
            return ToolOutcome("ok", {flag: want})
        if verb in ("add", "remove"):
            items = st.setdefault(key, [])
            item = arguments.get("item")
            if verb == "add":
                items.append(item)
            elif item in items:
                items.remove(item)
            else:
                return ToolOutcome("error", f"{item!r} not in {key}")
            return ToolOutcome("ok", {key: list(items)})
        if verb in ("create", "delete"):
            if verb == "create":
                st[key] = arguments.get("value", True)
            elif st.pop(key, None) is None:
                return ToolOutcome("error", f"{key} not found")
            return ToolOutcome("ok", {"key": key})
        return ToolOutcome("error", f"unknown tool {name}")

    def state(self) -> dict[str, Any]:
        return copy.deepcopy(self._state)

    def check(self) -> bool | None:
        if self._goal is None:
            return None
        return all(self._state.get(k) == v for k, v in self._goal.items())
