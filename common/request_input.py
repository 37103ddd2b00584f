"""Client input the app refuses before any view sees it: NUL characters (PostgreSQL text cannot
hold them), lone surrogates (no UTF-8 encoding: a page or message echoing one cannot be sent),
JSON nested deeper than `MAX_JSON_DEPTH` (the encoder and the database recurse on it), and JSON
that is not JSON (NaN, Infinity). The request parsers of the API and the middleware of the pages
(`auditor.middleware.InputHygieneMiddleware`) call these, so each refusal is a 400 naming what
was refused, in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson
from rest_framework import parsers
from rest_framework.exceptions import ParseError

#: Deepest JSON a request body may nest (arrays and objects). The API's bodies nest a handful
#: of levels; this leaves room and stays far below any recursion limit on the way to storage.
MAX_JSON_DEPTH = 64

_BAD_CHARS = re.compile(r"[\x00\ud800-\udfff]")


class BadInput(ValueError):
    """Input refused; the message names where (a query parameter, a form field, the body)."""


def shown(name: str) -> str:
    """A client-supplied name fit for a message: plain names as they are, anything else
    escaped (no NUL or lone surrogate reaches a response) and cut to 60 characters."""
    return name[:60] if name.isidentifier() else ascii(name[:60])


def text_problem(value: str) -> str | None:
    """What is wrong with one piece of client text, or None."""
    found = _BAD_CHARS.search(value)
    if found is None:
        return None
    return "NUL characters" if found.group() == "\x00" else "lone surrogate characters"


def check_pairs(pairs: Iterable[tuple[str, Iterable[Any]]], where: str) -> None:
    """Keys and text values of a QueryDict's ``lists()`` (query string, form fields, file
    names); `BadInput` names the first bad one."""
    for key, values in pairs:
        for text in (key, *(v if isinstance(v, str) else getattr(v, "name", "") for v in values)):
            problem = text_problem(text or "")
            if problem:
                raise BadInput(f"{where} {shown(key)}: {problem} are not allowed")


def check_json(value: Any, where: str = "request body") -> None:
    """Depth and text of a parsed JSON value, walked without recursion."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_JSON_DEPTH:
                raise BadInput(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
            for k, v in node.items():
                problem = text_problem(k)
                if problem:
                    raise BadInput(f"{where}: a key holds {problem}, which are not allowed")
                stack.append((v, depth + 1, f"{path}.{k}" if path else k))
        elif isinstance(node, list):
            if depth > MAX_JSON_DEPTH:
                raise BadInput(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((v, depth + 1, path) for v in node)
        elif isinstance(node, str):
            problem = text_problem(node)
            if problem:
                field = f" field {shown(path.split('.', 1)[0])}" if path else ""
                raise BadInput(f"{where}{field}: {problem} are not allowed")


def loads_checked(raw: bytes | str, where: str = "request body") -> Any:
    """JSON text parsed strictly (no NaN/Infinity, no lone surrogates) and checked."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"{where}: not valid JSON ({exc})") from None
    check_json(value, where)
    return value


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, strict: `loads_checked`'s refusals are 400s."""

    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        try:
            return loads_checked(stream.read() if stream is not None else b"")
        except BadInput as exc:
            raise ParseError(str(exc)) from None


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        data = super().parse(stream, media_type, parser_context)
        try:
            check_pairs(data.lists(), "form field")
        except BadInput as exc:
            raise ParseError(str(exc)) from None
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        result = super().parse(stream, media_type, parser_context)
        try:
            check_pairs(result.data.lists(), "form field")
            check_pairs(result.files.lists(), "file field")
        except BadInput as exc:
            raise ParseError(str(exc)) from None
        return result
