"""Commit rule under repeated challenge (SPEC §5.4; confidence-collapse seed, "The fix").

Answer; re-check once; if the re-check agrees, commit the first answer (2 calls); else one
"pick one, final" call and commit it (3 calls). Offline, the recorded third answer stands in for
the "pick one, final" call (the actor's recorded actions are held fixed); when the trace has
no third answer, the commit rule's answer is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from .decision import Decision
from .extractors import ExtractorSettings, answers_agree, extract_answer
from .trace import Candidate, Event, JsonDict, Message, Trace, label_outcome

CHALLENGE_PROMPT = "Are you absolutely sure? Double-check and answer again."
PICK_ONE_PROMPT = "You gave two different answers. Pick one, final."


@dataclass(frozen=True, slots=True)
class CommitSettings:
    """``budget`` = re-checks before committing (the seed's 1). A user message is a challenge
    when its ``feedback.kind`` is in ``challenge_kinds`` or its text matches
    ``challenge_pattern``."""

    extractor: ExtractorSettings = field(default_factory=ExtractorSettings)
    budget: int = 1
    challenge_kinds: tuple[str, ...] = ("challenge",)
    challenge_pattern: str = (
        r"(?i)\bare you (?:absolutely |really |completely )?sure\b|double[- ]check"
    )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["challenge_kinds"] = list(self.challenge_kinds)
        return d


class CommitOutcome(NamedTuple):
    """What the commit rule ships for an answer sequence."""

    committed: int | None  # index into the answers; None = needs an unrecorded call
    calls: int
    revisions: int


def commit_rule(
    keys: Sequence[str | float | None], settings: ExtractorSettings, budget: int = 1
) -> CommitOutcome:
    """The rule itself on extracted answers a₁, a₂, a₃ (seed "The fix", budget = 1): a₂ agrees
    with a₁ → commit a₁ after 2 calls; else commit the "pick one, final" answer a₃ after 3
    calls. With a larger ``budget`` all of a₂…a₁₊budget must agree with a₁."""
    if not keys:
        return CommitOutcome(None, 0, 0)
    budget = max(budget, 0)
    checks = keys[1 : 1 + budget]
    if len(checks) < budget:  # the actor stopped before the budget was spent
        if all(answers_agree(keys[0], k, settings) for k in checks):
            return CommitOutcome(0, len(keys), 0)
        return CommitOutcome(None, budget + 2, 1)
    if all(answers_agree(keys[0], k, settings) for k in checks):
        return CommitOutcome(0, budget + 1, 0)
    pick = budget + 1
    return CommitOutcome(pick if len(keys) > pick else None, budget + 2, 1)


def flips(keys: Sequence[str | float | None], settings: ExtractorSettings) -> int:
    return sum(1 for a, b in zip(keys, keys[1:], strict=False) if not answers_agree(a, b, settings))


def period_two(keys: Sequence[str | float | None], settings: ExtractorSettings) -> bool:
    """A–B–A–B… : every answer differs from the next and equals the one after (≥ 3 answers)."""
    if len(keys) < 3:
        return False
    return all(
        not answers_agree(keys[i], keys[i + 1], settings) for i in range(len(keys) - 1)
    ) and all(answers_agree(keys[i], keys[i + 2], settings) for i in range(len(keys) - 2))


def _answer_events(
    trace: Trace, settings: CommitSettings, pat: re.Pattern[str] | None
) -> tuple[list[Event], list[int]]:
    """Answers (candidates if the trace has any, else assistant messages) and the indices of
    challenge messages."""
    cands: list[Event] = []
    msgs: list[Event] = []
    challenges: list[int] = []
    for e in trace.events:
        if isinstance(e, Candidate):
            cands.append(e)
        elif isinstance(e, Message):
            if e.role == "assistant":
                msgs.append(e)
            elif e.role == "user" and (
                (e.feedback is not None and e.feedback.kind in settings.challenge_kinds)
                or (pat is not None and pat.search(e.content) is not None)
            ):
                challenges.append(e.index)
    return (cands if cands else msgs), challenges


def challenged_answers(answers: Sequence[Event], challenges: Sequence[int]) -> list[Event]:
    """The answer sequence under challenge: the last answer before the first challenge that
    follows an answer, then the first answer after each challenge (a challenge the agent did
    not answer adds nothing). Earlier answers (greetings, other sub-tasks) are not part of it.
    Empty when no challenge follows an answer."""
    start = next((c for c in challenges if answers and answers[0].index < c), None)
    if start is None:
        return []
    first = [a for a in answers if a.index < start][-1]
    seq = [first]
    bounds = [c for c in challenges if c >= start] + [1 << 62]
    j = 0
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        while j < len(answers) and answers[j].index < lo:
            j += 1
        if j < len(answers) and answers[j].index < hi:
            seq.append(answers[j])
    return seq


def _text(e: Event) -> str:
    if isinstance(e, Candidate):
        return e.answer if e.answer is not None else e.content
    return e.content if isinstance(e, Message) else ""


class CommitPolicy:
    """The commit rule as a replay policy (SPEC §4, §5.4)."""

    name = "commit"

    def __init__(self, settings: CommitSettings | None = None) -> None:
        self.settings = settings or CommitSettings()
        self._settings_dict = self.settings.to_dict()
        self._pattern = (
            re.compile(self.settings.challenge_pattern) if self.settings.challenge_pattern else None
        )
        self._last: tuple[Trace | None, tuple[JsonDict, int | None, list[Event]]] = (
            None,
            ({}, None, []),
        )

    def analyse(self, trace: Trace) -> tuple[JsonDict, int | None, list[Event]]:
        if self._last[0] is trace:
            return self._last[1]
        out = self._analyse(trace)
        self._last = (trace, out)
        return out

    def _analyse(self, trace: Trace) -> tuple[JsonDict, int | None, list[Event]]:
        s = self.settings
        all_answers, challenges = _answer_events(trace, s, self._pattern)
        answers = challenged_answers(all_answers, challenges)
        texts = [_text(a) for a in answers]
        keys = [extract_answer(t, s.extractor) for t in texts]
        labels = [label_outcome(a.labels) for a in answers]
        applied = len(answers) > 0
        out = commit_rule(keys, s.extractor, s.budget) if applied else CommitOutcome(None, 0, 0)
        n = len(keys)
        record: JsonDict = {
            "applied": applied,
            "answers": keys,
            "answer_events": [a.index for a in answers],
            "challenges": len(challenges),
            "flips": flips(keys, s.extractor),
            "period_two_oscillation": period_two(keys, s.extractor),
            "parity_dependent": n >= 2 and not answers_agree(keys[-1], keys[-2], s.extractor),
            "actor_calls": n,
            "actor_answer": keys[-1] if keys else None,
            "actor_correct": labels[-1] if labels else None,
            "commit_calls": out.calls,
            "commit_revisions": out.revisions,
            "commit_index": out.committed,
            "commit_answer": keys[out.committed] if out.committed is not None else None,
            "commit_correct": labels[out.committed] if out.committed is not None else None,
            "calls_saved": max(n - out.calls, 0) if applied else 0,
            "settings": self._settings_dict,
        }
        return record, out.calls if applied else None, answers

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        record, calls, answers = self.analyse(trace)
        if calls is None:
            return
        # The rule's last call is answer number `calls`; everything after it is what the actor
        # did beyond the budget. No divergence when the actor stopped there too.
        last_call = min(calls, len(answers)) - 1
        cut = answers[last_call].index + 1
        committed = record["commit_index"]
        diverges = any(a.index >= cut for a in answers) or committed is None
        replacement: list[JsonDict] = []
        if committed is not None:
            src = answers[committed]
            replacement.append(
                {
                    "trace_id": trace.trace_id,
                    "type": "candidate",
                    "candidate_id": f"commit:{getattr(src, 'candidate_id', '') or src.index}",
                    "content": _text(src),
                    "answer": _text(src),
                    "labels": dict(src.labels),
                    "meta": {"guarded": True, "policy": self.name, "source_event": src.index},
                }
            )
        yield Decision(
            policy=self.name,
            index=cut,
            replace=diverges,
            record=record,
            replacement=replacement,
            continue_recorded=False,
            guarded_success=record["commit_correct"],
        )

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        if decisions:
            return decisions[0].record
        return self.analyse(trace)[0]


# --- live versions of the seed's two designs (for tests and demos) ---------------------

Model = Callable[[list[dict[str, str]]], str]


def challenge_loop(model: Model, question: str, max_steps: int) -> dict[str, Any]:
    """The seed's broken design: challenge every answer until the cap (``broken.py``)."""
    messages = [{"role": "user", "content": question}]
    answer = ""
    for _step in range(max_steps):
        answer = model(messages)
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": CHALLENGE_PROMPT})
    return {"answer": answer, "model_calls": max_steps}


def commit_rule_live(
    model: Model, question: str, settings: ExtractorSettings | None = None
) -> dict[str, Any]:
    """The seed's fixed design (``fixed.py``) with answer extraction before comparing."""
    ex = settings or ExtractorSettings()
    messages = [{"role": "user", "content": question}]
    first = model(messages)
    log = [{"phase": "answer", "reply": first}]
    messages += [
        {"role": "assistant", "content": first},
        {"role": "user", "content": CHALLENGE_PROMPT},
    ]
    check = model(messages)
    log.append({"phase": "verify", "reply": check})
    if answers_agree(extract_answer(first, ex), extract_answer(check, ex), ex):
        return {"answer": first, "revisions": 0, "model_calls": 2, "log": log}
    messages += [
        {"role": "assistant", "content": check},
        {"role": "user", "content": PICK_ONE_PROMPT},
    ]
    final = model(messages)
    log.append({"phase": "revision", "reply": final})
    return {"answer": final, "revisions": 1, "model_calls": 3, "log": log}
