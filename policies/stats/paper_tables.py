"""Each policy's own table, in the shape of its paper, from per-trace records.

Pure functions of the stored result rows (`policies.stats.report` calls them). Every rate is given
with what it counts — ``{"k", "known", "of", "rate"}``: k of the known cases, out of all cases
it could have counted — so an unknown never silently shrinks a denominator.

Each table is a fold: an accumulator takes one row at a time (`add`) and keeps only counts and
small per-trace numbers, never the rows, so a run's tables are computed in memory that does not
grow with its records (holding every record would take 1.2 GB at 10⁵ traces); the
functions over a list of rows feed the same accumulator.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any, Protocol

from ..vrr.sensitivity import DeltaSensitivity
from .checklist_metrics import FeedbackRates, dominates, feedback_rates
from .methods import counted_average_precision, counted_roc_auc

Rows = Sequence[Mapping[str, Any]]


class Table(Protocol):
    """A paper table as a fold over one policy's result rows, in the run's order."""

    def add(self, row: Mapping[str, Any]) -> None: ...

    def result(self) -> dict[str, Any]: ...


class Rate:
    """`rate`, counted one value at a time."""

    __slots__ = ("k", "known", "of")

    def __init__(self) -> None:
        self.k = self.known = self.of = 0

    def add(self, value: bool | None) -> None:
        self.of += 1
        if value is not None:
            self.known += 1
            self.k += 1 if value else 0

    def __iadd__(self, other: Rate) -> Rate:
        self.k += other.k
        self.known += other.known
        self.of += other.of
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "known": self.known,
            "of": self.of,
            "rate": self.k / self.known if self.known else None,
        }


class PairedRate:
    """A rule's success beside the actor's over one set: the cases where both are known.
    Each `Rate` alone is over its own known cases (a rule that gives no round where the
    actor's loop ends unlabelled is known on fewer loops); rates put beside each other as a
    comparison are these."""

    __slots__ = ("n", "actor", "other", "of")

    def __init__(self) -> None:
        self.n = self.actor = self.other = self.of = 0

    def add(self, actor: bool | None, other: bool | None) -> None:
        self.of += 1
        if actor is not None and other is not None:
            self.n += 1
            self.actor += actor
            self.other += other

    def to_dict(self) -> dict[str, Any]:
        n = self.n
        return {
            "n": n,
            "of": self.of,
            "actor_k": self.actor,
            "k": self.other,
            "actor_rate": self.actor / n if n else None,
            "rate": self.other / n if n else None,
            "delta": (self.other - self.actor) / n if n else None,
        }


def rate(values: Iterable[bool | None]) -> dict[str, Any]:
    r = Rate()
    for v in values:
        r.add(v)
    return r.to_dict()


class Total:
    """``sum(values)``, one value at a time, with sum's result: ints are added exactly as they
    come; from the first value of another type on, the values are kept and summed at the end
    (so floats get sum's own compensated addition, as over the list)."""

    __slots__ = ("total", "values")

    def __init__(self) -> None:
        self.total = 0
        self.values: list[Any] | None = None

    def add(self, value: Any) -> None:
        if self.values is None and isinstance(value, int):
            self.total += value
        elif self.values is None:
            self.values = [self.total, value]
        else:
            self.values.append(value)

    def result(self) -> Any:
        return self.total if self.values is None else sum(self.values)


def fold(table: Table, rows: Rows) -> dict[str, Any]:
    for r in rows:
        table.add(r)
    return table.result()


class GateScores:
    """The gate scores of the traces with a known actor outcome, and whether the actor failed:
    TwinCheck Fig. 2's ranking, counted by score (the heuristic gate gives a handful of
    distinct scores; 8 over the 10⁵-trace bench run)."""

    def __init__(self) -> None:
        self.groups: dict[float, tuple[int, int]] = {}
        self.n = self.failures = 0

    def add(self, row: Mapping[str, Any]) -> None:
        if row.get("actor_success") is not None:
            score = float((row.get("record") or {}).get("gate_score", 0.0))
            failed = not row["actor_success"]
            n, pos = self.groups.get(score, (0, 0))
            self.groups[score] = (n + 1, pos + failed)
            self.n += 1
            self.failures += failed

    def result(self) -> dict[str, Any]:
        return {
            "failure_prevalence": self.failures / self.n if self.n else None,
            "roc_auc": counted_roc_auc(self.groups),
            "average_precision": counted_average_precision(self.groups),
        }


class TwincheckTable:
    """How well the gate ranks actor failures (TwinCheck Fig. 2): ROC-AUC and AP of the gate
    score against actor failure, over traces with a known actor outcome."""

    def __init__(self) -> None:
        self.sums = {k: Total() for k in ("tool_calls", "triggers", "accepted")}
        self.gate = GateScores()

    def add(self, row: Mapping[str, Any]) -> None:
        rec = row.get("record") or {}
        for k, total in self.sums.items():
            total.add(rec.get(k, 0))
        self.gate.add(row)

    def result(self) -> dict[str, Any]:
        return {**{k: t.result() for k, t in self.sums.items()}, **self.gate.result()}


def twincheck_table(rows: Rows) -> dict[str, Any]:
    return fold(TwincheckTable(), rows)


# What feedback_rates reads of an event. Events are counted by these values (booleans and None
# in practice): a run has a handful of distinct ones, so its events are never held.
_RATE_KEYS = ("before", "after", "guarded_after", "valid")
#: Every key `ChecklistTable` reads of a feedback event.
EVENT_KEYS = (*_RATE_KEYS, "not_applicable", "actor_class", "guarded_class")


def _rate_value(v: Any) -> Any:
    """Any other value by its truth, all feedback_rates asks of it — as a string, which no
    boolean equals (1 == True would count a 1 with the Trues, and `valid is True` then
    fails)."""
    return v if v is None or v is True or v is False else ("true" if v else "")


class ChecklistTable:
    """Thinking-in-Bets Tables 2–3: false-reversal and successful-correction rates for the
    actor, the guarded counterfactual and always-keep, over the feedback events the rule could
    judge (``applicable``); the actor's rates over every labelled event beside them; dominance
    (App. C); outcome classes; divergences; flags."""

    def __init__(self) -> None:
        self.events: Counter[tuple[Any, ...]] = Counter()
        self.applicable: Counter[tuple[Any, ...]] = Counter()
        self.not_applicable: Counter[str] = Counter()
        self.classes: dict[str, Counter[str]] = {"actor": Counter(), "guarded": Counter()}
        self.flags: Counter[str] = Counter()
        self.divergences: Counter[str] = Counter()

    def add(self, row: Mapping[str, Any]) -> None:
        rec = row.get("record") or {}
        for e in rec.get("feedback_events") or []:
            self.add_event(e)
        for f in rec.get("flags") or []:
            self.flags[str(f.get("flag"))] += 1
        div = rec.get("divergence")
        if div:
            self.divergences[str(div.get("action"))] += 1

    def add_event(self, e: Mapping[str, Any], count: int = 1) -> None:
        """``count`` feedback events like ``e``. Events added apart from their rows (a run
        summary has PostgreSQL count them) count as in their rows, if added in the order of
        their first occurrence: the class and reason counts keep that order."""
        key = tuple(_rate_value(e.get(k)) for k in _RATE_KEYS)
        self.events[key] += count
        if e.get("not_applicable"):
            self.not_applicable[str(e["not_applicable"])] += count
        else:
            self.applicable[key] += count
        self.classes["actor"][str(e.get("actor_class"))] += count
        self.classes["guarded"][str(e.get("guarded_class"))] += count

    def result(self) -> dict[str, Any]:
        def rates(counts: Counter[tuple[Any, ...]], which: str) -> FeedbackRates:
            """`feedback_rates` over the counted events: its counts add up over events, so
            those of one event of each kind, times how many there are."""
            one = [
                (feedback_rates([dict(zip(_RATE_KEYS, key, strict=True))], which), n)
                for key, n in counts.items()
            ]
            return FeedbackRates(
                *(sum(getattr(r, f.name) * n for r, n in one) for f in fields(FeedbackRates))
            )

        actor, guarded, keep = (rates(self.applicable, w) for w in ("actor", "guarded", "keep"))
        return {
            "feedback_events": self.events.total(),
            "applicable_events": self.applicable.total(),
            "not_applicable_events": dict(self.not_applicable),
            "actor_all_events": rates(self.events, "actor").to_dict(),
            "actor": actor.to_dict(),
            "guarded": guarded.to_dict(),
            "always_keep": keep.to_dict(),
            "guarded_dominates_actor": dominates(guarded, actor),
            "guarded_dominates_always_keep": dominates(guarded, keep),
            "classes": {k: dict(v) for k, v in self.classes.items()},
            "divergences": dict(self.divergences),
            "flags": dict(self.flags),
        }


def checklist_table(rows: Rows) -> dict[str, Any]:
    return fold(ChecklistTable(), rows)


def _validity(rec: Mapping[str, Any], k: Any) -> bool | None:
    tv = rec.get("true_validity") or []
    if not isinstance(k, int) or not 0 <= k < len(tv):
        return None
    v = tv[k]
    return None if v is None else bool(v)


class VrrTable:
    """VRR Tables 1–3: final true validity of fixed-k repair for every k, of VRR-Stop, of
    VRR-Guard, of the actor and of the headline rule; rounds saved. Fixed-k ships round
    min(k, last) — a recorded loop cannot be repaired past its end, so a loop the actor stopped
    earlier keeps its last round; ``reaching`` counts only loops with a round k. Validity is
    the round's label (recorded, human or executed), unknown otherwise.

    Fixed-k is counted without knowing the longest loop: round k of every loop reaching it
    (``reaching``, also ``capped``'s part from those loops), and the last round of each loop by
    its length n, which ``capped`` counts for every k ≥ n. ``delta_sensitivity``: the
    transitions under other Guard margins (`policies.vrr.sensitivity`).

    ``actor``, ``stop``, ``guard`` and ``headline`` are each over their own known loops (a rule
    that gives no round, or a round without a label, is known on fewer); the comparison with
    the actor is ``paired_with_actor``: each rule and the actor over the loops where both are
    known."""

    def __init__(self) -> None:
        self.loops = 0
        self.k_max = 0
        self.reaching: dict[int, Rate] = {}
        self.last_by_length: dict[int, Rate] = {}
        self.modes: Counter[str] = Counter()
        self.not_applicable: Counter[str] = Counter()
        self.actor, self.stop, self.guard, self.headline = Rate(), Rate(), Rate(), Rate()
        # each rule beside the actor over the loops where both are known
        self.paired = {k: PairedRate() for k in ("stop", "guard", "headline")}
        self.stop_status: Counter[str] = Counter()
        self.saved, self.n_headline = 0, 0
        self.label_sources: Counter[str] = Counter()
        self.delta = DeltaSensitivity()

    def add(self, row: Mapping[str, Any]) -> None:
        rec = row.get("record") or {}
        if not rec.get("n_rounds"):
            return
        n = int(rec["n_rounds"])
        self.loops += 1
        self.k_max = max(self.k_max, n) if self.loops > 1 else n
        for k in range(n):
            self.reaching.setdefault(k, Rate()).add(_validity(rec, k))
        last = _validity(rec, n - 1)
        self.last_by_length.setdefault(n, Rate()).add(last)
        self.actor.add(last)
        self.modes[str(rec.get("mode"))] += 1
        if rec.get("not_applicable"):
            self.not_applicable[str(rec["not_applicable"])] += 1
        else:
            headline = _validity(rec, rec.get("shipped_round"))
            self.headline.add(headline)
            self.paired["headline"].add(last, headline)
            self.saved += int(rec.get("rounds_saved") or 0)
            self.n_headline += 1
        a = rec.get("alternatives") or {}
        self.stop_status[str(a.get("stop_status"))] += 1
        for rule, r in (("stop", self.stop), ("guard", self.guard)):
            shipped = a.get(rule)
            if not isinstance(shipped, int):  # the rule gives no round: unknown, unpaired
                self.paired[rule].add(last, None)
                continue
            v = _validity(rec, shipped)
            r.add(v)
            self.paired[rule].add(last, v)
        for s in rec.get("label_sources") or []:
            if s:
                self.label_sources[str(s)] += 1
        self.delta.add(rec)

    def result(self) -> dict[str, Any]:
        fixed: dict[str, Any] = {}
        for k in range(self.k_max if self.loops else 0):
            capped = Rate()
            for n, last in self.last_by_length.items():
                if n <= k:
                    capped += last
            reaching = self.reaching.get(k, Rate())
            capped += reaching
            fixed[str(k)] = {"capped": capped.to_dict(), "reaching": reaching.to_dict()}
        return {
            "loops": self.loops,
            "modes": dict(self.modes),
            "not_applicable": dict(self.not_applicable),
            "fixed_k_validity": fixed,
            "actor": self.actor.to_dict(),
            "stop": self.stop.to_dict(),
            "stop_status": dict(self.stop_status),
            "guard": self.guard.to_dict(),
            "headline": self.headline.to_dict(),
            "paired_with_actor": {k: p.to_dict() for k, p in self.paired.items()},
            "mean_rounds_saved": self.saved / self.n_headline if self.n_headline else None,
            "label_sources": dict(self.label_sources),
            "delta_sensitivity": self.delta.result(),
        }


def vrr_table(rows: Rows) -> dict[str, Any]:
    return fold(VrrTable(), rows)


class CommitTable:
    """The confidence-collapse comparison: calls spent, flips, period-2 oscillation, parity
    dependence of the shipped answer, and correctness of the actor's answer vs the commit
    rule's (known of n; the rule's answer is unknown where its call was not made), and the two
    over the same conversations, where both are known (``correct_paired``)."""

    MEANS = ("actor_calls", "commit_calls", "flips")
    RATES = ("period_two_oscillation", "parity_dependent", "actor_correct", "commit_correct")

    def __init__(self) -> None:
        self.applied = 0
        # the values themselves (8 bytes a trace): the mean is sum()'s compensated sum of them
        self.values = {k: array("d") for k in self.MEANS}
        self.rates = {k: Rate() for k in self.RATES}
        self.correct_paired = PairedRate()  # the rule's answer beside the actor's, both known
        self.recheck_sources: Counter[str] = Counter()
        self.unknown_reasons: Counter[str] = Counter()

    def add(self, row: Mapping[str, Any]) -> None:
        rec = row.get("record") or {}
        if not rec.get("applied"):
            return
        self.applied += 1
        for k, values in self.values.items():
            if isinstance(rec.get(k), (int, float)):
                values.append(float(rec[k]))
        for k, r in self.rates.items():
            r.add(rec.get(k))
        self.correct_paired.add(rec.get("actor_correct"), rec.get("commit_correct"))
        self.recheck_sources[str(rec.get("recheck_source"))] += 1
        if rec.get("unknown_reason"):
            self.unknown_reasons[str(rec["unknown_reason"])] += 1

    def result(self) -> dict[str, Any]:
        def mean(key: str) -> float | None:
            vals = self.values[key]
            return sum(vals) / len(vals) if vals else None

        return {
            "applied": self.applied,
            "mean_actor_calls": mean("actor_calls"),
            "mean_commit_calls": mean("commit_calls"),
            "mean_flips": mean("flips"),
            "period_two": self.rates["period_two_oscillation"].to_dict(),
            "parity_dependent": self.rates["parity_dependent"].to_dict(),
            "actor_correct": self.rates["actor_correct"].to_dict(),
            "commit_correct": self.rates["commit_correct"].to_dict(),
            "correct_paired": self.correct_paired.to_dict(),
            "recheck_sources": dict(self.recheck_sources),
            "unknown_reasons": dict(self.unknown_reasons),
        }


def commit_table(rows: Rows) -> dict[str, Any]:
    return fold(CommitTable(), rows)


#: Each policy's table as an accumulator (the run summary's) …
TABLES: dict[str, Callable[[], Table]] = {
    "twincheck": TwincheckTable,
    "checklist": ChecklistTable,
    "vrr": VrrTable,
    "commit": CommitTable,
}
#: … and as a function of the rows.
PAPER_TABLES: dict[str, Callable[[Rows], dict[str, Any]]] = {
    "twincheck": twincheck_table,
    "checklist": checklist_table,
    "vrr": vrr_table,
    "commit": commit_table,
}
