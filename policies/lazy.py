"""Lazy re-exports of the policy packages (PEP 562): a package's `__init__` names the module of
each public name, and that module is imported on first use, so importing one module of a package
does not import its siblings (numpy, the BFCL environment, …)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's module-level ``__getattr__``: ``exports`` maps a public name to the module
    of ``package`` that defines it."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
