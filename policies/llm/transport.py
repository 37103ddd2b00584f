"""One HTTP POST with hard bounds, over ``httpx2`` (the maintained continuation of httpx).

Why httpx rather than the official ``openai`` package: the SDK retries on its own schedule,
reads any response whole into memory and validates it with pydantic models that reject the
malformed-but-informative replies an audit must record. Here every bound is ours: the bytes
read (streamed, compressed and decompressed alike), the time to the headers, the time the body
may take to trickle in, and which failures are retried (`policies.llm.client`). The library is
imported only when a live client is built: the offline path needs nothing beyond the standard
library.

Where a request may go is `policies.llm.netguard`'s decision: the host is resolved once, every
address checked, and the connection made to the checked address (the host name still goes in
the Host header and, for https, in SNI and the certificate check). Redirects are never
followed: a 3xx is a failed call.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import Any

from .config import ModelConfig
from .netguard import AddressGuard, UrlRefused

_CLIENTS: dict[tuple[str, int, bool, float, float], Any] = {}


class TransportError(Exception):
    """A failed attempt. ``retryable``: a later attempt may succeed (connection error,
    timeout). The message is safe to record (no key, no URL credentials)."""

    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def _http_client(config: ModelConfig) -> Any:
    """A pooled client per (base URL, concurrency, proxy use, timeouts) in this process."""
    import httpx2

    k = (
        config.base_url,
        config.max_concurrency,
        config.trust_env,
        config.timeout,
        config.connect_timeout,
    )
    client = _CLIENTS.get(k)
    if client is None:
        client = httpx2.Client(
            timeout=httpx2.Timeout(
                connect=config.connect_timeout,
                read=config.timeout,
                write=config.timeout,
                pool=config.timeout,
            ),
            limits=httpx2.Limits(
                max_connections=config.max_concurrency,
                max_keepalive_connections=config.max_concurrency,
            ),
            follow_redirects=False,
            trust_env=config.trust_env,
        )
        _CLIENTS[k] = client
    return client


def post(
    config: ModelConfig,
    url: str,
    body: bytes,
    headers: dict[str, str],
    limit: int,
    guard: AddressGuard | None = None,
) -> RawResponse:
    """POST ``body`` to the address ``guard`` (default: public addresses only) allows for
    ``url``; read at most ``limit`` bytes of the response within the time bounds."""
    import httpx2

    guard = guard if guard is not None else AddressGuard()
    try:
        target = guard.target(url)
    except UrlRefused as exc:
        raise TransportError(f"refused: {exc}", retryable=False) from None
    except (OSError, UnicodeError) as exc:
        raise TransportError(
            f"connection error: cannot resolve the endpoint's host ({type(exc).__name__})",
            retryable=True,
        ) from None
    path = url.split("://", 1)[1]
    path = path[path.find("/") :] if "/" in path else "/"
    headers = {**headers, "Host": target.host_header}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    client = _http_client(config)
    start = time.monotonic()
    try:
        with client.stream(
            "POST", target.url(path), content=body, headers=headers, extensions=extensions
        ) as resp:
            if 300 <= resp.status_code < 400:
                raise TransportError(
                    f"the endpoint answered with a redirect (HTTP {resp.status_code}); "
                    f"redirects are not followed: give the final URL as the base URL",
                    retryable=False,
                )
            declared = resp.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise TransportError(
                    f"response too large: {declared} bytes declared, the limit is {limit}",
                    retryable=False,
                )
            encoding = resp.headers.get("content-encoding", "identity").strip().lower()
            inflater = _inflater(encoding)
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_raw():
                if inflater is not None:
                    # bound the decompressed size as well: a small gzip bomb is still a bomb
                    chunk = inflater.decompress(chunk, limit + 1 - size)
                    if inflater.unconsumed_tail:
                        size = limit + 1
                size += len(chunk)
                if size > limit:
                    raise TransportError(
                        f"response too large: more than {limit} bytes", retryable=False
                    )
                chunks.append(chunk)
                if time.monotonic() - start > 2 * config.timeout:
                    raise TransportError(
                        f"timeout: the response body was not complete within "
                        f"{2 * config.timeout:g} s",
                        retryable=True,
                    )
            return RawResponse(resp.status_code, dict(resp.headers), b"".join(chunks))
    except TransportError:
        raise
    except httpx2.TimeoutException as exc:
        what = "connecting" if isinstance(exc, httpx2.ConnectTimeout) else "waiting for data"
        raise TransportError(
            f"timeout {what} (limit {config.timeout:g} s)", retryable=True
        ) from None
    except httpx2.TransportError as exc:
        raise TransportError(
            f"connection error: {type(exc).__name__}: {exc}"[:200], retryable=True
        ) from None
    except zlib.error as exc:
        raise TransportError(f"malformed response: bad {encoding} data ({exc})", False) from None


def _inflater(encoding: str) -> Any:
    if encoding in ("identity", ""):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise TransportError(f"unsupported content encoding {encoding!r}", retryable=False)
