"""Sandboxed execution of code candidates' hidden tests (docs/sandbox.md; opt-in).

- `process`: `run_program` under bubblewrap, `SandboxSettings`, `SandboxDisabled`, `ExecResult`,
  `UNAVAILABLE` (the reason's prefix when bubblewrap cannot run);
- `launch`: the first code run inside the sandbox (passed as text, never imported by the app);
- `seccomp`: the seccomp filter;
- `code_tests`: `execute_hidden_tests`, `program_key` (the execution store's key: the program,
  the limits, the interpreter and the text of this package's four modules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .code_tests import execute_hidden_tests, hidden_test_program, program_key
    from .process import UNAVAILABLE, ExecResult, SandboxDisabled, SandboxSettings, run_program

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "ExecResult": "process",
    "UNAVAILABLE": "process",
    "SandboxDisabled": "process",
    "SandboxSettings": "process",
    "execute_hidden_tests": "code_tests",
    "hidden_test_program": "code_tests",
    "program_key": "code_tests",
    "run_program": "process",
}

__all__ = [
    "UNAVAILABLE",
    "ExecResult",
    "SandboxDisabled",
    "SandboxSettings",
    "execute_hidden_tests",
    "hidden_test_program",
    "program_key",
    "run_program",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
