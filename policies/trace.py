"""Trace format v1 (SPEC §3) as plain dataclasses.

`Trace.from_events(list_of_dicts)` is tolerant: a missing optional field takes a neutral
default, a field of the wrong type is coerced where that is unambiguous (``"3"`` → 3) and left
at its default otherwise, and an event of an unknown ``type`` becomes a `GenericEvent`. Every
event keeps the dict it was built from in ``raw`` (the same object, not a copy), so unknown
fields are never dropped and a replay that changes nothing can hand back the input unchanged.

Validation with precise errors is the ingestion side's job (``traces/``); this module only
reads what it is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

JsonDict = dict[str, Any]


def _int(value: Any) -> int | None:
    if type(value) is int or value is None:
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "yes", "1", "pass", "passed", "ok"):
            return True
        if low in ("false", "no", "0", "fail", "failed", "error"):
            return False
    return None


def _str(value: Any) -> str:
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _dict(value: Any) -> JsonDict:
    return value if type(value) is dict or isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def label_outcome(labels: Mapping[str, Any]) -> bool | None:
    """The ground-truth success a ``labels`` object states: ``valid``, else ``correct``."""
    if not labels:  # most events carry no labels
        return None
    for key in ("valid", "correct", "success", "passed"):
        if key in labels:
            return _bool(labels[key])
    return None


@dataclass(slots=True)
class Event:
    """Common fields of every v1 event (SPEC §3)."""

    type: str = ""
    trace_id: str = ""
    seq: int | None = None
    ts: str | None = None
    turn: int | None = None
    labels: JsonDict = field(default_factory=dict)
    meta: JsonDict = field(default_factory=dict)
    raw: JsonDict = field(default_factory=dict, repr=False)
    index: int = 0  # position in the trace after ordering


@dataclass(slots=True)
class ToolSpec:
    name: str
    description: str = ""
    parameters: JsonDict = field(default_factory=dict)
    read_only: bool = False


@dataclass(slots=True)
class TraceHeader(Event):
    agent: str = ""
    model: str = ""
    task_id: str = ""
    benchmark: str = ""
    category: str = ""
    env_name: str = ""
    env_config: JsonDict = field(default_factory=dict)
    tools: list[ToolSpec] = field(default_factory=list)
    success: bool | None = None
    reward: float | None = None


@dataclass(slots=True)
class Feedback:
    kind: str = ""
    targets: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Message(Event):
    role: str = ""
    content: str = ""
    feedback: Feedback | None = None


@dataclass(slots=True)
class ToolCall(Event):
    call_id: str = ""
    name: str = ""
    arguments: JsonDict = field(default_factory=dict)


@dataclass(slots=True)
class ToolResult(Event):
    call_id: str = ""
    status: str = "ok"
    content: Any = None


@dataclass(slots=True)
class Evidence:
    kind: str = ""
    ref: str = ""
    passed: bool | None = None


@dataclass(slots=True)
class Claim:
    id: str
    text: str = ""
    confidence: float | None = None
    subject: str = ""
    evidence: list[Evidence] = field(default_factory=list)


@dataclass(slots=True)
class Claims(Event):
    claims: list[Claim] = field(default_factory=list)


@dataclass(slots=True)
class Candidate(Event):
    candidate_id: str = ""
    content: str = ""
    parent: str | None = None
    round: int | None = None
    answer: str | None = None


@dataclass(slots=True)
class Verification(Event):
    candidate_id: str = ""
    round: int | None = None
    accepts: int = 0
    votes: int = 0
    verifier: str = ""


@dataclass(slots=True)
class Check(Event):
    name: str = ""
    passed: bool | None = None
    source: str = ""


@dataclass(slots=True)
class Judgment(Event):
    pair: str = ""
    orientation: str = ""
    scores: JsonDict = field(default_factory=dict)
    fatal: JsonDict = field(default_factory=dict)
    prefer: str | None = None
    confidence: float | None = None
    judge: str = ""


@dataclass(slots=True)
class GenericEvent(Event):
    """An event of a type this library does not know; ``raw`` holds all of it."""


Common = tuple[str, str, int | None, str | None, int | None, JsonDict, JsonDict, JsonDict, int]


def _common(d: JsonDict) -> Common:
    """The common fields in `Event`'s positional order (a tuple: this is the hot path of
    building traces, and ``**dict`` unpacking costs more than the fields themselves). Values
    of the expected type, nearly all of them, skip the coercing helpers' calls. It ends with
    ``index`` (0 until the trace orders its events), so the hot builders below can pass their
    own fields by position too: keyword arguments cost a third of a dataclass's construction."""
    g = d.get
    kind, trace_id, seq, ts = g("type"), g("trace_id"), g("seq"), g("ts")
    turn, labels, meta = g("turn"), g("labels"), g("meta")
    return (
        kind if type(kind) is str else _str(kind),
        trace_id if type(trace_id) is str else _str(trace_id),
        seq if seq is None or type(seq) is int else _int(seq),
        ts if type(ts) is str else None,
        turn if turn is None or type(turn) is int else _int(turn),
        labels if type(labels) is dict else {},
        meta if type(meta) is dict else {},
        d,
        0,
    )


def _tool_specs(raw: Any) -> list[ToolSpec]:
    """The header's tools. One loop, fields by position and values of the expected type
    passed as they are, as `_common` does: a BFCL header lists 20–40 tools, and building them
    through a generator of keyword constructions was a tenth of building its trace."""
    specs: list[ToolSpec] = []
    for d in _list(raw):
        if not isinstance(d, dict):
            continue
        name = d.get("name")
        if not name:
            continue
        desc, params, ro = d.get("description"), d.get("parameters"), d.get("read_only")
        specs.append(
            ToolSpec(  # name, description, parameters, read_only
                name if type(name) is str else _str(name),
                desc if type(desc) is str else _str(desc),
                params if type(params) is dict else _dict(params),
                ro if type(ro) is bool else (ro is not None and (_bool(ro) or False)),
            )
        )
    return specs


def _header(d: JsonDict) -> TraceHeader:
    task = _dict(d.get("task"))
    env = _dict(d.get("env"))
    outcome = _dict(d.get("outcome"))
    tools = _tool_specs(d.get("tools"))
    return TraceHeader(
        *_common(d),
        agent=_str(d.get("agent")),
        model=_str(d.get("model")),
        task_id=_str(task.get("id")),
        benchmark=_str(task.get("benchmark")),
        category=_str(task.get("category")),
        env_name=_str(env.get("name")),
        env_config=_dict(env.get("config")),
        tools=tools,
        success=_bool(outcome.get("success")),
        reward=_float(outcome.get("reward")),
    )


def _message(d: JsonDict) -> Message:
    fb = d.get("feedback")
    feedback = None
    if isinstance(fb, dict):
        feedback = Feedback(
            kind=_str(fb.get("kind")), targets=[_str(t) for t in _list(fb.get("targets"))]
        )
    role, content = d.get("role"), d.get("content")
    return Message(  # role, content, feedback
        *_common(d),
        role if type(role) is str else _str(role),
        content if type(content) is str else _str(content),
        feedback,
    )


def _tool_call(d: JsonDict) -> ToolCall:
    args = d.get("arguments")
    if isinstance(args, str):  # some agents record the argument JSON as a string
        try:
            args = json.loads(args)
        except ValueError:
            args = {}
    call_id, name = d.get("call_id"), d.get("name")
    return ToolCall(  # call_id, name, arguments
        *_common(d),
        call_id if type(call_id) is str else _str(call_id),
        name if type(name) is str else _str(name),
        args if type(args) is dict else _dict(args),
    )


def _tool_result(d: JsonDict) -> ToolResult:
    status, call_id = d.get("status"), d.get("call_id")
    status = (status if type(status) is str else _str(status)).lower() or "ok"
    return ToolResult(  # call_id, status, content
        *_common(d),
        call_id if type(call_id) is str else _str(call_id),
        status,
        d.get("content"),
    )


def _claim(d: Any, i: int) -> Claim | None:
    if not isinstance(d, dict):
        return None
    evidence = [
        Evidence(_str(e.get("kind")), _str(e.get("ref")), _bool(e.get("passed")))
        for e in _list(d.get("evidence"))
        if isinstance(e, dict)
    ]
    g = d.get
    cid, text, conf, subject = g("id"), g("text"), g("confidence"), g("subject")
    conf = float(conf) if type(conf) is float or type(conf) is int else _float(conf)
    if conf is not None and not 0.0 <= conf <= 1.0:
        conf = conf / 100.0 if 1.0 < conf <= 100.0 else None  # percentages are common
    return Claim(  # id, text, confidence, subject, evidence
        (cid if type(cid) is str else _str(cid)) or f"c{i}",
        text if type(text) is str else _str(text),
        conf,
        subject if type(subject) is str else _str(subject),
        evidence,
    )


def _claims(d: JsonDict) -> Claims:
    claims = [c for c in (_claim(x, i) for i, x in enumerate(_list(d.get("claims")))) if c]
    return Claims(*_common(d), claims=claims)


def _candidate(d: JsonDict) -> Candidate:
    g = d.get
    cid, content, parent, rnd, answer = (
        g("candidate_id"),
        g("content"),
        g("parent"),
        g("round"),
        g("answer"),
    )
    return Candidate(  # candidate_id, content, parent, round, answer
        *_common(d),
        cid if type(cid) is str else _str(cid),
        content if type(content) is str else _str(content),
        _str(parent) if parent is not None else None,
        rnd if rnd is None or type(rnd) is int else _int(rnd),
        _str(answer) if answer is not None else None,
    )


def _verification(d: JsonDict) -> Verification:
    g = d.get
    votes, accepts, cid, rnd, verifier = (
        g("votes"),
        g("accepts"),
        g("candidate_id"),
        g("round"),
        g("verifier"),
    )
    votes = max((votes if type(votes) is int else _int(votes)) or 0, 0)
    accepts = min(max((accepts if type(accepts) is int else _int(accepts)) or 0, 0), votes)
    return Verification(  # candidate_id, round, accepts, votes, verifier
        *_common(d),
        cid if type(cid) is str else _str(cid),
        rnd if rnd is None or type(rnd) is int else _int(rnd),
        accepts,
        votes,
        verifier if type(verifier) is str else _str(verifier),
    )


def _check(d: JsonDict) -> Check:
    return Check(
        *_common(d),
        name=_str(d.get("name")),
        passed=_bool(d.get("passed")),
        source=_str(d.get("source")),
    )


def _side_map(value: Any) -> JsonDict:
    """``{"A": x, "B": y}`` from a dict, or from a list of the sides that hold."""
    if isinstance(value, dict):
        return {str(k).upper(): v for k, v in value.items()}
    if isinstance(value, list):
        return {str(k).upper(): True for k in value}
    return {}


def _judgment(d: JsonDict) -> Judgment:
    prefer = d.get("prefer")
    return Judgment(
        *_common(d),
        pair=_str(d.get("pair")),
        orientation=_str(d.get("orientation")),
        scores=_side_map(d.get("scores")),
        fatal=_side_map(d.get("fatal")),
        prefer=_str(prefer).upper() if prefer is not None else None,
        confidence=_float(d.get("confidence")),
        judge=_str(d.get("judge")),
    )


def _generic(d: JsonDict) -> GenericEvent:
    return GenericEvent(*_common(d))


_BUILDERS: dict[str, Callable[[JsonDict], Event]] = {
    "trace": _header,
    "message": _message,
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "claims": _claims,
    "candidate": _candidate,
    "verification": _verification,
    "check": _check,
    "judgment": _judgment,
}


def event_from_dict(d: JsonDict) -> Event:
    """Build the typed event for one v1 dict (unknown types → `GenericEvent`)."""
    builder = _BUILDERS.get(d.get("type"), _generic)  # type: ignore[arg-type]
    return builder(d)


@dataclass(slots=True)
class Trace:
    """One trace: its header and its events in order (the header is ``events[0]`` when
    the input had one; a missing header is synthesised and not put into ``events``)."""

    trace_id: str
    header: TraceHeader
    events: list[Event]
    _actor: list[bool | None] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def from_events(cls, events: Iterable[JsonDict]) -> Trace:
        """Order by ``seq`` when every event has one, else keep line order (SPEC §3)."""
        built = [event_from_dict(d) for d in events if isinstance(d, dict)]
        if built and all(e.seq is not None for e in built):
            built.sort(key=lambda e: e.seq)  # type: ignore[arg-type, return-value]
        header: TraceHeader | None = None
        for i, e in enumerate(built):
            e.index = i
            if header is None and type(e) is TraceHeader:  # builders make no subclasses
                header = e
        trace_id = built[0].trace_id if built else ""
        if header is None:
            header = TraceHeader(type="trace", trace_id=trace_id)
        return cls(trace_id=trace_id or header.trace_id, header=header, events=built)

    def raw_events(self) -> list[JsonDict]:
        return [e.raw for e in self.events]

    def tool(self, name: str) -> ToolSpec | None:
        for t in self.header.tools:
            if t.name == name:
                return t
        return None

    def actor_success(self) -> bool | None:
        """The recorded outcome: the header's ``outcome.success``, else the label of the last
        labelled candidate, else the conjunction of the trace's checks (computed once)."""
        if not self._actor:
            self._actor.append(self._actor_success())
        return self._actor[0]

    def _actor_success(self) -> bool | None:
        if self.header.success is not None:
            return self.header.success
        for e in reversed(self.events):
            if isinstance(e, Candidate):
                lab = label_outcome(e.labels)
                if lab is not None:
                    return lab
        checks = [e.passed for e in self.events if isinstance(e, Check) and e.passed is not None]
        if checks:
            return all(checks)
        return None
