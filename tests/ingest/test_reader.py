from __future__ import annotations

import gzip
import io
import os

import pytest

from traces.reader import LimitExceeded, Limits, TooLong, iter_lines, open_payload, parse_line

LIMITS = Limits(
    max_upload_bytes=1 << 30,
    max_decompressed_bytes=1 << 30,
    max_gzip_ratio=100.0,
    max_line_bytes=1 << 20,
    max_depth=8,
    max_events_per_trace=100,
)


def lines(data: bytes, max_line: int = 1 << 20):  # type: ignore[no-untyped-def]
    return list(iter_lines(io.BytesIO(data), max_line))


def test_blank_lines_skipped_but_counted():
    assert lines(b'{"a":1}\n\n  \r\n{"b":2}\r\n') == [(1, b'{"a":1}'), (4, b'{"b":2}')]


def test_last_line_without_newline():
    assert lines(b'{"a":1}\n{"b":2}') == [(1, b'{"a":1}'), (2, b'{"b":2}')]


def test_overlong_line_reported_and_next_line_kept():
    data = b'{"a":"' + b"x" * 100 + b'"}\n{"b":2}\n'
    [(n1, first), second] = lines(data, max_line=50)
    assert n1 == 1 and isinstance(first, TooLong) and first.head.startswith(b'{"a":"xxx')
    assert second == (2, b'{"b":2}')


def test_gzip_is_sniffed_and_read():
    raw = io.BytesIO(gzip.compress(b'{"a":1}\n'))
    stream, was_gz = open_payload(raw, LIMITS)
    assert was_gz and stream.read() == b'{"a":1}\n'


def test_concatenated_gzip_members_are_read():
    raw = io.BytesIO(gzip.compress(b"one\n") + gzip.compress(b"two\n"))
    stream, _ = open_payload(raw, LIMITS)
    assert stream.read() == b"one\ntwo\n"


def test_gzip_bomb_stopped_by_ratio():
    bomb = gzip.compress(b"\n" * (64 << 20))  # 64 MiB of newlines compress ~1000x
    stream, _ = open_payload(io.BytesIO(bomb), LIMITS)
    with pytest.raises(LimitExceeded, match="TA_MAX_GZIP_RATIO"):
        stream.read()


def test_gzip_decompressed_size_limit():
    limits = Limits(
        max_upload_bytes=1 << 30,
        max_decompressed_bytes=1 << 20,
        max_gzip_ratio=1e9,
        max_line_bytes=1 << 20,
        max_depth=8,
        max_events_per_trace=100,
    )
    data = gzip.compress(os.urandom(2 << 20))
    stream, _ = open_payload(io.BytesIO(data), limits)
    with pytest.raises(LimitExceeded, match="TA_MAX_DECOMPRESSED_BYTES"):
        stream.read()


def test_corrupt_gzip_is_a_clear_error():
    data = gzip.compress(b'{"a":1}\n' * 1000)
    broken = data[:20] + b"\x00" * 40 + data[60:]
    stream, _ = open_payload(io.BytesIO(broken), LIMITS)
    with pytest.raises(LimitExceeded, match="not valid gzip"):
        stream.read()


def test_parse_reports_json_position():
    with pytest.raises(ValueError, match="not valid JSON: .* at character"):
        parse_line(b'{"a": }', 8)


def test_depth_limit():
    ok = b'{"a":' * 8 + b"1" + b"}" * 8
    parse_line(ok, 8)
    deep = b'{"a":' * 9 + b"1" + b"}" * 9
    with pytest.raises(ValueError, match="TA_MAX_DEPTH"):
        parse_line(deep, 8)


def test_many_brackets_in_strings_do_not_trip_depth():
    value, _, _ = parse_line(b'{"a": "[[[[[[[[[[{{{{{{{{{{"}', 8)
    assert value == {"a": "[[[[[[[[[[{{{{{{{{{{"}


def test_extremely_deep_json_is_an_error_not_a_crash():
    with pytest.raises(ValueError):
        parse_line(b"[" * 100000 + b"]" * 100000, 64)


def test_invalid_utf8_replaced_with_warning():
    value, warning, stored = parse_line(b'{"a": "caf\xe9"}', 8)
    assert value == {"a": "caf\ufffd"}
    assert "invalid UTF-8 at byte 10" in warning
    assert stored.decode("utf-8")


def test_nul_escape_replaced_for_postgres():
    value, warning, stored = parse_line(b'{"a": "x\\u0000y"}', 8)
    assert value == {"a": "x\ufffdy"} and b"\\u0000" not in stored and "NUL" in warning
