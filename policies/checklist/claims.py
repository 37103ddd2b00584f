"""Claim Checklist records: where a record's confidences come from, the identity of a claim
across revisions, and the per-claim confidence timeline (SPEC §3 ``claims``, §5.2; Bui 2026
§3.1, App. D.2).

**Sources.** A ``claims`` event is *recorded* (written by the agent, part of the trace) or
*elicited*: derived by a model after the fact (the model backends' client), marked
``meta.elicited = true``. An elicited record must look like this::

    {"type": "claims",
     "claims": [{"id": "c1", "text": "...", "confidence": 0.8, "subject": "..."}],
     "meta": {"elicited": true, "model": "<model name>", "cache_key": "<call cache key>",
              "describes_seq": <seq of the reply it describes>}}      # describes_seq optional

and sit **right after the assistant reply it describes** (a ``candidate`` or an assistant
``message``), so that it is the pre-reply record for the next feedback. `merge_elicited` puts
derived events there. An elicited record with a claim lacking a confidence in [0, 1], without
``meta.model``, or not right after a reply (or naming another reply in ``describes_seq``) is
flagged and never used: an elicited confidence is only as good as its provenance.

**Identity.** A claim keeps its ``id`` across records; when its text changes (compared after
folding case, spacing and punctuation) a new *version* starts, linked to the previous one.
A claim may also name the claim it replaces with ``revises: "<old id>"``; it then continues
that claim's lineage. Each version has its own confidence series, so a chart never draws one
line across a change of meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Literal

from ..trace import Candidate, Claims, Event, JsonDict, Message, Trace

Source = Literal["recorded", "elicited"]

_FOLD = re.compile(r"[\W_]+", re.UNICODE)


def fold_text(text: str) -> str:
    """Claim text for identity: case, spacing and punctuation do not make a new version."""
    if len(text) <= 512:  # claim texts recur in every record of a trace; long replies do not
        return _fold_short(text)
    return _FOLD.sub(" ", text.casefold()).strip()


@lru_cache(maxsize=4096)
def _fold_short(text: str) -> str:
    return _FOLD.sub(" ", text.casefold()).strip()


def is_reply(e: Event) -> bool:
    """An agent reply: a ``candidate`` or an assistant ``message``."""
    te = type(e)
    return te is Candidate or (te is Message and e.role == "assistant")  # type: ignore[attr-defined]


def record_source(record: Claims) -> Source:
    return "elicited" if record.meta.get("elicited") is True else "recorded"


def elicited_problems(record: Claims, previous: Event | None) -> list[str]:
    """Why an elicited record cannot be used (empty: usable). ``previous`` is the event right
    before it in the trace."""
    problems: list[str] = []
    if not isinstance(record.meta.get("model"), str) or not record.meta.get("model"):
        problems.append("meta.model missing")
    if not record.claims:
        problems.append("no claims")
    for c in record.claims:
        if c.confidence is None:
            problems.append(f"claim {c.id!r} has no confidence in [0, 1]")
    if previous is None or not is_reply(previous):
        problems.append("not right after an assistant reply")
    else:
        named = record.meta.get("describes_seq")
        if named is not None and named != previous.seq:
            problems.append(f"describes_seq {named!r} is not the preceding reply's seq")
    return problems


def merge_elicited(events: Sequence[JsonDict], elicited: Iterable[JsonDict]) -> list[JsonDict]:
    """The trace's events (in ``seq`` order) with each elicited record inserted right after
    the reply whose ``seq`` its ``meta.describes_seq`` names. Elicited records carry no
    ``seq`` of their own (they are derived, not part of the upload), so the result is in
    line order, which `Trace.from_events` keeps when not every event has a seq. Raises
    ``ValueError`` for a record that names no reply of the trace."""
    ordered = sorted(events, key=lambda e: (e.get("seq") is None, e.get("seq") or 0))
    by_seq: dict[Any, list[JsonDict]] = {}
    for rec in elicited:
        meta = rec.get("meta")
        if not isinstance(meta, dict) or meta.get("elicited") is not True:
            raise ValueError("an elicited claims record needs meta.elicited = true")
        by_seq.setdefault(meta.get("describes_seq"), []).append(rec)
    replies = {
        e.get("seq")
        for e in ordered
        if e.get("type") == "candidate"
        or (e.get("type") == "message" and e.get("role") == "assistant")
    }
    missing = [s for s in by_seq if s not in replies]
    if missing:
        raise ValueError(f"elicited records name no reply of the trace: describes_seq {missing}")
    out: list[JsonDict] = []
    for e in ordered:
        out.append(e)
        for rec in by_seq.get(e.get("seq"), ()):
            out.append({k: v for k, v in rec.items() if k != "seq"})
    return out


class Lineage:
    """Claim identity across records: ``version(record, claim)`` numbers the versions of a
    claim (1, 2, …), a new one whenever its folded text changes."""

    __slots__ = ("_alias", "_text", "_version", "series")

    def __init__(self) -> None:
        self._alias: dict[str, str] = {}  # claim id → lineage root id (via ``revises``)
        self._text: dict[str, str] = {}  # root → folded text of its current version
        self._version: dict[str, int] = {}
        self.series: dict[str, list[JsonDict]] = {}

    def root(self, claim_id: str) -> str:
        return self._alias.get(claim_id, claim_id)

    def add(self, record: Claims, source: Source, post_complaint: bool, usable: bool) -> None:
        raw_claims = record.raw.get("claims")
        raws = raw_claims if isinstance(raw_claims, list) else []
        for i, c in enumerate(record.claims):
            raw = raws[i] if i < len(raws) and isinstance(raws[i], dict) else {}
            revises = raw.get("revises")
            if isinstance(revises, str) and revises and revises != c.id:
                self._alias[c.id] = self.root(revises)
            root = self.root(c.id)
            text = fold_text(c.text)
            versions = self.series.setdefault(root, [])
            if not versions or self._text.get(root) != text:
                self._version[root] = self._version.get(root, 0) + 1
                self._text[root] = text
                versions.append(
                    {
                        "version": self._version[root],
                        "id": c.id,
                        "text": c.text,
                        "starts": {"record": record.index, "seq": record.seq, "turn": record.turn},
                        "previous": self._version[root] - 1 or None,
                        "points": [],
                    }
                )
            versions[-1]["points"].append(
                {
                    "record": record.index,
                    "seq": record.seq,
                    "turn": record.turn,
                    "confidence": c.confidence,
                    "source": source,
                    "post_complaint": post_complaint,
                    "used": usable,
                }
            )


def claim_changes(before: Claims, after: Claims, ids: Sequence[str]) -> dict[str, str]:
    """For each claim id of ``before`` in ``ids``: "kept" when ``after`` holds it (same id, or a
    claim that ``revises`` it) with the same folded text, "revised" when its text changed or a
    claim revises it, "dropped" when ``after`` does not hold it."""
    by_id = {c.id: c for c in after.claims}
    raws = after.raw.get("claims") if isinstance(after.raw.get("claims"), list) else []
    revised_by = {
        r["revises"]
        for r in raws  # type: ignore[union-attr]
        if isinstance(r, dict) and isinstance(r.get("revises"), str)
    }
    old = {c.id: c for c in before.claims}
    out: dict[str, str] = {}
    for cid in ids:
        if cid not in old:
            continue
        if cid in revised_by:
            out[cid] = "revised"
        elif cid not in by_id:
            out[cid] = "dropped"
        else:
            same = fold_text(by_id[cid].text) == fold_text(old[cid].text)
            out[cid] = "kept" if same else "revised"
    return out


def complaint_laundering(trace: Trace) -> list[JsonDict]:
    """Flag records that cite an earlier user complaint as if it were verified evidence
    (App. D.2): evidence of kind ``user`` marked passed, in a record after a feedback message,
    or any evidence whose ``ref`` points at that feedback message (its seq or index)."""
    flags: list[JsonDict] = []
    refs: set[str] = set()  # how evidence can point at a complaint so far: its seq or #index
    for e in trace.events:  # exact types: the trace builds no subclasses (hot path)
        te = type(e)
        if te is Message and e.role == "user" and e.feedback is not None:  # type: ignore[attr-defined]
            if e.seq is not None:
                refs.add(str(e.seq))
            refs.add(f"#{e.index}")
        elif te is Claims and refs:
            assert isinstance(e, Claims)
            for claim in e.claims:
                for ev in claim.evidence:
                    cites = ev.kind == "user" or ev.ref in refs
                    if cites and ev.passed is not False and (ev.kind == "user" or ev.passed):
                        flags.append(
                            {
                                "flag": "complaint_laundering",
                                "record": e.index,
                                "claim": claim.id,
                                "ref": ev.ref,
                            }
                        )
                        break
    return flags


def timeline(lineage: Lineage, events: Sequence[JsonDict], flags: Sequence[JsonDict]) -> JsonDict:
    """Per-claim confidence timeline (SPEC §5.2). ``versions``: per claim, one series per
    version of its text (``starts`` says where a version begins, ``previous`` links it), so a
    chart draws one line per version. ``claims``: the same points flattened per claim id, with
    ``revised`` marking where a new version starts (the shape the trace page reads today)."""
    flat: dict[str, list[JsonDict]] = {}
    for root, versions in lineage.series.items():
        pts = flat.setdefault(root, [])
        for v in versions:
            for j, p in enumerate(v["points"]):
                pts.append({**p, "version": v["version"], "revised": j == 0 and v["version"] > 1})
    return {
        "versions": lineage.series,
        "claims": flat,
        "feedback": [
            {
                "index": f["index"],
                "valid": f["valid"],
                "targeted": f["targeted"],
                "action": f["action"],
                "not_applicable": f["not_applicable"],
                "guard_diverges": f["guard_diverges"],
            }
            for f in events
        ],
        "flags": list(flags),
    }
