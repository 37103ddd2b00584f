"""Per-run model endpoint settings and the scrubbing of secrets (SPEC §4 "Model backends").

`ModelConfig` is plain data that can be stored with an audit run. It holds no key and no
*source* of a key (no environment variable name, no file path): the key is handed to the
client by its caller (the app decrypts a project's stored key, `auditor.llm.endpoints`), so
stored settings can never make a worker read a server secret. `redact` scrubs the key (and
anything that looks like a key or a credential) from every text this package produces.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: Fields that named where a key came from; a setting naming them gets this answer.
KEY_SOURCE_FIELDS = {
    "api_key": "the key itself is never a setting",
    "api_key_env": "a server environment variable cannot be named as the key",
    "api_key_file": "a server file cannot be named as the key",
}
KEY_SOURCE_HELP = (
    "store the key with a model endpoint of the project (owners: the project's Model "
    "endpoints page, the API or `manage.py model_endpoint`) and name the endpoint"
)
StructuredOutput = Literal["json_schema", "json_object", "none"]


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One OpenAI-compatible chat-completions endpoint as a run uses it.

    Choices the issue leaves open, each a setting:

    - ``timeout`` bounds every wait for data (the response headers, each read of the body),
      and a whole attempt is cut off after ``2 × timeout`` even when a server trickles bytes
      just fast enough to dodge the per-read limit; ``connect_timeout`` bounds connecting.
    - ``max_retries`` retries of connection errors, timeouts, 429 and 5xx, with exponential
      backoff ``backoff_base · 2^attempt`` capped at ``backoff_max``; a ``Retry-After`` header
      is honoured (never waited less than it says) up to ``retry_after_max`` seconds — a
      longer one fails the call at once rather than hold a worker.
    - ``max_response_bytes`` bounds the bytes read from one response (compressed and
      decompressed alike); a bigger response fails the call.
    - ``max_concurrency`` bounds simultaneous requests to this base URL from one worker
      process (shared by every client of the process).
    - ``offline``: cache only; a miss is a recorded failure and no request is made.
    - ``structured_output``: how JSON answers are requested (``response_format`` with a JSON
      schema — OpenAI, vLLM, SGLang, Ollama and llama.cpp accept it —, plain JSON mode, or
      nothing for servers that reject the field). Parsing is strict in every case.
    """

    base_url: str = ""
    model: str = ""
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int | None = None
    timeout: float = 60.0
    connect_timeout: float = 10.0
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    max_response_bytes: int = 4 * 1024 * 1024
    max_concurrency: int = 4
    offline: bool = False
    structured_output: StructuredOutput = "json_schema"
    trust_env: bool = True

    def __post_init__(self) -> None:
        problems = config_problems(self)
        if problems:
            raise ValueError("; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> ModelConfig:
        """From stored settings; unknown keys and a literal ``api_key`` are rejected, so a
        typo never silently runs the defaults and a key never lands in a settings field."""
        values = dict(values or {})
        for name, why in KEY_SOURCE_FIELDS.items():
            if name in values:
                raise ValueError(f"{name}: {why}; {KEY_SOURCE_HELP}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown model settings: {', '.join(unknown)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)


def config_problems(c: ModelConfig) -> list[str]:
    """Every invalid field of ``c``, each with what was expected."""
    out: list[str] = []
    if not isinstance(c.model, str) or not c.model.strip():
        out.append("model: a model name is required")
    if not c.offline:
        if not isinstance(c.base_url, str) or not re.match(r"https?://[^/\s]+", c.base_url):
            out.append(
                f"base_url: expected an http(s) URL such as https://api.example.com/v1, "
                f"got {redact_url(str(c.base_url))[:200]!r}"
            )
        elif "@" in c.base_url.split("://", 1)[1].split("/", 1)[0]:
            out.append("base_url: credentials in the URL are not allowed")
    for name in ("timeout", "connect_timeout"):
        v = getattr(c, name)
        if not isinstance(v, int | float) or isinstance(v, bool) or not 0 < v <= 3600:
            out.append(f"{name}: expected seconds in (0, 3600], got {v!r}")
    for name in ("backoff_base", "backoff_max", "retry_after_max"):
        v = getattr(c, name)
        if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v <= 3600:
            out.append(f"{name}: expected seconds in [0, 3600], got {v!r}")
    if not isinstance(c.temperature, int | float) or not 0 <= c.temperature <= 2:
        out.append(f"temperature: expected a number in [0, 2], got {c.temperature!r}")
    checks: list[tuple[str, Any, int, int]] = [
        ("max_retries", c.max_retries, 0, 20),
        ("max_response_bytes", c.max_response_bytes, 1024, 1 << 30),
        ("max_concurrency", c.max_concurrency, 1, 256),
    ]
    for name, v, lo, hi in checks:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            out.append(f"{name}: expected an integer in [{lo}, {hi}], got {v!r}")
    for name, v in (("seed", c.seed), ("max_tokens", c.max_tokens)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            out.append(f"{name}: expected a non-negative integer or null, got {v!r}")
    if c.structured_output not in ("json_schema", "json_object", "none"):
        out.append(
            f"structured_output: expected json_schema, json_object or none, "
            f"got {c.structured_output!r}"
        )
    return out


_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_BEARER = re.compile(r"(?i)((?:bearer|basic|token)\s+)[^\s\"',;]+")
# Shapes of keys and tokens (OpenAI-style, JWTs, long hex or base64 runs) and key=value pairs.
_KEYLIKE = re.compile(
    r"(?i)\b(?:sk|pk|rk|api|key|tok)[-_][A-Za-z0-9_\-]{8,}"
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-.]+"
    r"|\b[A-Fa-f0-9]{32,}\b|\b[A-Za-z0-9+/_\-]{40,}={0,2}"
)
_ASSIGNED = re.compile(
    r"(?i)((?:api[_-]?key|token|secret|password|passwd|authorization)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s\"',;&]+"
)
#: A secret's parts this long or longer are redacted on their own (a key with lines in it).
MIN_PART = 6


def redact_url(url: str) -> str:
    return _USERINFO.sub("***@", url)


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every secret (and each of its lines and words of `MIN_PART` characters or
    more), bearer tokens, key-shaped strings, ``key=value`` credentials and URL credentials
    replaced."""
    for s in secrets:
        if not s:
            continue
        parts = {s, s.strip(), *(p for p in re.split(r"\s+", s) if len(p) >= MIN_PART)}
        for part in sorted(parts, key=len, reverse=True):
            if part:
                text = text.replace(part, "[redacted]")
    text = _BEARER.sub(r"\1[redacted]", redact_url(text))
    text = _ASSIGNED.sub(r"\1[redacted]", text)
    return _KEYLIKE.sub("[redacted]", text)
