"""Call strings read without compiling them: ``name(key=literal, …)`` → ``(name, {key: value})``.

The BFCL environment executes a call string (a ground-truth call, a re-checked model call) the
package's way: the method names prefixed with an instance variable, the string compiled to an
AST and evaluated (`bfcl_world._World.run`). For most strings that can only mean
``method(**arguments)``, which `_World.call` executes directly. This reads such strings: keyword
arguments only, each value a literal written the one way Python reads it as that value —

- a string in single or double quotes with no backslash, newline or quote of its own kind (the
  characters between the quotes are the value),
- a decimal int without leading zeros, of at most 18 digits, or a decimal float
  ``digits.digits`` (Python's literal and ``int()``/``float()`` read these alike), either with a
  leading ``-``,
- ``True``, ``False``, ``None``, or a list of these (a trailing comma allowed),

spaces and tabs between tokens. Anything else — positional arguments, a repeated keyword,
tuples, dicts, escapes, exponents, other names, text after the call — is None, and the caller
compiles the string as before, so what it means (and its error, if it is malformed) is the
package's either way.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(
    r"""[ \t]*(?:
        (?P<str>'[^'\\\n]*'|"[^"\\\n]*")
      | (?P<num>-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]+)?)(?![0-9A-Za-z_.])
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>[(),=\[\]])
    )""",
    re.VERBOSE,
)
_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
_FAIL = object()


def _tokens(text: str) -> list[tuple[str, str]] | None:
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return None if text[pos:].strip(" \t") else out
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _value(toks: list[tuple[str, str]], i: int) -> tuple[Any, int]:
    """The literal at ``toks[i]`` and the index after it; ``_FAIL`` when it is none."""
    if i >= len(toks):
        return _FAIL, i
    kind, text = toks[i]
    if kind == "str":
        return text[1:-1], i + 1
    if kind == "num":
        return (float(text) if "." in text else int(text)), i + 1
    if kind == "name":
        return (_CONSTANTS[text], i + 1) if text in _CONSTANTS else (_FAIL, i)
    if text != "[":
        return _FAIL, i
    items: list[Any] = []
    i += 1
    while i < len(toks) and toks[i][1] != "]":
        item, i = _value(toks, i)
        if item is _FAIL:
            return _FAIL, i
        items.append(item)
        if i < len(toks) and toks[i][1] == ",":
            i += 1
        elif i >= len(toks) or toks[i][1] != "]":
            return _FAIL, i
    if i >= len(toks):
        return _FAIL, i
    return items, i + 1


def parse_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a call string of the form above, else None."""
    toks = _tokens(text)
    if not toks or len(toks) < 3 or toks[0][0] != "name" or toks[1][1] != "(":
        return None
    if text[:1] in " \t":
        return None  # eval strips leading blanks itself; leave such strings to it
    args: dict[str, Any] = {}
    i = 2
    while toks[i][1] != ")":
        if i + 2 >= len(toks) or toks[i][0] != "name" or toks[i + 1][1] != "=":
            return None
        key = toks[i][1]
        value, i = _value(toks, i + 2)
        if value is _FAIL or key in args or i >= len(toks):
            return None
        args[key] = value
        if toks[i][1] == ",":
            i += 1
            if i >= len(toks):
                return None
        elif toks[i][1] != ")":
            return None
    if i != len(toks) - 1:
        return None  # text after the call
    return toks[0][1], args
