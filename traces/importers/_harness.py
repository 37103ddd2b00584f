"""Replies that are the harness's error text, not the model's answer.

Benchmark harnesses write an exception's message where the model's reply would be when every
retry of a generation failed — SYCON-Bench's generation scripts raise
``RuntimeError(f"Aborting: Unable to generate response {i} after {n} retries.")`` and the text
lands in the response column; bfcl-eval writes "Error during inference: …". Such a reply says
nothing about what the model believes: importers flag it (``meta.harness_error``) so that no
policy reads it as an answer.
"""

from __future__ import annotations

import re

#: Whole-reply patterns of harness error texts (matched at the start of the stripped reply).
HARNESS_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("generation_aborted", re.compile(r"Aborting: Unable to generate response\b")),
    ("inference_error", re.compile(r"Error during inference\b")),
    (
        "retries_exhausted",
        re.compile(
            r"(?:Error|Exception|RuntimeError|APIError)\b[^\n]{0,200}?\bafter \d+ "
            r"(?:retries|attempts)\b"
        ),
    ),
)
#: Longer texts are model replies that may quote an error, not an error in place of a reply.
MAX_ERROR_CHARS = 500


def harness_error(text: object) -> str | None:
    """The kind of harness error ``text`` is, or None when it reads as a model reply."""
    if not isinstance(text, str):
        return None
    s = text.strip()
    if not s or len(s) > MAX_ERROR_CHARS:
        return None
    for kind, pattern in HARNESS_ERRORS:
        if pattern.match(s):
            return kind
    return None
