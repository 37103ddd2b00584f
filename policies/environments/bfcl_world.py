"""BFCL worlds: a task's API instances and the executor of call strings on them, as the
`bfcl-eval` package executes them (`bfcl`'s module docstring: what the package does, and
what is done here instead) — with the package's method → instance-variable mapping, its
refusals and its result strings, and nothing ever evaluated.

A world runs a call string by prefixing, compiling to an AST and interpreting it (`_World.run`);
a call that can only mean ``method(**arguments)`` calls the method directly instead: a decoded
call with plain arguments (`_World.call`), a string that reads as ``name(key=literal, …)``
(`_World.run_text`, `bfcl_calls`). No Django here; the package is imported on first use.
"""

from __future__ import annotations

import ast
import builtins
import copy
import importlib
import inspect
import json
import keyword
import math
import re
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

from .bfcl_calls import parse_call

ERROR_PREFIX = "Error during execution: "
REPR_LIMIT = 10_000
# Call strings one environment keeps read (BFCL's ground truth has ~700 distinct ones).
CALLS_READ_KEPT = 4096
# multi_turn_utils.execute_multi_turn_func_call refuses these names before eval.
BLOCKED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
# Locals of execute_multi_turn_func_call at eval time: a call of one of these names resolves to
# the package's own objects under eval, which this module does not reproduce.
_PACKAGE_LOCALS = frozenset(
    "func_call_list initial_config involved_classes model_name test_entry_id long_context "
    "is_evaL_run class_method_name_mapping involved_instances class_name module_name "
    "instance_name class_instance method_name method execution_results func_call "
    "func_call_copy module class_ e".split()
)
_POSITIONAL = re.compile(r"_\d+").fullmatch  # call_string writes these positionally


class _Unsupported(Exception):
    """An expression the package evaluates with Python's eval but this module does not."""


@cache
def _package() -> tuple[Any, Any, dict[str, str], frozenset[str]]:
    """The package's checker and utils modules, class paths and stateless classes."""
    from bfcl_eval.constants.executable_backend_config import (  # type: ignore[import-untyped]
        CLASS_FILE_PATH_MAPPING,
        STATELESS_CLASSES,
    )
    from bfcl_eval.eval_checker.multi_turn_eval import (  # type: ignore[import-untyped]
        multi_turn_checker,
        multi_turn_utils,
    )

    return (
        multi_turn_checker,
        multi_turn_utils,
        dict(CLASS_FILE_PATH_MAPPING),
        frozenset(STATELESS_CLASSES),
    )


@cache
def _reserved_names() -> frozenset[str]:
    _, utils, _, _ = _package()
    return frozenset(vars(utils)) | frozenset(dir(builtins)) | _PACKAGE_LOCALS


@cache
def _api_class(class_name: str) -> type:
    _, _, paths, _ = _package()
    if class_name not in paths:
        raise KeyError(class_name)
    cls: type = getattr(importlib.import_module(paths[class_name]), class_name)
    return cls


def _public_methods(instance: Any) -> list[str]:
    # As execute_multi_turn_func_call: inspect.getmembers(..., ismethod), skipping "_" names.
    return [
        name
        for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod)
        if not name.startswith("_")
    ]


def jsonable(value: Any, depth: int = 0) -> Any:
    """JSON-ready copy (bfcl_eval.utils.make_json_serializable's rule: str() the rest, here
    truncated to REPR_LIMIT characters)."""
    if depth > 50:
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v, depth + 1) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    text = str(value)  # API objects (files, directories, …) by their own repr, kept short
    return text if len(text) <= REPR_LIMIT else text[: REPR_LIMIT - 1] + "…"


def call_string(name: str, arguments: dict[str, Any]) -> str:
    """The string the package executes for a decoded call: the FC handler's
    ``convert_to_function_call`` (``name(k=repr(v),…)``). Positional arguments (``_0``, ``_1``
    from a prompting model's decoded text) come first, as written."""
    pos = sorted((int(k[1:]), v) for k, v in arguments.items() if k[:1] == "_" and k[1:].isdigit())
    kw = [(k, v) for k, v in arguments.items() if not (k[:1] == "_" and k[1:].isdigit())]
    parts = [repr(v) for _, v in pos] + [f"{k}={v!r}" for k, v in kw]
    return f"{name}({','.join(parts)})"


def result_string(value: Any) -> str:
    # execute_multi_turn_func_call: str as is, dict as JSON (str() if that fails), else str().
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except Exception:  # noqa: BLE001 — the package's bare except
            return str(value)
    return str(value)


def outcome_status(content: str) -> str:
    """ "error" for the package's execution errors and the APIs' ``{"error": …}`` answers (the
    BFCL importer's rule for recorded results)."""
    if content.startswith("Error during execution"):
        return "error"
    if content.startswith("{") and '"error"' in content:
        try:
            parsed = json.loads(content)
        except ValueError:
            return "ok"
        if isinstance(parsed, dict) and "error" in parsed:
            return "error"
    return "ok"


def _initial_instances(
    classes: list[str], initial_config: dict[str, Any], long_context: bool
) -> dict[str, Any]:
    """New instances of a task's classes at its initial state, as execute_multi_turn_func_call
    builds them (``_load_scenario`` on a deep copy of the class's initial config)."""
    _, _, _, stateless = _package()
    instances: dict[str, Any] = {}
    for class_name in classes:
        instance = _api_class(class_name)()
        if class_name not in stateless:
            config = initial_config.get(class_name, {})
            instance._load_scenario(copy.deepcopy(config), long_context=long_context)
        instances[class_name] = instance
    return instances


_METHOD_NAMES: dict[str, frozenset[str]] = {}  # class name → public method names


def _method_names(class_name: str, instance: Any) -> frozenset[str]:
    """The public methods of the class's instances: the API classes define them on the class,
    so the first loaded instance tells them all (inspect.getmembers was a third of the cost of
    setting up a world)."""
    names = _METHOD_NAMES.get(class_name)
    if names is None:
        names = _METHOD_NAMES[class_name] = frozenset(_public_methods(instance))
    return names


# A world's instance variable per class, method → variable mapping and methods per variable:
# the same for every world of the same instance names (model, task) and classes, which a
# replay, its checks and a second replay of the trace build up to six times.
_Layout = tuple[dict[str, str], dict[str, str], dict[str, frozenset[str]]]


def _layout(prefix: str, instances: dict[str, Any]) -> _Layout:
    var_of: dict[str, str] = {}
    mapping: dict[str, str] = {}
    names_of: dict[str, frozenset[str]] = {}
    for class_name, instance in instances.items():
        var = var_of[class_name] = re.sub(r"[-./:]", "_", f"{prefix}_{class_name}_instance")
        names = names_of[var] = _method_names(class_name, instance)
        for n in names:
            mapping[n] = var  # a later class wins a shared name, as in the package
    return var_of, mapping, names_of


def _plain_arguments(arguments: dict[str, Any]) -> bool:
    # Loops, not all() over generators, and strings (most values) checked in place: this runs
    # for every call of a replay.
    for k in arguments:
        if not (k.isascii() and k.isidentifier()) or keyword.iskeyword(k) or _POSITIONAL(k):
            return False
    for v in arguments.values():
        if type(v) is str:
            if "(" in v:
                return False
        elif not _plain(v, 0):
            return False
    return True


def _plain(value: Any, depth: int) -> bool:
    """A value whose repr the package's eval reads back as an equal value of the same type,
    with no text its method-name regex would rewrite."""
    kind = type(value)
    if kind is str:
        return "(" not in value
    if value is None or kind is bool:
        return True
    if kind is int:
        return bool(-(10**18) < value < 10**18)
    if kind is float:
        return math.isfinite(value)
    if depth > 20:  # the parser's nesting limit is far above, but nothing real is this deep
        return False
    if kind is list:
        return all(_plain(v, depth + 1) for v in value)
    if kind is dict:
        return all(
            type(k) is str and "(" not in k and _plain(v, depth + 1) for k, v in value.items()
        )
    return False


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _fresh_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """`_fresh` of a call's arguments, atoms (most values) passed as they are."""
    return {k: v if type(v) in _ATOMS else _fresh(v) for k, v in arguments.items()}


def _fresh(value: Any) -> Any:
    """A copy of a plain value, as eval builds new lists and dicts from the call's text."""
    if type(value) is list:
        return [_fresh(v) for v in value]
    if type(value) is dict:
        return {k: _fresh(v) for k, v in value.items()}
    return value


class _World:
    """Instances of a task's classes (fresh, or restored from a snapshot of the initial state),
    the package's method → instance-variable mapping and a whitelisted executor of call
    strings."""

    def __init__(
        self,
        instances: dict[str, Any],
        prefix: str,
        parsed: dict[tuple[str, str], Any],
        layout: _Layout | None = None,
        read: dict[str, tuple[str, dict[str, Any]] | None] | None = None,
    ) -> None:
        self.instances = instances
        self.prefix = prefix
        self.parsed = parsed  # (prefix, call string) → AST or the exception; the environment's
        self.read = {} if read is None else read  # call string → parse_call's; the environment's
        var_of, self.mapping, self.names = layout or _layout(prefix, instances)
        self.by_var: dict[str, Any] = {var_of[c]: inst for c, inst in instances.items()}
        # Methods are looked up on their instance when called (``names``: the public ones per
        # variable), not bound for every method of every class at set-up.

    def has(self, name: str) -> bool:
        return name in self.mapping

    def call(self, name: str, arguments: dict[str, Any], text: str) -> tuple[str, bool]:
        """``run(text)`` for a decoded call (``text = call_string(name, arguments)``), without
        building and walking its AST when that can only mean ``method(**arguments)``: a public
        method's name, keyword names Python accepts as written, and argument values whose text
        the package's regex cannot rewrite (no "(" in a string) and that read back as they are
        (JSON values, finite floats, no huge ints). Anything else goes through ``run``."""
        var = self.mapping.get(name)
        if var is None or name in BLOCKED or not _plain_arguments(arguments):
            return self.run(text)
        try:
            method = getattr(self.by_var[var], name)
            return result_string(method(**_fresh_arguments(arguments))), True
        except Exception as exc:  # noqa: BLE001 — the package reports any exception as text
            return f"{ERROR_PREFIX}{exc}", True

    def run_text(self, text: str) -> tuple[str, bool]:
        """``run(text)``, through ``call`` when the string reads as ``name(key=literal, …)``
        (`bfcl_calls.parse_call`; read once per string, for every task): the checker executes
        every ground-truth call this way, and compiling each was a fifth of a replay."""
        if text in self.read:
            read = self.read[text]
        else:
            if len(self.read) >= CALLS_READ_KEPT:
                self.read.clear()
            read = self.read[text] = parse_call(text)
        if read is None:
            return self.run(text)
        return self.call(read[0], read[1], text)

    def run(self, text: str) -> tuple[str, bool]:
        """(result string, reproduced faithfully) for one call string."""
        try:
            tree = self._parse(text)
            value = self._eval(tree.body if isinstance(tree, ast.Expression) else tree)
            return result_string(value), True
        except _Unsupported as exc:
            return f"{ERROR_PREFIX}not executed by the auditor: {exc}", False
        except Exception as exc:  # noqa: BLE001 — the package reports any exception as text
            return f"{ERROR_PREFIX}{exc}", True

    def _parse(self, text: str) -> ast.AST:
        """The call string prefixed, refused or compiled as the package does, once per
        (instance names, text): a replay and its checks run the same strings up to four times.
        A refusal or SyntaxError is kept and raised again (the same message)."""
        key = (self.prefix, text)
        done = self.parsed.get(key)
        if done is None:
            try:
                done = self.parsed[key] = self._compile(text)
            except Exception as exc:  # noqa: BLE001 — raised again below, on every run
                done = self.parsed[key] = exc
        if isinstance(done, Exception):
            # without the traceback of its last raise, which would hold that world's frames
            raise done.with_traceback(None)
        return done

    def _compile(self, text: str) -> ast.AST:
        _, utils, _, _ = _package()
        processed = utils._process_method_calls(text, self.mapping)
        head = processed.split("(")[0] if "(" in processed else processed
        if "." in head:
            head = head.split(".")[1]
        if head in BLOCKED:
            raise Exception(f"Function call {head} is not allowed.")  # noqa: TRY002
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # eval() strips leading spaces and tabs, then compiles as "<string>": the same
            # SyntaxError text as the package, but only the AST is built.
            return compile(processed.lstrip(" \t"), "<string>", "eval", ast.PyCF_ONLY_AST)

    # -- the evaluator: instances, their whitelisted methods, literals; nothing else ----------

    def _eval(self, node: ast.AST) -> Any:
        if type(node) is ast.Constant:  # most argument values: literal_eval's own first case
            return node.value
        if isinstance(node, ast.Call):
            func = self._eval(node.func)
            args = []
            for a in node.args:
                if isinstance(a, ast.Starred):
                    raise _Unsupported("starred argument")
                args.append(self._eval(a))
            kwargs = {}
            for kw in node.keywords:
                if kw.arg is None:
                    raise _Unsupported("** argument")
                kwargs[kw.arg] = self._eval(kw.value)
            if isinstance(func, _Bound):
                return func.method(*args, **kwargs)
            if isinstance(func, _Object):
                raise _Unsupported("call of an API instance")
            raise TypeError(f"'{type(func).__name__}' object is not callable")
        if isinstance(node, ast.Name):
            if node.id in self.by_var:
                return _Object(node.id)
            if node.id in _reserved_names() or node.id.endswith("_instance"):
                raise _Unsupported(f"name {node.id!r} resolves inside the package")
            raise NameError(f"name '{node.id}' is not defined")
        if isinstance(node, ast.Attribute):
            base = self._eval(node.value)
            if isinstance(base, _Object):
                if node.attr not in self.names[base.var]:
                    raise _Unsupported(f"attribute {node.attr!r} of an API instance")
                return _Bound(getattr(self.by_var[base.var], node.attr))
            raise _Unsupported(f"attribute {node.attr!r} of a value")
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
            raise _Unsupported(f"{type(node).__name__} expression") from exc


@dataclass(frozen=True, slots=True)
class _Object:
    var: str


@dataclass(frozen=True, slots=True)
class _Bound:
    method: Any
