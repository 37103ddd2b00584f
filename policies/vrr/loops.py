"""A trace's verify-repair loop as `Round`s (SPEC §3 ``candidate`` / ``verification``; the LDB
importer writes one candidate per repair round and one verification with the visible tests)."""

from __future__ import annotations

from ..repair_candidates import is_foreign, task_entry_point, task_prompt
from ..trace import Candidate, Trace, Verification, label_outcome
from .rule import Round


def loop_rounds(trace: Trace) -> list[Round]:
    """The verify-repair rounds of a trace: candidates in order of ``round`` (then position),
    each with the summed votes of its ``verification`` events (matched by ``candidate_id``,
    else by ``round``). Candidates with no verification have zero votes; a trace with no
    verification at all is not a verify-repair loop and gives no rounds. A foreign candidate
    (`policies.repair_candidates`: it does not define the task's entry point) is no round."""
    cands: list[Candidate] = []
    acc: dict[str, list[int]] = {}
    by_round: dict[int, list[int]] = {}
    entry = task_entry_point(trace)
    prompt = task_prompt(trace) if entry is not None else None
    for e in trace.events:
        te = type(e)
        if te is Candidate:
            if entry is None or not is_foreign(e, entry, prompt):  # type: ignore[arg-type]
                cands.append(e)  # type: ignore[arg-type]
        elif te is Verification:
            assert isinstance(e, Verification)
            if e.candidate_id:
                tally = acc.setdefault(e.candidate_id, [0, 0])
            elif e.round is not None:
                tally = by_round.setdefault(e.round, [0, 0])
            else:
                continue
            tally[0] += e.accepts
            tally[1] += e.votes
    if not cands or not (acc or by_round):
        return []
    ordered = sorted(
        range(len(cands)),
        key=lambda i: (cands[i].round if cands[i].round is not None else i, i),
    )
    out: list[Round] = []
    for k, i in enumerate(ordered):
        c = cands[i]
        found = acc.get(c.candidate_id) if c.candidate_id else None
        if found is None and c.round is not None:
            found = by_round.get(c.round)
        v = found
        a, n = (v[0], v[1]) if v else (0, 0)
        out.append(
            Round(
                round=c.round if c.round is not None else k,
                accepts=a,
                votes=n,
                candidate_id=c.candidate_id,
                valid=label_outcome(c.labels),
                event_index=c.index,
            )
        )
    return out


def round_label_sources(trace: Trace, rounds: list[Round]) -> list[str | None]:
    """Where each round's validity label comes from: the ``label_source`` that
    `policies.labels.apply_labels` wrote (``human`` / ``executed``), ``recorded`` for a label
    the trace itself carries, None for an unlabelled round."""
    out: list[str | None] = []
    for r in rounds:
        if r.valid is None or r.event_index < 0:
            out.append(None)
            continue
        src = trace.events[r.event_index].labels.get("label_source")
        out.append(src if isinstance(src, str) else "recorded")
    return out
