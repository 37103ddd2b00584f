"""Answer extractors for the commit rule (SPEC §5.4; confidence-collapse seed, "Where the fix
stops": "Real systems extract the answer first, then compare").

An extractor maps a reply to a comparable key (or None when no answer is found); two replies
agree when their keys do (numeric keys within a tolerance).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any, Literal

ExtractorKind = Literal["exact", "fold", "numeric", "choice", "regex"]

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_CHOICE_PATTERNS = (
    re.compile(r"\banswer\s*(?:is|:)?\s*\(?([A-Ea-e])\)?(?![A-Za-z])"),
    re.compile(r"\(([A-E])\)"),
    re.compile(r"^\s*([A-E])(?:[.):]|\s*$)"),
    re.compile(r"\b([A-E])\s*$"),
)
_FOLD_STRIP = re.compile(r"[\s\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class ExtractorSettings:
    """``kind`` picks the extractor; ``pattern`` (regex kind) must have one group or uses the
    whole match; numeric keys agree within ``abs_tol`` or ``rel_tol``."""

    kind: ExtractorKind = "fold"
    pattern: str = ""
    abs_tol: float = 1e-9
    rel_tol: float = 1e-6

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _FOLD_STRIP.sub(" ", text).strip()


def extract_answer(text: str | None, settings: ExtractorSettings) -> str | float | None:
    """The answer key of one reply under ``settings``."""
    if text is None:
        return None
    kind = settings.kind
    if kind == "exact":
        return text
    if kind == "fold":
        folded = _fold(text)
        return folded or None
    if kind == "numeric":
        m = _NUMBER.findall(text)
        if not m:
            return None
        try:
            return float(m[-1].replace(",", ""))  # the last number is the conclusion
        except ValueError:
            return None
    if kind == "choice":
        for pat in _CHOICE_PATTERNS:
            found = pat.search(text)
            if found:
                return found.group(1).upper()
        return None
    if kind == "regex":
        found = re.search(settings.pattern, text)
        if not found:
            return None
        return found.group(1) if found.groups() else found.group(0)
    raise ValueError(f"unknown extractor kind {kind!r}")


def answers_agree(
    a: str | float | None, b: str | float | None, settings: ExtractorSettings
) -> bool:
    """Whether two extracted keys agree. Two missing answers do not agree (nothing to commit)."""
    if a is None or b is None:
        return False
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= max(settings.abs_tol, settings.rel_tol * max(abs(a), abs(b)))
    return a == b
