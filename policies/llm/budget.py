"""A run's model budget: at most ``max_calls`` calls and ``max_tokens`` tokens (SPEC §4 "each
run has a call/token budget").

Calls served from the cache count too. That is a choice: the budget bounds what an audit
*uses*, so the decisions a run makes never depend on what the cache happened to hold — a
re-run from a warm cache stops at exactly the same call as the first run did, and gives the
same results. The money a cache hit saves is shown separately (hits vs. misses).

When the budget is reached, the call that would exceed it fails with the reason
``"budget reached"``; `Budget.reached` then stays true, so the caller (the audit run) can tell
that the run stopped cleanly because of the budget and say so.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

BUDGET_REACHED = "budget reached"


@dataclass(frozen=True, slots=True)
class BudgetState:
    calls: int
    tokens: int
    max_calls: int | None
    max_tokens: int | None
    reached: bool

    def message(self) -> str:
        """What the run page says when a run stopped on its budget."""
        if not self.reached:
            return ""
        limits = []
        if self.max_calls is not None:
            limits.append(f"{self.calls} of {self.max_calls} model calls")
        if self.max_tokens is not None:
            limits.append(f"{self.tokens} of {self.max_tokens} tokens")
        return f"Model budget reached ({', '.join(limits)}): later model calls were not made."


class Budget:
    """Thread-safe counters shared by every client of one run. ``None`` = no limit."""

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None) -> None:
        for name, v in (("max_calls", max_calls), ("max_tokens", max_tokens)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"{name}: expected a non-negative integer or null, got {v!r}")
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self._calls = 0
        self._tokens = 0
        self._reached = False
        self._lock = threading.Lock()

    def reserve(self) -> bool:
        """Take one call from the budget; False (and `reached` from then on) when no call or
        no token is left."""
        with self._lock:
            if (self.max_calls is not None and self._calls >= self.max_calls) or (
                self.max_tokens is not None and self._tokens >= self.max_tokens
            ):
                self._reached = True
                return False
            self._calls += 1
            return True

    def charge(self, tokens: int) -> None:
        with self._lock:
            self._tokens += max(int(tokens), 0)

    def refund(self) -> None:
        """Give back a reserved call that never reached the model (nothing was used)."""
        with self._lock:
            self._calls = max(self._calls - 1, 0)

    @property
    def reached(self) -> bool:
        return self._reached

    def state(self) -> BudgetState:
        with self._lock:
            return BudgetState(
                self._calls, self._tokens, self.max_calls, self.max_tokens, self._reached
            )
