"""Output hygiene for agent-controlled strings: CSV cells a spreadsheet would run as formulas,
and file names that reach headers and storage paths."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# A spreadsheet treats a cell starting with one of these as a formula (OWASP "CSV injection");
# tab and CR are on the list because some spreadsheets skip them before looking.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

# Control characters (CR/LF among them) and the bidi controls that reorder what is shown.
_UNSAFE_NAME_CHARS = re.compile(r"[\x00-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
MAX_FILENAME = 255


def csv_safe(value: Any) -> Any:
    """A cell that cannot start a formula: strings starting with a formula character get a
    leading apostrophe, which spreadsheets show as text and do not evaluate. Numbers keep their
    sign: they are written as numbers, not text, and are not formulas."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def clean_filename(name: str | None, default: str = "upload.jsonl") -> str:
    """The last path part of a client-supplied name, without control or bidi characters or
    quotes, at most 255 characters; `default` when nothing is left. The name goes into
    Content-Disposition headers, storage paths and pages."""
    name = unicodedata.normalize("NFC", name or "")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME_CHARS.sub("", name).replace('"', "").replace("'", "").strip(" .")
    if not name:
        return default
    if len(name) > MAX_FILENAME:
        # Keep the extension: it names the format (.jsonl, .gz) for detection.
        stem, dot, ext = name.rpartition(".")
        ext = ext[:16] if dot and stem else ""
        name = name[: MAX_FILENAME - len(ext) - 1] + "." + ext if ext else name[:MAX_FILENAME]
    return name
