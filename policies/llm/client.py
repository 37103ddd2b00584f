"""The one model client every use shares (SPEC §4 "Model backends"): OpenAI-compatible chat
completions, recorded in a content-addressed cache, bounded by a per-run budget.

`ModelClient.chat` never raises into a run. Each call goes: build the body → key it →
take one call from the budget → the cache (a hit costs no request) → offline mode stops here
→ POST with retries → strict envelope check → store → `ModelCall`. Only well-formed completions
are stored (refusals included: they are the model's answer); transport failures, HTTP errors
and malformed envelopes are not, so a re-run tries them again.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import transport
from .budget import BUDGET_REACHED, Budget
from .cache import CallCache, MemoryCache, cache_key, call_scope, canonical_json
from .calls import JsonDict, ModelCall, envelope_problem, refusal_of, usage_tokens
from .config import ModelConfig, redact
from .netguard import AddressGuard

log = logging.getLogger("policies.llm")
OFFLINE_MISS = "not in cache (offline mode)"
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
#: The most of a server's words an error message carries (after redaction).
MAX_ERROR_TEXT = 200

_LIMITERS: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter(base_url: str, bound: int) -> threading.BoundedSemaphore:
    """The process-wide bound on simultaneous requests to one endpoint."""
    with _LIMITERS_LOCK:
        sem = _LIMITERS.get((base_url, bound))
        if sem is None:
            sem = _LIMITERS[(base_url, bound)] = threading.BoundedSemaphore(bound)
        return sem


class CallStats:
    """What a run page shows: calls, cache hits, HTTP requests, failures, tokens."""

    FIELDS = ("calls", "cache_hits", "cache_misses", "http_requests", "failures", "tokens")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = dict.fromkeys(self.FIELDS, 0)
        self.reasons: dict[str, int] = {}

    def add(self, call: ModelCall, http_requests: int) -> None:
        with self._lock:
            self._n["calls"] += 1
            if call.cached:
                self._n["cache_hits"] += 1
            elif call.key and call.error != BUDGET_REACHED:
                self._n["cache_misses"] += 1  # asked of the endpoint, or missing offline
            self._n["http_requests"] += http_requests
            self._n["tokens"] += call.tokens
            if call.error is not None:
                self._n["failures"] += 1
                reason = re.split(r":| \(", call.error, maxsplit=1)[0][:80]
                self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {**self._n, "failure_reasons": dict(self.reasons)}


@dataclass(frozen=True, slots=True)
class _Secret:
    value: str

    def __repr__(self) -> str:
        return "[redacted]"


class ModelClient:
    """One endpoint + model for one run. ``cache``, ``budget`` and ``stats`` may be shared by
    several clients of the same run (a judge model and an actor model, say).

    ``api_key``: the key itself (sent as ``Authorization: Bearer``), from the caller — never
    read from the environment or a file here. ``guard``: which addresses requests may go to
    (default: public addresses only; `policies.llm.netguard`). ``tenant``: whose answers the
    cache entries are (`policies.llm.cache.call_scope`)."""

    def __init__(
        self,
        config: ModelConfig,
        cache: CallCache | None = None,
        budget: Budget | None = None,
        stats: CallStats | None = None,
        api_key: str = "",
        guard: AddressGuard | None = None,
        tenant: str = "",
    ) -> None:
        self.config = config
        self.cache: CallCache = cache if cache is not None else MemoryCache()
        self.budget = budget if budget is not None else Budget()
        self.stats = stats if stats is not None else CallStats()
        self._key = _Secret("" if config.offline else api_key.strip())
        self._guard = guard if guard is not None else AddressGuard()
        self.scope = call_scope(config.base_url, tenant)
        self._url = config.base_url.rstrip("/") + "/chat/completions"

    def __repr__(self) -> str:
        return f"ModelClient(model={self.config.model!r}, offline={self.config.offline})"

    # -- the request ------------------------------------------------------------------------

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> JsonDict:
        c = self.config
        body: JsonDict = {
            "model": c.model,
            "messages": [dict(m) for m in messages],
            "temperature": c.temperature,
        }
        if c.seed is not None:
            body["seed"] = c.seed
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        if tools:
            body["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if response_format is not None and c.structured_output != "none":
            body["response_format"] = dict(response_format)
        return body

    def json_format(self, name: str, schema: Mapping[str, Any]) -> JsonDict | None:
        """The ``response_format`` for a JSON answer under this endpoint's setting."""
        if self.config.structured_output == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": True},
            }
        if self.config.structured_output == "json_object":
            return {"type": "json_object"}
        return None

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        purpose: str,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> ModelCall:
        try:
            body = self.request_body(messages, tools, tool_choice, response_format)
            data = canonical_json(body)
        except (TypeError, ValueError) as exc:
            return self._done(
                ModelCall(purpose, self.config.model, "", False, {}, None, f"bad request: {exc}"),
                0,
            )
        key = cache_key(body, self.scope)

        def failed(error: str, attempts: int = 0) -> ModelCall:
            call = ModelCall(purpose, self.config.model, key, False, body, None, error)
            return self._done(call, attempts, attempts)

        if not self.budget.reserve():
            return failed(BUDGET_REACHED)
        cached = self.cache.get(key)
        if cached is not None and envelope_problem(cached) is None:
            return self._finish(purpose, key, body, len(data), cached, True, 0)
        if self.config.offline:
            self.budget.refund()  # nothing was used
            return failed(OFFLINE_MISS)
        response, error, attempts = self._post(data)
        if error is not None or response is None:
            return failed(error or "no response", attempts)
        response = json.loads(canonical_json(response))  # exactly what a cache hit returns
        self.cache.put(key, body, response, self.scope)
        return self._finish(purpose, key, body, len(data), response, False, attempts)

    # -- internals -----------------------------------------------------------------------------

    def _finish(
        self,
        purpose: str,
        key: str,
        body: JsonDict,
        n_bytes: int,
        response: JsonDict,
        cached: bool,
        attempts: int,
    ) -> ModelCall:
        p, c, estimated = usage_tokens(response, n_bytes)
        self.budget.charge(p + c)
        call = ModelCall(
            purpose,
            self.config.model,
            key,
            cached,
            body,
            response,
            refusal_of(response),
            p,
            c,
            estimated,
            attempts,
        )
        return self._done(call, attempts)

    def _done(self, call: ModelCall, attempts: int, http_requests: int | None = None) -> ModelCall:
        self.stats.add(call, attempts if http_requests is None else http_requests)
        if call.error is not None:
            log.warning(
                "model call failed: purpose=%s model=%s key=%s attempts=%d: %s",
                call.purpose,
                call.model,
                call.key[:12],
                attempts,
                call.error,
            )
        else:
            log.debug(
                "model call: purpose=%s key=%s cached=%s tokens=%d",
                call.purpose,
                call.key[:12],
                call.cached,
                call.tokens,
            )
        return call

    def _headers(self) -> dict[str, str]:
        h = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "User-Agent": "trace-auditor",
        }
        if self._key.value:
            h["Authorization"] = f"Bearer {self._key.value}"
        return h

    def _redact(self, text: str) -> str:
        """Secrets out, then bounded: what may be recorded and shown."""
        text = redact(text, (self._key.value,))
        return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 1] + "…"

    def _post(self, data: bytes) -> tuple[JsonDict | None, str | None, int]:
        """(response, error, attempts): retries per `ModelConfig`'s docstring."""
        c = self.config
        sem = limiter(c.base_url, c.max_concurrency)
        error = "no attempt made"
        for attempt in range(c.max_retries + 1):
            last = attempt == c.max_retries
            wait = _backoff(c, attempt)
            with sem:
                try:
                    raw = transport.post(
                        c, self._url, data, self._headers(), c.max_response_bytes, self._guard
                    )
                except transport.TransportError as exc:
                    error = self._redact(str(exc))
                    if not exc.retryable or last:
                        return None, _attempts(error, attempt), attempt + 1
                    raw = None
            if raw is not None:
                if 200 <= raw.status < 300:
                    return self._parse(raw.body, attempt + 1)
                error = f"HTTP {raw.status}: {self._error_text(raw.status, raw.body)}"
                if raw.status not in RETRY_STATUSES or last:
                    return None, _attempts(error, attempt), attempt + 1
                after = retry_after(raw.headers.get("retry-after"))
                if after is not None:
                    if after > c.retry_after_max:
                        return (
                            None,
                            f"{error} (Retry-After {after:g} s exceeds the "
                            f"{c.retry_after_max:g} s cap)",
                            attempt + 1,
                        )
                    wait = max(wait, after)
            time.sleep(wait)
        return None, error, c.max_retries + 1

    def _error_text(self, status: int, body: bytes) -> str:
        """What an error response says: the ``error.message`` (or ``error``, ``detail``,
        ``message``) of a JSON body, redacted and bounded; of any other body only its size —
        its text may be anything a server holds (an internal page, a token)."""
        try:
            data = json.loads(body)
        except ValueError:
            return _non_json(status, body)
        text: Any = None
        if isinstance(data, dict):
            err = data.get("error")
            text = err.get("message") if isinstance(err, dict) else err
            text = text or data.get("detail") or data.get("message")
        if not isinstance(text, str) or not text.strip():
            return f"the endpoint answered with a JSON body without a message ({len(body):,} bytes)"
        text = "".join(ch if ch.isprintable() else "?" for ch in text.strip())
        return self._redact(text)

    def _parse(self, body: bytes, attempts: int) -> tuple[JsonDict | None, str | None, int]:
        try:
            data = json.loads(body)
        except ValueError:
            return None, f"malformed response: {_non_json(200, body)}", attempts
        problem = envelope_problem(data)
        if problem is not None:
            prefix = "" if problem.startswith("the endpoint") else "malformed response: "
            return None, prefix + self._redact(problem), attempts
        return data, None, attempts


def _attempts(error: str, attempt: int) -> str:
    return error if attempt == 0 else f"{error} (after {attempt + 1} attempts)"


def _backoff(c: ModelConfig, attempt: int) -> float:
    base: float = min(c.backoff_max, c.backoff_base * (2**attempt))
    return base * (0.5 + random.random() / 2)  # jitter: workers do not retry in lockstep


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _non_json(status: int, body: bytes) -> str:
    if not body.strip():
        return f"the endpoint answered with an empty body (HTTP {status})"
    return f"the endpoint answered with non-JSON (HTTP {status}, {len(body):,} bytes)"
