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
    # The record compares normalised answers ("you re right i apologise"); a person reads the
    # reply as written, from its event, with the normalised key only as a fallback.
    written = {
        e["_position"]: _reply_text(e) for e in events if isinstance(e.get("_position"), int)
    }
    rows = []
    prev = None
    for k, ans in enumerate(answers):
        pos = at[k] if k < len(at) else None
        original = written.get(pos) if isinstance(pos, int) else None
        rows.append(
            {
                "n": k + 1,
                "event": pos,
                "answer": short(original, 300) if original else short(ans, 160),
                "key": short(ans, 160) if original else "",
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
        "actor_answer": _written_or_key(rows, len(rows) - 1, record.get("actor_answer"), "—"),
        "commit_answer": _written_or_key(
            rows, record.get("commit_index"), record.get("commit_answer"), "unknown"
        ),
        "actor_correct": record.get("actor_correct"),
        "commit_correct": record.get("commit_correct"),
        "missing": missing,
    }


def _reply_text(event: Mapping[str, Any]) -> str:
    """What a reply says: a candidate's answer (else its content), a message's content."""
    if event.get("type") == "candidate" and isinstance(event.get("answer"), str):
        return event["answer"]
    content = event.get("content")
    return content if isinstance(content, str) else ""


def _written_or_key(rows: list[dict[str, Any]], k: Any, key: Any, missing: str) -> str:
    """The reply as written when row k holds the same normalised answer, else the key."""
    if key is None:
        return missing
    if type(k) is int and 0 <= k < len(rows) and rows[k]["key"] == short(key, 160):
        return short(rows[k]["answer"], 200)
    return short(key, 200)
