"""Was a BFCL run made on the task the installed `bfcl-eval` holds under its id?

Result files of an older bfcl-eval release (`BFCL_v3_multi_turn_base_result.json`) share their
test ids with the installed release's tasks, but between releases some tasks got other user
turns (and ground truth). Scored against the installed task, such a run gets a verdict for a
task it never saw. The run's `inference_log` records each turn's query as the model saw it, so
the recorded user turns are compared with the installed task's `question`: a turn whose user
messages differ (text compared after trimming) makes the task *drifted*. Turns the installed
task leaves empty (a missing-function turn: the harness sends its own fixed prompt there) and
turns without a recorded query cannot be compared and are skipped; the comparison counts them.
"""

from __future__ import annotations

import re
from typing import Any

RELEASE_RE = re.compile(r"BFCL_(v\d+)_")


def file_release(name: str) -> str | None:
    """The bfcl-eval release a result file's name says it was written by ("v3"), if any."""
    found = RELEASE_RE.search(name.rsplit("/", 1)[-1]) if name else None
    return found.group(1) if found else None


def user_texts(messages: Any) -> list[str] | None:
    """The user messages' texts of one turn's query (None when it is not a message list)."""
    if not isinstance(messages, list):
        return None
    return [
        m["content"].strip()
        for m in messages
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)
    ]


def drifted_turns(turn_logs: list[dict], questions: list) -> tuple[list[int], int]:
    """(turns whose recorded user messages differ from the installed task's, turns compared).
    A recorded turn the installed task does not have is drift; fewer recorded turns are not (a
    run force-terminated or crashed before the end)."""
    differ: list[int] = []
    compared = 0
    for t in range(len(turn_logs)):
        if t >= len(questions):
            if user_texts(turn_logs[t].get("begin_of_turn_query")):
                differ.append(t)
            break
        recorded = user_texts(turn_logs[t].get("begin_of_turn_query"))
        installed = user_texts(questions[t])
        if recorded is None or not installed:
            continue
        compared += 1
        if recorded != installed:
            differ.append(t)
    return differ, compared
