"""The content-addressed call cache (SPEC §4: "every call is recorded in a content-addressed
cache and referenced from the decision record, so an audit re-runs exactly with zero calls").

The key is the SHA-256 of what determines the answer: the request body's canonical JSON (model,
messages, tools and parameters, exactly what is sent) within a *scope* — the endpoint's base
URL and the tenant the answer belongs to (`call_scope`). Two endpoints that serve a model of
the same name are different calls, and one project's answers are never another's (the app
shares a scope across projects only when the operator opts in). The API key travels in a
header and is never part of a body, a key or an entry.

A cache is anything with ``get(key)`` and ``put(key, request, response, scope)``; `MemoryCache` and
`FileCache` live here, the app adds a database one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol

JsonDict = dict[str, Any]


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8, no NaN: equal data → equal bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def call_scope(base_url: str, tenant: str = "") -> str:
    """The scope of a call's cache key: the endpoint's base URL (without a trailing slash)
    and the tenant (e.g. ``project:12``; "" for a library user's own cache)."""
    return canonical_json({"base_url": base_url.rstrip("/"), "tenant": tenant}).decode()


def cache_key(request: JsonDict, scope: str = "") -> str:
    """SHA-256 of the canonical request within ``scope`` (`call_scope`); without a scope, of
    the request alone."""
    if not scope:
        return hashlib.sha256(canonical_json(request)).hexdigest()
    return hashlib.sha256(canonical_json({"request": request, "scope": scope})).hexdigest()


class CallCache(Protocol):
    def get(self, key: str) -> JsonDict | None:
        """The stored response for ``key``, or None."""
        ...

    def put(self, key: str, request: JsonDict, response: JsonDict, scope: str = "") -> None:
        """Store an answer; ``scope``: the `call_scope` the key was made in."""
        ...


class MemoryCache:
    """A dict behind a lock (one worker process; tests; a run's scratch cache)."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[bytes, bytes]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> JsonDict | None:
        with self._lock:
            hit = self._data.get(key)
        if hit is None:
            return None
        out: JsonDict = json.loads(hit[1])  # a fresh copy: callers may not mutate the store
        return out

    def put(self, key: str, request: JsonDict, response: JsonDict, scope: str = "") -> None:
        entry = (canonical_json(request), canonical_json(response))
        with self._lock:
            self._data[key] = entry

    def request(self, key: str) -> JsonDict | None:
        with self._lock:
            hit = self._data.get(key)
        return json.loads(hit[0]) if hit is not None else None

    def __len__(self) -> int:
        return len(self._data)

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._data)


class FileCache:
    """One JSON file per entry under ``root/<key[:2]>/<key>.json``: ``{"key", "request",
    "response", "scope"}``. Writes are atomic (a temporary file renamed into place), so
    concurrent workers and a crash mid-write never leave a half entry. An entry whose request
    and scope do not hash to its key (a damaged or hand-edited file) is treated as absent."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key[:80]!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> JsonDict | None:
        entry = self.entry(key)
        return entry["response"] if entry is not None else None

    def entry(self, key: str) -> JsonDict | None:
        try:
            raw = self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            entry = json.loads(raw)
        except ValueError:
            return None
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("request"), dict)
            or not isinstance(entry.get("response"), dict)
            or cache_key(entry["request"], str(entry.get("scope") or "")) != key
        ):
            return None
        return entry

    def put(self, key: str, request: JsonDict, response: JsonDict, scope: str = "") -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "request": request, "response": response}
        data = canonical_json({**entry, "scope": scope} if scope else entry)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def keys(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("??/*.json"))
