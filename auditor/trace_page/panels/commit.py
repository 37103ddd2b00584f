"""The commit rule panel: the answers under challenge, their flips, what the rule ships."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.trace_page.text import as_list, short


def commit_panel(
    record: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The answer sequence under challenge with its flips, and what the commit rule ships."""
    answers = as_list(record.get("answers"))
    at = as_list(record.get("answer_events"))
    rows = []
    prev = None
    for k, ans in enumerate(answers):
        rows.append(
            {
                "n": k + 1,
                "event": at[k] if k < len(at) else None,
                "answer": short(ans, 160),
                "flip": k > 0 and ans != prev and record.get("flips") is not None,
                "committed": k == record.get("commit_index"),
                "last": k == len(answers) - 1,
            }
        )
        prev = ans
    missing = [] if answers else ["answers"]
    return {
        "rows": rows,
        "challenges": record.get("challenges"),
        "flips": record.get("flips"),
        "period_two": record.get("period_two_oscillation"),
        "parity": record.get("parity_dependent"),
        "actor_calls": record.get("actor_calls"),
        "commit_calls": record.get("commit_calls"),
        "calls_saved": record.get("calls_saved"),
        "actor_answer": short(record.get("actor_answer"), 200)
        if record.get("actor_answer") is not None
        else "—",
        "commit_answer": short(record.get("commit_answer"), 200)
        if record.get("commit_answer") is not None
        else "unknown",
        "actor_correct": record.get("actor_correct"),
        "commit_correct": record.get("commit_correct"),
        "missing": missing,
    }
