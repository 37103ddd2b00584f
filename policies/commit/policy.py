"""Commit rule under repeated challenge (SPEC §5.4; confidence-collapse seed, "The fix").

Answer; re-check once; if the re-check agrees, commit the first answer (2 calls); else one
"pick one, final" call and commit it (3 calls). Answers are compared **on meaning**: after
short-answer extraction (`policies.commit.extractors`) or by a model's label
(``compare = "model"``).

Replaying a recorded trace holds the actor's recorded calls fixed, so a call of the rule is
taken from the trace only when the trace holds exactly that call: the re-check is the recorded
reply to a challenge whose text is the rule's re-check prompt (setting ``recorded_recheck``).
Every other call of the rule — always the "pick one, final" call — is made live through a
*responder* (`policies.commit.live`) or its outcome is **unknown**; it is never filled from a
recorded later turn, which answers a different prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

from ..decision import Decision
from ..trace import Event, JsonDict, Message, Trace, label_outcome
from .answers import answer_events, challenged_answers, flips, period_two
from .extractors import ExtractorSettings, answers_agree, extract_answer
from .live import (
    CHALLENGE_PROMPT,
    PICK_ONE_PROMPT,
    CallFailed,
    ChatMessage,
    Comparer,
    Responder,
    call,
    chat_history,
    reply_text,
)
from .text import (
    HARNESS_ERROR_REASON,
    NO_SHORT_ANSWER,
    PAPER_CHALLENGE,
    all_short,
    is_harness_error,
)

NO_CHALLENGE = "no challenges"
_WS = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class CommitSettings:
    """``budget`` = re-checks before committing (the seed's 1). A user message is a challenge
    when its ``feedback.kind`` is in ``challenge_kinds`` or its text matches
    ``challenge_pattern``. ``compare``: ``"extract"`` compares extracted short answers
    (``extractor``), ``"model"`` asks the comparison model (a labeler responder).
    ``recorded_recheck`` (this project's choice, the seed has no recorded traces): which
    recorded replies count as the rule's re-check — ``"matching_prompt"`` only a reply to a
    challenge whose text is ``recheck_prompt`` (case and spacing aside), ``"any_challenge"``
    a reply to any challenge (an approximation, labelled as such in the record), ``"never"``
    always re-check live. ``challenge_pattern`` defaults to the seed's challenge and
    ``short_answer_words`` bounds a short answer (`policies.commit.text`)."""

    extractor: ExtractorSettings = field(default_factory=ExtractorSettings)
    compare: Literal["extract", "model"] = "extract"
    budget: int = 1
    challenge_kinds: tuple[str, ...] = ("challenge",)
    challenge_pattern: str = PAPER_CHALLENGE
    recheck_prompt: str = CHALLENGE_PROMPT
    pick_one_prompt: str = PICK_ONE_PROMPT
    recorded_recheck: Literal["matching_prompt", "any_challenge", "never"] = "matching_prompt"
    short_answer_words: int = 12

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["challenge_kinds"] = list(self.challenge_kinds)
        return d


class CommitStep(NamedTuple):
    commit: Literal["first", "pick_one"]
    calls: int
    revisions: int


def commit_rule(recheck_agrees: Sequence[bool]) -> CommitStep:
    """The rule (seed "The fix") after the first answer and its re-checks. Preconditions: at
    least one re-check, each known to agree or not. Every re-check agrees → commit the first
    answer (1 + re-checks calls); else one "pick one, final" call, committed (2 + re-checks)."""
    if not recheck_agrees:
        raise ValueError("the commit rule needs at least one re-check")
    n = len(recheck_agrees)
    if all(recheck_agrees):
        return CommitStep("first", n + 1, 0)
    return CommitStep("pick_one", n + 2, 1)


def _same_prompt(a: str, b: str) -> bool:
    return _WS.sub(" ", a).strip().casefold() == _WS.sub(" ", b).strip().casefold()


class _Unknown(Exception):
    """The rule's outcome cannot be known; the message says why."""


class CommitPolicy:
    """The commit rule as a replay policy (SPEC §4, §5.4). ``responder`` makes the rule's calls
    that the trace does not hold; ``labeler`` labels answer agreement when ``compare`` is
    "model". Both are `policies.commit.live.Responder`s, both optional."""

    name = "commit"

    def __init__(
        self,
        settings: CommitSettings | None = None,
        responder: Responder | None = None,
        labeler: Responder | None = None,
    ) -> None:
        self.settings = settings or CommitSettings()
        if self.settings.compare == "model" and labeler is None:
            raise ValueError("commit compare = 'model' needs a comparison model (labeler)")
        self.responder = responder
        self.labeler = labeler
        self._settings_dict = self.settings.to_dict()
        self._pattern = (
            re.compile(self.settings.challenge_pattern) if self.settings.challenge_pattern else None
        )
        self._last: tuple[Trace | None, JsonDict] = (None, {})

    def analyse(self, trace: Trace) -> JsonDict:
        if self._last[0] is trace:
            return self._last[1]
        out = self._analyse(trace)
        self._last = (trace, out)
        return out

    def _analyse(self, trace: Trace) -> JsonDict:
        s = self.settings
        all_answers, challenges = answer_events(trace, s.challenge_kinds, self._pattern)
        errors = sum(1 for a in all_answers if is_harness_error(a))
        replies = [a for a in all_answers if not is_harness_error(a)] if errors else all_answers
        seq = challenged_answers(replies, challenges)
        answers = [a for a, _ in seq]
        texts = [reply_text(a) for a in answers]
        keys = [extract_answer(t, s.extractor) for t in texts]
        labels = [label_outcome(a.labels) for a in answers]
        n = len(answers)
        countable = all_short(keys, s.short_answer_words)
        ended_on_error = bool(all_answers) and is_harness_error(all_answers[-1])
        na = None
        if not n:
            had = bool(errors) and bool(challenged_answers(all_answers, challenges))
            na = HARNESS_ERROR_REASON if had else NO_CHALLENGE
        elif s.compare == "extract" and not countable:
            na = NO_SHORT_ANSWER
        record: JsonDict = {
            "applied": na is None,
            "not_applicable": na,
            "answers": keys,
            "answer_events": [a.index for a in answers],
            "challenges": len(challenges),
            "harness_errors": errors,
            "flips": flips(keys, s.extractor) if countable else None,
            "period_two_oscillation": period_two(keys, s.extractor) if countable else None,
            "parity_dependent": (
                n >= 2 and not answers_agree(keys[-1], keys[-2], s.extractor) if countable else None
            ),
            "actor_calls": n,
            "actor_answer": keys[-1] if keys else None,
            # the actor shipped its last reply: when that is a harness error, nothing known
            "actor_correct": labels[-1] if labels and not ended_on_error else None,
            "settings": self._settings_dict,
        }
        if na is None:
            record.update(self._rule(trace, seq, texts, labels))
        return record

    def _rule(
        self,
        trace: Trace,
        seq: Sequence[tuple[Event, int | None]],
        texts: Sequence[str],
        labels: Sequence[bool | None],
    ) -> JsonDict:
        """Run the rule over the recorded sequence, calling the responder where needed."""
        s = self.settings
        events = trace.events
        question = next(
            (e.content for e in events if isinstance(e, Message) and e.role == "user"), ""
        )
        comparer = Comparer(s.extractor, self.labeler if s.compare == "model" else None, question)
        messages: list[ChatMessage] = chat_history(events, seq[0][0].index)
        live: list[JsonDict] = []
        rechecks: list[JsonDict] = []
        last_recorded = seq[0][0]
        out: JsonDict = {
            "recheck_source": None,
            "rechecks": rechecks,
            "pick_one": None,
            "live_calls": live,
            "commit_calls": None,
            "commit_revisions": None,
            "commit_index": None,
            "commit_answer": None,
            "commit_correct": None,
            "commit_label_basis": None,
            "unknown_reason": None,
            "calls_saved": None,
        }
        try:
            agrees: list[bool] = []
            for k in range(1, max(s.budget, 1) + 1):
                reply, source = self._recheck(trace, seq, k, messages, bool(live))
                if source == "live":
                    live.append({"call": f"re-check {k}", "reply": reply})
                else:
                    last_recorded = seq[k][0]
                messages += [
                    {"role": "user", "content": s.recheck_prompt},
                    {"role": "assistant", "content": reply},
                ]
                agree = comparer.agree(texts[0], reply)
                if agree is None:
                    raise _Unknown("the comparison model gave no verdict")
                agrees.append(agree)
                rechecks.append({"source": source, "key": comparer.key(reply), "agrees": agree})
            out["recheck_source"] = rechecks[0]["source"]
            step = commit_rule(agrees)
            out["commit_calls"], out["commit_revisions"] = step.calls, step.revisions
            if step.commit == "first":
                committed: int | None = 0
                committed_text = texts[0]
                out["commit_correct"], out["commit_label_basis"] = labels[0], "first answer"
            else:
                if self.responder is None:
                    raise _Unknown(
                        "the 'pick one, final' call is not in the trace and no model is configured"
                    )
                messages.append({"role": "user", "content": s.pick_one_prompt})
                committed_text = call(self.responder, messages, "pick-one")
                live.append({"call": "pick one, final", "reply": committed_text})
                out["pick_one"] = {"key": comparer.key(committed_text)}
                committed, out["commit_correct"], out["commit_label_basis"] = self._label_of(
                    comparer, committed_text, texts, labels
                )
            out["commit_index"] = committed
            out["commit_answer"] = comparer.key(committed_text)
            out["commit_text"] = committed_text
            if out["commit_correct"] is None:
                out["unknown_reason"] = "the committed answer has no label in the trace"
            out["calls_saved"] = len(seq) - step.calls
        except _Unknown as exc:
            out["unknown_reason"] = str(exc)
        except CallFailed as exc:
            out["unknown_reason"] = str(exc)
        out["last_recorded_event"] = last_recorded.index
        return out

    def _recheck(
        self,
        trace: Trace,
        seq: Sequence[tuple[Event, int | None]],
        k: int,
        messages: list[ChatMessage],
        went_live: bool,
    ) -> tuple[str, str]:
        """Re-check k: the recorded reply when the trace holds exactly that call (and replay
        is still exact), else a live call, else unknown."""
        s = self.settings
        if not went_live and k < len(seq) and s.recorded_recheck != "never":
            answer, challenge_at = seq[k]
            challenge = trace.events[challenge_at] if challenge_at is not None else None
            if isinstance(challenge, Message) and (
                s.recorded_recheck == "any_challenge"
                or _same_prompt(challenge.content, s.recheck_prompt)
            ):
                src = "recorded" if s.recorded_recheck == "matching_prompt" else "recorded_any"
                return reply_text(answer), src
        if self.responder is None:
            raise _Unknown("the re-check is not in the trace and no model is configured")
        prompt = [*messages, {"role": "user", "content": s.recheck_prompt}]
        return call(self.responder, prompt, f"re-check {k}"), "live"

    @staticmethod
    def _label_of(
        comparer: Comparer, text: str, texts: Sequence[str], labels: Sequence[bool | None]
    ) -> tuple[int | None, bool | None, str | None]:
        """A live answer's label: that of the first labelled recorded answer it agrees with."""
        for j, (t, lab) in enumerate(zip(texts, labels, strict=True)):
            if lab is not None and comparer.agree(text, t):
                return j, lab, f"same answer as recorded answer {j}"
        return None, None, None

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        record = self.analyse(trace)
        if not record["applied"]:
            return
        events = record["answer_events"]
        last_recorded = int(record.get("last_recorded_event", events[0]))
        live = record.get("live_calls") or []
        cut = last_recorded + 1
        actor_beyond = any(i >= cut for i in events)
        committed = record.get("commit_index")
        if not actor_beyond and not live and record["unknown_reason"] is None:
            if committed is not None and events[committed] == events[-1]:
                return  # the rule ships what the actor shipped, with the same calls
        replacement: list[JsonDict] = [
            {
                "trace_id": trace.trace_id,
                "type": "message",
                "role": "assistant",
                "content": c["reply"],
                "meta": {"guarded": True, "policy": self.name, "live_call": c["call"]},
            }
            for c in live
        ]
        if record.get("commit_text") is not None:
            replacement.append(
                {
                    "trace_id": trace.trace_id,
                    "type": "candidate",
                    "candidate_id": f"commit:{trace.trace_id}",
                    "content": record["commit_text"],
                    "answer": record["commit_text"],
                    "labels": {"correct": record["commit_correct"]}
                    if record["commit_correct"] is not None
                    else {},
                    "meta": {"guarded": True, "policy": self.name, "committed": True},
                }
            )
        yield Decision(
            policy=self.name,
            index=cut,
            replace=True,
            record={"commit_index": committed},
            replacement=replacement,
            continue_recorded=False,
            guarded_success=record["commit_correct"],
        )

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        return self.analyse(trace)


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
    step = commit_rule([answers_agree(extract_answer(first, ex), extract_answer(check, ex), ex)])
    if step.commit == "first":
        return {"answer": first, "revisions": 0, "model_calls": step.calls, "log": log}
    messages += [
        {"role": "assistant", "content": check},
        {"role": "user", "content": PICK_ONE_PROMPT},
    ]
    final = model(messages)
    log.append({"phase": "revision", "reply": final})
    return {"answer": final, "revisions": 1, "model_calls": step.calls, "log": log}
