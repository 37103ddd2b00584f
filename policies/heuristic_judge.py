"""The ``heuristic`` judge: a deterministic, offline pairwise verifier (SPEC §4), clearly a
heuristic and labelled as such in every verdict.

It never sees the certificate. It scores each candidate on its own from the trace prefix's
facts, with independent signal families (value +1 for, −1 against, 0 neutral, None when the
family does not apply to that kind of candidate):

- ``validity``: the tool exists, is offered at this turn, and the arguments validate against
  its schema (calls);
- ``failed_repeat``: the call is identical to one that failed, and that tool has not
  succeeded since (calls);
- ``grounding``: every argument value appears in a user message or tool result, or is one of
  the parameter's enumerated values (calls with arguments);
- ``request_args``: an identifier argument the latest request names (+1), or one of a kind
  the request names differently (−1) (calls);
- ``request_action``: a state-changing call whose action the latest request asks the
  opposite of (−1: "lock" asked, "unlock" proposed — the judge's own list of opposite
  actions), else whose words the request uses or whose action an error of this turn demands
  (+1), else (−1, nobody asked for this state change); reads are neutral; a completion
  after a successful call this turn (+1), before any, or when the request asks for
  information (a question, "verify", "show"…) and nothing of this turn read any (−1);
- ``turn_state``: a read after an unresolved failure of this turn gathers evidence (+1); a
  completion with no unresolved failure (+1) or with one (−1); asking the user with an
  unresolved failure (+1) or without (−1).

Fatal: a −1 in ``validity``, ``failed_repeat``, ``grounding``, ``request_args`` or
``request_action``, or a completion that leaves a failure unresolved. Score: 2 + the sum of the
values, clipped to 0–4, at most 1 when fatal. Preference: the higher score.

Confidence comes from the **agreement of the families**, not from the score margin: each family
whose values differ votes for the better side with a likelihood ratio (``weights``: 9 for the
decisive families ``validity`` and ``failed_repeat``, 3 for the others — hand-set), and the
confidence is the posterior ``1 / (1 + exp(-net log-LR))`` of the preferred side from an even
prior (naive Bayes over independent detectors).

No family separates the two → the judge **abstains** (no evidence: the actor is kept). Equal
scores with some evidence → a **position prior**: it prefers A with confidence 0.5, as real LLM
judges lean to a position when they cannot tell; its two orders then disagree and the
counterbalanced gate rejects the pair — which is what the both-order check is for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .certificates.stale import identifier_kind
from .facts import TraceFacts, canonical_args, scalar_text, tokens
from .judges import PairRequest, Proposal, Verdict
from .schema import validate
from .tool_profile import ToolProfile, build_profile, enum_values, name_tokens, stem, text_stems

FAMILIES = (
    "validity",
    "failed_repeat",
    "grounding",
    "request_args",
    "request_action",
    "turn_state",
)
FATAL_FAMILIES = frozenset(
    {"validity", "failed_repeat", "grounding", "request_args", "request_action"}
)
DEFAULT_WEIGHTS: dict[str, float] = {
    "validity": 9.0,
    "failed_repeat": 9.0,
    "grounding": 3.0,
    "request_args": 3.0,
    "request_action": 3.0,
    "turn_state": 3.0,
}
_DIGITS = re.compile(r"(?<![A-Za-z0-9])\d{3,}(?![A-Za-z0-9])")
#: Name tokens that say nothing about what a call does.
_GENERIC = frozenset("get set the and all new info status data id of by to for".split())
#: Opposite actions, as a reader of the request knows them: a call doing one while the request
#: asks for the other contradicts the request. (The judge's own word list: it does not look at
#: earlier calls or targets, which is what the inverse-action certificate does.)
OPPOSITES: dict[str, str] = {}
for _a, _b in (
    ("lock", "unlock"),
    ("start", "stop"),
    ("press", "release"),
    ("engage", "release"),
    ("open", "close"),
    ("enable", "disable"),
    ("activate", "deactivate"),
    ("follow", "unfollow"),
    ("add", "remove"),
    ("login", "logout"),
    ("connect", "disconnect"),
    ("mute", "unmute"),
    ("book", "cancel"),
    ("create", "delete"),
    ("deposit", "withdraw"),
    ("fund", "withdraw"),
):
    OPPOSITES.setdefault(_a, _b)
    OPPOSITES.setdefault(_b, _a)


@dataclass(slots=True)
class Evidence:
    values: dict[str, int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fatal: bool = False

    def put(self, family: str, value: int | None, note: str = "") -> None:
        self.values[family] = value
        if note:
            self.notes.append(f"{family} {value:+d}: {note}" if value is not None else note)
        if value == -1 and family in FATAL_FAMILIES:
            self.fatal = True

    @property
    def score(self) -> float:
        s = max(0.0, min(4.0, 2.0 + sum(v for v in self.values.values() if v is not None)))
        return min(s, 1.0) if self.fatal else s

    def to_dict(self) -> dict[str, Any]:
        return {"values": dict(self.values), "notes": list(self.notes), "fatal": self.fatal}


class HeuristicJudge:
    """See the module docstring. ``weights``: likelihood ratio per family."""

    name = "heuristic"
    reads_context = False  # it reads the trace facts, not the rendered text

    def __init__(self, weights: dict[str, float] | None = None) -> None:
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        # The two orders of a pair ask about the same candidates on the same prefix.
        self._memo: tuple[TraceFacts | None, int, dict[tuple[str, str, str, str], Evidence]] = (
            None,
            -1,
            {},
        )

    def _evidence(self, p: Proposal, facts: TraceFacts, profile: ToolProfile | None) -> Evidence:
        owner, seen, memo = self._memo
        if owner is not facts or seen != len(facts.attempts):
            memo = {}
            self._memo = (facts, len(facts.attempts), memo)
        key = (p.kind, p.name, canonical_args(p.arguments), p.text)
        found = memo.get(key)
        if found is None:
            found = memo[key] = evidence(p, facts, profile)
        return found

    def judge(self, request: PairRequest) -> Verdict:
        facts = request.facts
        if facts is None:
            return Verdict.abstain(self.name, "no trace facts to judge from")
        # build_profile keeps the last trace's profile: TwinCheck built this one already
        profile = None if request.trace is None else build_profile(request.trace)
        ea = self._evidence(request.a, facts, profile)
        eb = self._evidence(request.b, facts, profile)
        net = 0.0
        voted = False
        sa, sb = ea.score, eb.score
        for fam in FAMILIES:
            va, vb = ea.values.get(fam), eb.values.get(fam)
            if va is None or vb is None or va == vb:
                continue
            voted = True
            w = math.log(self.weights[fam])
            net += w if (va > vb) == (sa >= sb) else -w
        detail = {"A": ea.to_dict(), "B": eb.to_dict()}
        fa, fb = ea.fatal, eb.fatal
        if not voted:
            why = "abstain: no signal separates the candidates"
            return Verdict(
                None, fa, fb, sa, sb, 0.0, self.name, abstained=True, reason=why, evidence=detail
            )
        if sa == sb:
            why = "tie: the position prior prefers A"
            return Verdict("A", fa, fb, sa, sb, 0.5, self.name, reason=why, evidence=detail)
        prefer = "A" if sa > sb else "B"
        confidence = round(1.0 / (1.0 + math.exp(-net)), 4)
        why = f"prefers {prefer}: score {max(sa, sb):g} vs {min(sa, sb):g}"
        return Verdict(prefer, fa, fb, sa, sb, confidence, self.name, reason=why, evidence=detail)


def evidence(p: Proposal, facts: TraceFacts, profile: ToolProfile | None) -> Evidence:
    """The signal families for one candidate (module docstring)."""
    ev = Evidence()
    failures = facts.unresolved_turn_failures()
    if p.kind != "call":
        done = [a for a in facts.turn_attempts() if a.status not in (None, "error")]
        if p.kind == "completion":
            read = profile is None or any(profile.read_only(a.call.name) for a in done)
            if not done:
                ev.put("request_action", -1, "nothing of this turn succeeded yet")
            elif asks_for_information(facts.latest_request) and not read:
                ev.put("request_action", -1, "the request asks for information not read yet")
            else:
                ev.put("request_action", 1, "a call of this turn succeeded")
            if failures:
                ev.put("turn_state", -1, "a failure of this turn is unresolved")
                ev.fatal = True
            else:
                ev.put("turn_state", 1)
        elif p.kind == "ask_user":
            if failures:
                ev.put("turn_state", 1, "a failure of this turn is unresolved")
            else:
                ev.put("turn_state", -1, "nothing failed: no reason to ask")
        else:
            ev.put("request_action", 0)
            ev.put("turn_state", 0)
        return ev
    read_only = profile.read_only(p.name) if profile is not None else None
    _validity(ev, p, profile, facts.turn)
    _failed_repeat(ev, p, facts)
    _grounding(ev, p, facts, profile)
    _request_args(ev, p, facts)
    _request_action(ev, p, facts, profile, bool(read_only))
    ev.put("turn_state", 1 if read_only and failures else 0)
    return ev


_ASKING = frozenset(
    "verify check confirm show display tell what which how list find report view".split()
)


def asks_for_information(request: str) -> bool:
    """The request asks a question or asks to check/show something."""
    return "?" in request or bool({t.lower() for t in name_tokens(request)} & _ASKING)


def _validity(ev: Evidence, p: Proposal, profile: ToolProfile | None, turn: int | None) -> None:
    if profile is None or not profile.tools:
        ev.put("validity", None)
        return
    tool = profile.tools.get(p.name)
    if tool is None:
        ev.put("validity", -1, f"no tool {p.name!r}")
        return
    if not profile.available(p.name, turn):
        ev.put("validity", -1, f"{p.name} is not offered at this turn")
        return
    errors = validate(p.arguments, tool.parameters)
    ev.put("validity", -1 if errors else 1, "; ".join(errors[:2]))


def _failed_repeat(ev: Evidence, p: Proposal, facts: TraceFacts) -> None:
    failed = facts.last_fail.get(p.name + "\x00" + canonical_args(p.arguments))
    if failed is not None:
        ok = facts.by_name_ok.get(p.name, [])
        if not any((a.result_index or -1) > (failed.result_index or -1) for a in ok):
            ev.put(
                "failed_repeat", -1, "the identical call failed and the tool has not worked since"
            )
            return
    ev.put("failed_repeat", 0)


def _grounding(ev: Evidence, p: Proposal, facts: TraceFacts, profile: ToolProfile | None) -> None:
    if not p.arguments:
        ev.put("grounding", None)
        return
    props = profile.tools[p.name].properties() if profile and p.name in profile.tools else {}
    loose = [
        k
        for k, v in p.arguments.items()
        if not facts.grounded(v) and v not in enum_values(props.get(k))
    ]
    ev.put("grounding", -1 if loose else 1, f"not in the trace: {loose}" if loose else "")


def _request_args(ev: Evidence, p: Proposal, facts: TraceFacts) -> None:
    request = facts.latest_request
    words = set(tokens(request))
    runs = set(_DIGITS.findall(request))
    value = 0
    for v in p.arguments.values():
        if not isinstance(v, str):
            continue
        kind = identifier_kind(v)
        if kind is None:
            continue
        if v in words or kind[1] in runs:
            value = max(value, 1)
            continue
        others = {
            w
            for w in words | facts.result_values()
            if w != v
            and (k := identifier_kind(w)) is not None
            and k[0] == kind[0]
            and (w in words or any(k[1].endswith(r) for r in runs))
        }
        if others:
            ev.put("request_args", -1, f"{v} while the request names {sorted(others)[:2]}")
            return
    ev.put("request_args", value if p.arguments else None)


def _request_action(
    ev: Evidence, p: Proposal, facts: TraceFacts, profile: ToolProfile | None, read_only: bool
) -> None:
    if read_only:
        ev.put("request_action", 0)
        return
    names = [t for t in name_tokens(p.name) if t not in _GENERIC and len(t) > 2]
    flags = _flag_words(p, profile)
    action = flags or names[:1]
    objects = [t for t in names[1:] if t not in action]
    request = text_stems(facts.latest_request)
    failed = facts.unresolved_turn_failures()
    errors = text_stems(" ".join(str(a.result.content) for a in failed if a.result is not None))
    opposed = [
        OPPOSITES[w]
        for w in action
        if w in OPPOSITES and stem(OPPOSITES[w]) in request and stem(w) not in request
    ]
    if opposed:
        ev.put("request_action", -1, f"the request asks for the opposite ({opposed[0]})")
    elif any(stem(w) in request for w in action + objects):
        ev.put("request_action", 1)
    elif any(stem(w) in errors for w in action):
        ev.put("request_action", 1, "an error of this turn asks for it")
    else:
        ev.put("request_action", -1, "a state change the request does not ask for")


def _flag_words(p: Proposal, profile: ToolProfile | None) -> list[str]:
    """Words a call's flags say it does: boolean arguments set to true (``unlock=True``) and
    enumerated scalar values (``ignitionMode="STOP"``)."""
    props = profile.tools[p.name].properties() if profile and p.name in profile.tools else {}
    out: list[str] = []
    for k, v in p.arguments.items():
        if v is True:
            out.extend(name_tokens(k))
        elif isinstance(v, str) and v in enum_values(props.get(k)):
            out.extend(name_tokens(scalar_text(v)))
    return [w for w in out if w not in _GENERIC]
