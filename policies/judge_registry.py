"""Judge backends by name (SPEC §4 "Judges"): ``heuristic`` (offline default), ``recorded``,
``human``, and model backends that register themselves.

A backend is a factory ``(**options) -> Judge``. Built-in backends are registered here; a
backend in its own module either calls `register_judge` when imported, or is named in
`BACKEND_MODULES` as ``"module:attribute"`` so that `make_judge` imports it on first use (so
``import policies`` does not import HTTP clients, and `policies.judges` imports no backend).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from .heuristic_judge import HeuristicJudge
from .judges import HumanJudge, Judge, RecordedJudge

JudgeFactory = Callable[..., Judge]
JudgeSpec = str | Judge | None

_FACTORIES: dict[str, JudgeFactory] = {}
_ALIASES: dict[str, str] = {}

#: Backends imported on first use: name → "module:factory" (``llm`` is registered below with
#: a function-level import instead, and ``openai`` is its old name, kept as an alias).
BACKEND_MODULES: dict[str, str] = {}


def register_judge(name: str, factory: JudgeFactory, *, aliases: Iterable[str] = ()) -> None:
    """Make ``make_judge(name, **options)`` return ``factory(**options)``; ``aliases`` name
    the same backend (a later registration of a name or alias replaces the earlier one)."""
    _FACTORIES[name] = factory
    _ALIASES.pop(name, None)
    for alias in aliases:
        _ALIASES[alias] = name
        _FACTORIES.pop(alias, None)


def judge_names() -> list[str]:
    """Every name `make_judge` accepts (registered, aliases and lazily imported)."""
    return sorted(set(_FACTORIES) | set(_ALIASES) | set(BACKEND_MODULES))


def _factory(name: str) -> JudgeFactory:
    name = _ALIASES.get(name, name)
    if name in _FACTORIES:
        return _FACTORIES[name]
    target = BACKEND_MODULES.get(name)
    if target is None:
        raise ValueError(f"unknown judge backend {name!r}; choose from {', '.join(judge_names())}")
    module, _, attr = target.partition(":")
    loaded = importlib.import_module(module)
    name = _ALIASES.get(name, name)
    if name in _FACTORIES:  # the module registered itself
        return _FACTORIES[name]
    factory: JudgeFactory = getattr(loaded, attr)
    _FACTORIES[name] = factory
    return factory


def make_judge(spec: JudgeSpec, **options: Any) -> Judge:
    """A judge from a backend name (options go to its factory) or an instance (returned as
    is); None means ``heuristic``."""
    if spec is None:
        spec = "heuristic"
    if not isinstance(spec, str):
        return spec
    return _factory(spec)(**options)


def _llm(**options: Any) -> Judge:
    """The ``llm`` judge (`policies.llm.judge`), imported on first use: it brings the HTTP
    client stack, which an offline audit never needs."""
    # In the function: the HTTP client stack is for model-backed runs only.
    from .llm.judge import make_llm_judge

    return make_llm_judge(options)


register_judge("heuristic", HeuristicJudge)
register_judge("llm", _llm, aliases=("openai",))
register_judge("recorded", RecordedJudge)
register_judge("human", lambda verdicts=None: HumanJudge(verdicts or {}))
