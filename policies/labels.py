"""Candidate labels from every source, merged onto a trace's events.

A candidate's validity comes from, in this order of precedence:

1. ``recorded`` — the trace's own ``labels`` (a benchmark's hidden-test result, a per-turn
   label): ground truth the agent never saw;
2. ``human`` — a verdict from the annotation queue, keyed (trace id, candidate id);
3. ``executed`` — the record's hidden tests run against the candidate in the sandbox
   (`policies.sandbox.code_tests`, opt-in).

A label's ``valid`` is None when its source could say nothing — a candidate the sandbox could
not run (``sandbox unavailable: …``): the candidate stays unlabelled (its outcome unknown) and
its ``label_detail`` says why. A later source never overrides an earlier one; where two sources
disagree the disagreement is reported (a sandbox that contradicts the benchmark's own verdict
is worth a look). Labels are applied by returning *new* event dicts for the candidates they
label (``labels.valid``, ``labels.label_source``, ``labels.label_detail``): the policies then
read them like any label, and the input events are never modified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .trace import JsonDict, label_outcome

LabelSource = Literal["recorded", "human", "executed"]
LabelKey = tuple[str, str]  # (trace id, candidate id)


@dataclass(frozen=True, slots=True)
class CandidateLabel:
    valid: bool | None  # None: unknown, ``detail`` says why
    source: LabelSource
    detail: str = ""


@dataclass(slots=True)
class Labelled:
    """`apply_labels`' result: the events (new dicts where a label was added) and what
    happened to each labelled candidate."""

    events: list[JsonDict]
    applied: dict[str, LabelSource] = field(default_factory=dict)
    conflicts: list[JsonDict] = field(default_factory=list)


def human_labels(verdicts: Mapping[LabelKey, bool]) -> dict[LabelKey, CandidateLabel]:
    """Human verdicts (the app's mapping (trace id, candidate id) → valid) as labels."""
    return {k: CandidateLabel(bool(v), "human", "annotation") for k, v in verdicts.items()}


def apply_labels(
    events: Sequence[JsonDict],
    executed: Mapping[LabelKey, CandidateLabel] | None = None,
    human: Mapping[LabelKey, CandidateLabel] | None = None,
) -> Labelled:
    """Label the candidates of one trace's ``events`` (see module docstring)."""
    executed = executed or {}
    human = human or {}
    out = Labelled(events=[])
    for e in events:
        if e.get("type") != "candidate":
            out.events.append(e)
            continue
        key = (str(e.get("trace_id", "")), str(e.get("candidate_id", "")))
        labels = e.get("labels") if isinstance(e.get("labels"), dict) else {}
        recorded = label_outcome(labels)  # type: ignore[arg-type]
        offered = [lab for lab in (human.get(key), executed.get(key)) if lab is not None]
        chosen: CandidateLabel | None = None
        if recorded is not None:
            chosen = CandidateLabel(recorded, "recorded")
            out.applied[key[1]] = "recorded"
        elif offered:
            known = [lab for lab in offered if lab.valid is not None]
            chosen = known[0] if known else offered[0]
            new_labels = {
                **labels,  # type: ignore[dict-item]
                "label_source": chosen.source,
                "label_detail": chosen.detail,
            }
            if chosen.valid is not None:
                new_labels["valid"] = chosen.valid
                out.applied[key[1]] = chosen.source
            e = {**e, "labels": new_labels}
        for lab in offered:
            if (
                chosen is not None
                and chosen.valid is not None
                and lab.valid is not None
                and lab.valid != chosen.valid
            ):
                out.conflicts.append(
                    {
                        "candidate_id": key[1],
                        "kept": {"source": chosen.source, "valid": chosen.valid},
                        "other": {"source": lab.source, "valid": lab.valid, "detail": lab.detail},
                    }
                )
        out.events.append(e)
    return out
