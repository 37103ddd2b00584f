"""The answer sequence under challenge and its oscillation (SPEC §5.4; confidence-collapse
seed "The scenario"): which replies are answers, which user messages are challenges, flips,
period-2 oscillation."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..trace import Candidate, Event, Message, Trace
from .extractors import ExtractorSettings, answers_agree


def flips(keys: Sequence[str | float | None], settings: ExtractorSettings) -> int:
    return sum(1 for a, b in zip(keys, keys[1:], strict=False) if not answers_agree(a, b, settings))


def period_two(keys: Sequence[str | float | None], settings: ExtractorSettings) -> bool:
    """A–B–A–B… : every answer differs from the next and equals the one after (≥ 3 answers)."""
    if len(keys) < 3:
        return False
    return all(
        not answers_agree(keys[i], keys[i + 1], settings) for i in range(len(keys) - 1)
    ) and all(answers_agree(keys[i], keys[i + 2], settings) for i in range(len(keys) - 2))


def answer_events(
    trace: Trace, challenge_kinds: Sequence[str], pat: re.Pattern[str] | None
) -> tuple[list[Event], list[int]]:
    """Answers (candidates if the trace has any, else assistant messages) and the indices of
    challenge messages."""
    cands: list[Event] = []
    msgs: list[Event] = []
    challenges: list[int] = []
    for e in trace.events:  # exact types: the trace builds no subclasses (hot path)
        te = type(e)
        if te is Candidate:
            cands.append(e)
        elif te is Message:
            assert isinstance(e, Message)
            if e.role == "assistant":
                msgs.append(e)
            elif e.role == "user" and (
                (e.feedback is not None and e.feedback.kind in challenge_kinds)
                or (pat is not None and pat.search(e.content) is not None)
            ):
                challenges.append(e.index)
    return (cands if cands else msgs), challenges


def challenged_answers(
    answers: Sequence[Event], challenges: Sequence[int]
) -> list[tuple[Event, int | None]]:
    """The answer sequence under challenge, each with the challenge it answers: the last answer
    before the first challenge that follows an answer (None), then the first answer after each
    challenge (a challenge the agent did not answer adds nothing). Earlier answers (greetings,
    other sub-tasks) are not part of it. Empty when no challenge follows an answer."""
    start = next((c for c in challenges if answers and answers[0].index < c), None)
    if start is None:
        return []
    first = [a for a in answers if a.index < start][-1]
    seq: list[tuple[Event, int | None]] = [(first, None)]
    bounds = [c for c in challenges if c >= start] + [1 << 62]
    j = 0
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        while j < len(answers) and answers[j].index < lo:
            j += 1
        if j < len(answers) and answers[j].index < hi:
            seq.append((answers[j], lo))
    return seq
