"""Reading uploaded files: gzip with bomb limits, lines with a length limit, JSON with a depth
limit. Every limit breach is a `LimitExceeded` (whole file) or a line error, with its own message.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import orjson

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
UTF8_BOM = b"\xef\xbb\xbf"
_READ_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    max_upload_bytes: int
    max_decompressed_bytes: int
    max_gzip_ratio: float
    max_line_bytes: int
    max_depth: int
    max_events_per_trace: int

    @classmethod
    def from_settings(cls) -> Limits:
        from django.conf import settings

        return cls(
            max_upload_bytes=settings.TA_MAX_UPLOAD_BYTES,
            max_decompressed_bytes=settings.TA_MAX_DECOMPRESSED_BYTES,
            max_gzip_ratio=settings.TA_MAX_GZIP_RATIO,
            max_line_bytes=settings.TA_MAX_LINE_BYTES,
            max_depth=settings.TA_MAX_DEPTH,
            max_events_per_trace=settings.TA_MAX_EVENTS_PER_TRACE,
        )


class LimitExceeded(Exception):
    """The file as a whole breaks a limit; nothing in it is stored (the raw file is kept)."""


def _mib(n: float) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


class _GzipGuard(io.RawIOBase):
    """Decompresses a gzip stream, stopping as soon as the output passes the size limit or the
    ratio of output to input passes the ratio limit (a "zip bomb"), before memory is spent."""

    # Below this much output the ratio is not judged: tiny files of repetitive JSON compress
    # very well and are harmless.
    RATIO_GRACE_BYTES = 8 * 1024 * 1024

    def __init__(self, raw: BinaryIO, limits: Limits) -> None:
        self._raw = raw
        self._limits = limits
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._in = 0  # compressed bytes read from the file
        self._out = 0
        self._buf = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    @property
    def compressed_bytes_read(self) -> int:
        return self._in

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        want = len(b)
        while not self._buf and not self._eof:
            chunk = self._z.unconsumed_tail or self._raw.read(_READ_CHUNK)
            if not self._z.unconsumed_tail:
                self._in += len(chunk)
            if not chunk:
                if not self._z.eof:
                    raise LimitExceeded(
                        "the file is not valid gzip: the compressed stream is truncated or corrupt"
                    )
                self._eof = True
                break
            try:
                out = self._z.decompress(chunk, _READ_CHUNK)
            except zlib.error as exc:
                raise LimitExceeded(f"the file is not valid gzip: {exc}") from exc
            if self._z.eof and self._z.unused_data:
                # Concatenated gzip members (as `cat a.gz b.gz` makes): start the next member.
                rest = self._z.unused_data
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                out += self._z.decompress(rest, _READ_CHUNK)
            self._buf = out
            self._out += len(out)
            self._check()
        n = min(want, len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def _consumed(self) -> int:
        """Compressed bytes the output came from. Not the bytes read: one 1 MiB read of
        compressed newlines holds gigabytes, and judged against the whole read the ratio would
        fire only after a worker had spent many seconds splitting empty lines."""
        return max(1, self._in - len(self._z.unconsumed_tail))

    def _check(self) -> None:
        lim = self._limits
        if self._out > lim.max_decompressed_bytes:
            raise LimitExceeded(
                f"decompressed size exceeds the limit of {_mib(lim.max_decompressed_bytes)} "
                f"(TA_MAX_DECOMPRESSED_BYTES); split the file or raise the limit"
            )
        consumed = self._consumed()
        if self._out > self.RATIO_GRACE_BYTES and self._out / consumed > lim.max_gzip_ratio:
            raise LimitExceeded(
                f"gzip expands more than {lim.max_gzip_ratio:g}x (TA_MAX_GZIP_RATIO): "
                f"{_mib(consumed)} became over {_mib(self._out)}; refusing a possible zip bomb"
            )


def open_payload(
    raw: BinaryIO, limits: Limits, *, zip_format: bool = False
) -> tuple[BinaryIO, bool]:
    """The decompressed byte stream of an upload and whether it was gzip (sniffed by magic).
    `zip_format`: the format named (or auto-detection) may be one whose files are zip archives
    (Inspect AI's `.eval`); the caller then refuses a zip the detected format does not read."""
    head = raw.read(4)
    raw.seek(0)
    if head == ZIP_MAGIC and not zip_format:
        # Whatever line format was named: a stored (uncompressed) member would half-parse.
        raise LimitExceeded(format_hint(head))
    if head[:2] == GZIP_MAGIC:
        return io.BufferedReader(_GzipGuard(raw, limits), buffer_size=_READ_CHUNK), True
    return raw, False


@dataclass(slots=True)
class LineError:
    line: int
    trace_id: str | None
    path: str
    message: str

    def to_dict(self) -> dict:
        # The report is stored as jsonb, which cannot hold U+0000; a NUL read from a broken line
        # (a raw 0x00 inside a trace id, say) is shown as U+FFFD, as invalid UTF-8 already is.
        return {
            "line": self.line,
            "trace_id": _storable(self.trace_id),
            "path": _storable(self.path),
            "message": _storable(self.message),
        }


def _storable(text: str | None) -> str | None:
    return text.replace("\x00", "\ufffd") if text else text


@dataclass(frozen=True, slots=True)
class TooLong:
    """A line over the length limit: only its start is kept, to find its trace id."""

    head: bytes


def iter_lines(stream: BinaryIO, max_line_bytes: int) -> Iterator[tuple[int, bytes | TooLong]]:
    """(line number, bytes) for each non-blank line; a line over the limit comes as TooLong and
    is skipped without being held in memory."""
    lineno = 0
    readline = stream.readline
    limit = max_line_bytes + 2  # room for "\r\n"
    while True:
        line = readline(limit)
        if not line:
            return
        lineno += 1
        if lineno == 1 and line.startswith(UTF8_BOM):
            # Editors on Windows start UTF-8 files with a BOM; it is not part of the JSON.
            line = line[len(UTF8_BOM) :]
        if len(line) == limit and not line.endswith(b"\n"):
            # Too long: drain the rest of this line in bounded pieces.
            while True:
                more = readline(_READ_CHUNK)
                if not more or more.endswith(b"\n"):
                    break
            yield lineno, TooLong(line[:65536])
            continue
        line = line.strip(b" \t\r\n")  # JSON whitespace only: \x0b or \x0c are errors
        if line:
            yield lineno, line


def format_hint(head: bytes) -> str:
    """Why a file whose format was not recognised may not be one: a zip archive or one JSON
    array are common mistakes, each with its fix. Empty when neither."""
    if head.startswith(ZIP_MAGIC):
        return (
            "this is a zip archive, which is not read: upload the .jsonl (or .jsonl.gz) "
            "file inside it"
        )
    if head.removeprefix(UTF8_BOM).lstrip(b" \t\r\n").startswith(b"["):
        return (
            "the file is one JSON array; the v1 format is JSON Lines, one event object per "
            "line — convert it with: jq -c '.[]' file.json > file.jsonl"
        )
    return ""


def not_json(head: bytes) -> str:
    """'this is not JSON (line N: <its start>)' when the file's first non-blank line cannot
    begin a JSON object or array (a CSV, a log, an HTML page); empty otherwise. Every format
    read here is JSON, so this says more than the list of formats tried."""
    text = head.removeprefix(UTF8_BOM)
    for lineno, raw in enumerate(text.split(b"\n"), 1):
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped[:1] in (b"{", b"["):
            return ""
        sample = stripped[:60].decode("utf-8", errors="replace")
        more = "…" if len(stripped) > 60 else ""
        return f"this is not JSON (line {lineno}: {sample}{more})"
    return ""


def json_depth(value: object) -> int:
    depth = 0
    stack = [(value, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, dict):
            depth = max(depth, d)
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            depth = max(depth, d)
            stack.extend((v, d + 1) for v in item)
    return depth


def parse_line(line: bytes, max_depth: int) -> tuple[object, str | None, bytes]:
    """Parse one JSON line: (value, warning, bytes as stored).

    Invalid UTF-8 is not a reason to lose a trace: bytes that do not decode are replaced with
    U+FFFD (the raw file keeps the originals) and a warning says so. The NUL escape, which
    PostgreSQL's jsonb cannot hold, is handled the same way. Raises ValueError with a message
    for the user when the line is not JSON or is nested too deeply.
    """
    warning = None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as uexc:
            line = line.decode("utf-8", errors="replace").encode("utf-8")
            warning = f"invalid UTF-8 at byte {uexc.start} replaced with U+FFFD"
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as exc2:
                raise ValueError(_json_message(exc2)) from exc2
        else:
            raise ValueError(_json_message(exc)) from exc
    if b"\\u0000" in line:
        line = line.replace(b"\\u0000", b"\\ufffd")
        value = orjson.loads(line)
        warning = "NUL characters (\\u0000) replaced with U+FFFD"
    # Counting brackets in C is an upper bound of the depth; walk the value only when it is
    # above the limit, so the common case costs nothing.
    if line.count(b"{") + line.count(b"[") > max_depth and json_depth(value) > max_depth:
        raise ValueError(f"JSON nesting deeper than the limit of {max_depth} levels (TA_MAX_DEPTH)")
    return value, warning, line


def _json_message(exc: orjson.JSONDecodeError) -> str:
    msg = str(exc)
    if "recursion" in msg.lower():
        return "JSON nested too deeply to parse"
    return f"not valid JSON: {exc.msg} at character {exc.pos}"
