"""The content-addressed call cache (SPEC §4: "every call is recorded in a content-addressed
cache and referenced from the decision record, so an audit re-runs exactly with zero calls").

The key is the SHA-256 of the request body's canonical JSON — model, messages, tools and
parameters, exactly what is sent. The API key travels in a header and is never part of a body,
a key or an entry. The base URL is not part of the key either: the same model asked the same
thing is the same call, so a run can be replayed against a copy of its cache anywhere.

A cache is anything with ``get(key)`` and ``put(key, request, response)``; `MemoryCache` and
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


def cache_key(request: JsonDict) -> str:
    return hashlib.sha256(canonical_json(request)).hexdigest()


class CallCache(Protocol):
    def get(self, key: str) -> JsonDict | None:
        """The stored response for ``key``, or None."""
        ...

    def put(self, key: str, request: JsonDict, response: JsonDict) -> None: ...


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

    def put(self, key: str, request: JsonDict, response: JsonDict) -> None:
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
    "response"}``. Writes are atomic (a temporary file renamed into place), so concurrent
    workers and a crash mid-write never leave a half entry. An entry whose request does not
    hash to its key (a damaged or hand-edited file) is treated as absent."""

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
            or cache_key(entry["request"]) != key
        ):
            return None
        return entry

    def put(self, key: str, request: JsonDict, response: JsonDict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = canonical_json({"key": key, "request": request, "response": response})
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
