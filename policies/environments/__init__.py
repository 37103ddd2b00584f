"""Environments a guarded trajectory is replayed in (SPEC §4).

- `base`: the `Environment` protocol, `ToolOutcome` and the `ToyEnvironment`;
- `bfcl`: `BFCLEnvironment`, BFCL multi-turn's classes replayed (needs the bfcl-eval package,
  imported on demand); `bfcl_calls` parses its call strings, `bfcl_world` holds its state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .base import Environment, ToolOutcome, ToyEnvironment
    from .bfcl import BFCLEnvironment
    from .bfcl_calls import parse_call
    from .bfcl_world import call_string

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "BFCLEnvironment": "bfcl",
    "Environment": "base",
    "ToolOutcome": "base",
    "ToyEnvironment": "base",
    "call_string": "bfcl_world",
    "parse_call": "bfcl_calls",
}

__all__ = [
    "BFCLEnvironment",
    "Environment",
    "ToolOutcome",
    "ToyEnvironment",
    "call_string",
    "parse_call",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
