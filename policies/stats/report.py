"""Run-level reports: aggregate one policy's per-trace results (SPEC §5.1 "Report, per run",
§5.2 metrics, §5.3 report, §5.4 report, §5.5).

Takes `PolicyResult`s or their stored ``to_dict()`` form (or the app's rows: ``applied``,
``actor_success``, ``guarded_success``, ``transition``, ``continuation``, ``record`` and
optionally ``trace_id``), so the app can aggregate straight from its JSONField. Output is
strict-JSON plain data.

Honest by construction: traces where the policy is *not applicable* are counted
by reason and left out of Δ (never "same"); every Δ carries ``n_unknown``, the bounds and an
interval that is never degenerate while unknowns exist (`policies.stats.delta`); success counts are
known successes of known n; unknown outcomes are listed for the annotation queue.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..data_quality import FlagFold
from ..jsonsafe import json_safe
from ..result import PolicyResult
from ..transitions import TRANSITIONS
from .delta import Pair, delta_report_counted, success_counts_counted
from .did import TaskSums, add_task, difference_in_differences
from .methods import holm, mcnemar_exact
from .paper_tables import TABLES
from .twincheck_report import TwincheckReport

ResultLike = PolicyResult | Mapping[str, Any]


def _plain(r: ResultLike) -> Mapping[str, Any]:
    return r.to_dict() if isinstance(r, PolicyResult) else r


def na_reason(row: Mapping[str, Any]) -> str | None:
    """The not-applicable reason of a result row (its field, else its record's)."""
    if row.get("transition") != "not_applicable" and not row.get("not_applicable"):
        return None
    rec = row.get("record") or {}
    return str(row.get("not_applicable") or rec.get("not_applicable") or "not applicable")


# A result's outcomes as one small number (3 × 3 × 2 × 2 < 256): actor and guarded success
# (False, True, None), an exact continuation, not applicable — what `effect` reads of a row.
_OUTCOMES: tuple[bool | None, ...] = (False, True, None)


def _code(row: Mapping[str, Any], not_applicable: bool) -> int:
    a, g = row.get("actor_success"), row.get("guarded_success")
    a_i = 2 if a is None else int(bool(a))
    g_i = 2 if g is None else int(bool(g))
    return a_i + 3 * g_i + 9 * (row.get("continuation") == "exact") + 18 * not_applicable


# Pair is frozen: one per code, shared by every trace with that code.
_PAIRS = [Pair(_OUTCOMES[c % 3], _OUTCOMES[c // 3 % 3], bool(c // 9 % 2)) for c in range(36)]


def paired_rates(pairs: Mapping[str, Mapping[Pair, int]]) -> dict[str, Any]:
    """Actor and guarded success over one set: the pairs whose two outcomes are both known
    (``n``), so the two rates are comparable and their difference is a difference of the same
    traces. ``actor_counts`` and ``guarded_counts`` are each over their own known outcomes, and
    Δ's known pairs (``n_known``) also hold unchanged trajectories of unknown outcome
    (``n_unchanged_unknown``), which add 0 to Δ and nothing to a rate."""
    n = actor = guarded = unchanged = 0
    for counted in pairs.values():
        for p, k in counted.items():
            if p.actor is not None and p.guarded is not None:
                n += k
                actor += k * p.actor
                guarded += k * p.guarded
            elif p.identical:
                unchanged += k
    return {
        "n": n,
        "actor_k": actor,
        "guarded_k": guarded,
        "actor_rate": actor / n if n else None,
        "guarded_rate": guarded / n if n else None,
        "n_unchanged_unknown": unchanged,
    }


def effect(
    transitions_seen: Mapping[str, int],
    codes: Mapping[str, Mapping[int, int]],
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    """Transitions, success counts, Δ (`policies.stats.delta`) and McNemar over rows given by their
    transitions and how many have each `_code`, per category; rows where the policy is not
    applicable are counted and left out of everything else but ``actor_counts_all`` (the actor's
    recorded outcome over every row)."""
    transitions = {t: transitions_seen.get(t, 0) for t in TRANSITIONS}
    pairs: dict[str, Counter[Pair]] = {}
    actor_seen: Counter[bool | None] = Counter()
    guarded_seen: Counter[bool | None] = Counter()
    # The actor's recorded outcome on every row, not-applicable ones included: the agent's own
    # success rate over all its traces, as the benchmark scores it.
    actor_all: Counter[bool | None] = Counter()
    for cat, counted in codes.items():
        for code, k in counted.items():
            p = _PAIRS[code % 18]
            actor_all[p.actor] += k
            if code < 18:  # applicable
                pairs.setdefault(cat, Counter())[p] += k
                actor_seen[p.actor] += k
                guarded_seen[p.guarded] += k
    d = delta_report_counted(pairs, n_boot=n_boot, level=level, seed=seed)
    actor = success_counts_counted(actor_seen)
    guarded = success_counts_counted(guarded_seen)
    paired = paired_rates(pairs)
    n = sum(sum(c.values()) for c in codes.values())
    n_app = d["n"]
    return {
        "n": n,
        "n_applicable": n_app,
        "n_not_applicable": n - n_app,
        "n_known": d["n_known"],
        "n_unknown": d["n_unknown"],
        "n_paired": d["n_known"],
        "transitions": transitions,
        "actor_counts": actor,
        "actor_counts_all": success_counts_counted(actor_all),
        "guarded_counts": guarded,
        "paired": paired,
        "actor_success": actor["rate"],
        "guarded_success": guarded["rate"],
        "delta": d["delta_known"],
        "delta_known": d["delta_known"],
        "ci_known": d["ci_known"],
        "ci_known_degenerate": d["ci_known_degenerate"],
        "bounds": d["bounds"],
        "ci": d["ci"],
        "ci_kind": d["ci_kind"],
        "level": level,
        "excludes_zero": d["excludes_zero"],
        # no known pair, no test: None (shown as "—"), never a p of 1 that reads as "no effect"
        "mcnemar_p": mcnemar_exact(transitions["rescue"], transitions["harm"])
        if transitions["rescue"] + transitions["harm"] + transitions["same"]
        else None,
    }


def _queue_item(row: Mapping[str, Any], i: int) -> dict[str, Any]:
    rec = row.get("record") or {}
    return {
        "trace": row.get("trace_id", i),
        "reason": row.get("unknown_reason") or rec.get("unknown_reason") or "unknown",
        "needs": "actor outcome" if row.get("actor_success") is None else "guarded outcome",
    }


def annotation_queue(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Results whose outcome is unknown, with why: the items the annotation queue needs."""
    return [_queue_item(r, i) for i, r in enumerate(rows) if r.get("transition") == "unknown"]


class _Queue:
    """A summary's annotation queue items (`_queue_item`, strict JSON), kept as their trace (8
    bytes) and the index of their (reason, needs) pair until `items`: as dicts each with its
    own strings they would be ~250 bytes an item, 15 MB for a 10⁵-trace run's 61,000.
    An item of other values (a trace that is not a 64-bit integer) is kept as it is."""

    def __init__(self) -> None:
        self.traces = array("q")
        self.kinds = array("l")  # index into `pairs`, or -1: the item is in `other`
        self.pairs: dict[tuple[str, str], int] = {}
        self.other: dict[int, Any] = {}

    def append(self, item: dict[str, Any]) -> None:
        trace, reason, needs = item["trace"], item["reason"], item["needs"]
        if type(trace) is int and -(2**63) <= trace < 2**63 and type(reason) is type(needs) is str:
            # strings and integers are their own strict JSON (`json_safe` gives them back equal)
            self.traces.append(trace)
            self.kinds.append(self.pairs.setdefault((reason, needs), len(self.pairs)))
        else:
            self.other[len(self.traces)] = json_safe(item)
            self.traces.append(0)
            self.kinds.append(-1)

    def __len__(self) -> int:
        return len(self.traces)

    def items(self) -> list[dict[str, Any]]:
        """The items in order of `append`, as `json_safe` of each (its strings shared)."""
        pairs = list(self.pairs)
        return [
            {"trace": t, "reason": pairs[k][0], "needs": pairs[k][1]} if k >= 0 else self.other[i]
            for i, (t, k) in enumerate(zip(self.traces, self.kinds, strict=True))
        ]


class RunSummary:
    """`summarise_run` as a fold: `add` one result row (and its category) at a time, in the
    run's order, then `result`. Keeps counts (per category, how many results have each
    outcome: all Δ's bootstrap resamples) and the unknown results' queue items (`_Queue`) —
    never the rows, so a run of 10⁵ results is summarised in a few MB whatever its records
    hold."""

    def __init__(self, policy: str | None, *, queue_items: bool = True, paper: bool = True) -> None:
        """``queue_items=False``: the result counts the annotation queue (``annotation_queue_n``)
        instead of listing it — the app's stored summary, whose readers only count it, while
        a 10⁵-trace run's 61,000 items were its largest part (8 MB of JSON, and the worker's
        peak while it was built and written). ``paper=False``: without the policy's paper
        table (a model's part of a run summary, `ModelTables`)."""
        self.policy = policy
        self.queue_items = queue_items
        self.n = self.applied = self.accepted = 0
        self.not_applicable: Counter[str] = Counter()
        self.continuations: Counter[str] = Counter()
        self.settings: Any = None
        # per category: how many results have each transition, each `_code`
        self.transitions: dict[str, Counter[str]] = defaultdict(Counter)
        self.codes: dict[str, Counter[int]] = defaultdict(Counter)
        self.queue = _Queue()
        self.flags = FlagFold()  # the run's data-quality section (`policies.data_quality`)
        make = TABLES.get(str(policy)) if paper else None
        self.paper = make() if make is not None else None

    def add(self, row: Mapping[str, Any], category: str = "") -> None:
        if self.n == 0:
            self.settings = (row.get("record") or {}).get("settings")
        self.applied += 1 if row.get("applied") else 0
        reason = na_reason(row)
        if reason is not None:
            self.not_applicable[reason] += 1
        continuation = row.get("continuation")
        self.continuations[str(continuation)] += 1
        self.accepted += continuation not in (None, "exact")
        self.transitions[category][str(row.get("transition"))] += 1
        self.codes[category][_code(row, reason is not None)] += 1
        self.flags.add(row, reason)
        if self.queue_items and row.get("transition") == "unknown":
            # strict JSON item by item: orjson's round trip of the whole queue at the end
            # peaked at 13× its text (51 MB for 24,719 items at 10⁵ traces)
            self.queue.append(_queue_item(row, self.n))
        if self.paper is not None:
            self.paper.add(row)
        self.n += 1

    @classmethod
    def merged(cls, policy: str | None, parts: Sequence[RunSummary]) -> RunSummary:
        """The counts of several folds of rows as one (without paper table or queue items):
        what one fold over all their rows would count, in the order of ``parts``."""
        out = cls(policy, queue_items=False, paper=False)
        for part in parts:
            if out.n == 0:
                out.settings = part.settings
            out.n += part.n
            out.applied += part.applied
            out.accepted += part.accepted
            out.not_applicable.update(part.not_applicable)
            out.continuations.update(part.continuations)
            for cat, counted in part.transitions.items():
                out.transitions[cat].update(counted)
            for cat, codes in part.codes.items():
                out.codes[cat].update(codes)
        return out

    def result(self, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> dict[str, Any]:
        n = self.n
        kw: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "level": level}
        summary: dict[str, Any] = {
            "policy": self.policy,
            "n_traces": n,
            "applied": self.applied,
            "trigger_rate": self.applied / n if n else None,
            "not_applicable": dict(sorted(self.not_applicable.items())),
            "accepted": self.accepted,
            "continuations": dict(sorted(self.continuations.items())),
            "settings": self.settings,
            "overall": effect(sum(self.transitions.values(), Counter()), self.codes, **kw),
        }
        table = {
            c: effect(self.transitions[c], {c: self.codes[c]}, **kw) for c in sorted(self.codes)
        }
        # Holm over the categories that have a test (known pairs); the others have none
        tested = [t for t in table.values() if t["mcnemar_p"] is not None]
        for t in table.values():
            t["mcnemar_p_holm"] = None
        for t, p in zip(tested, holm([t["mcnemar_p"] for t in tested]), strict=True):
            t["mcnemar_p_holm"] = p
        summary["per_category"] = table
        # what import flagged and how the flagged traces' decisions came out ({}: nothing)
        summary["data_quality"] = self.flags.result()
        if not self.queue_items:  # the unknown results, counted per category already
            summary["annotation_queue_n"] = sum(t["unknown"] for t in self.transitions.values())
        else:
            summary["annotation_queue"] = []  # its place; the items are strict JSON already
        if self.paper is not None:
            summary[str(self.policy)] = self.paper.result()
        out: dict[str, Any] = json_safe(summary)
        if self.queue_items:
            out["annotation_queue"] = self.queue.items()
        return out


def summarise_run(
    results: Sequence[ResultLike],
    categories: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Aggregate one policy's results over a run's traces: trigger rate, accepted
    replacements, not-applicable counts by reason, the overall and per-category `effect` (with
    Holm-adjusted McNemar p-values per category), the annotation queue and the policy's paper
    table (under the policy's name). `RunSummary` over the rows."""
    rows = [_plain(r) for r in results]
    cats = list(categories) if categories is not None else [""] * len(rows)
    if len(cats) != len(rows):
        raise ValueError("one category per result")
    policies = {r.get("policy") for r in rows}
    if len(policies) > 1:
        raise ValueError(f"summarise one policy at a time, got {sorted(map(str, policies))}")
    summary = RunSummary(next(iter(policies), None))
    for r, c in zip(rows, cats, strict=True):
        summary.add(r, c)
    return summary.result(n_boot=n_boot, level=level, seed=seed)


#: A trace's model in a summary's per-model tables when it has none.
NO_MODEL = "—"
#: The models (most results first) whose pairs the summary tests against each other: k models
#: give k(k−1)/2 differences.
PAIRED_MODELS = 8
#: A model's (or run source's) part of a run summary.
_MODEL_KEYS = ("n_traces", "applied", "trigger_rate", "not_applicable", "overall", "per_category")


def _model_part(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in _MODEL_KEYS if k in summary}


class ModelTables:
    """A policy's run tables per model — and per run source within a model that has several —
    and the difference of the guard's effect between each two models on the tasks both ran
    (`policies.stats.did`, tasks matched by their benchmark task id). Holds counts per run
    source (`RunSummary` without its paper table or queue; a model's are their sum) and, per
    model, three integers per task (~160 bytes a task: 16 MB for 10⁵ tasks)."""

    def __init__(self, policy: str) -> None:
        self.policy = policy
        # per model, per run source: its rows' counts (a model's are their sum, `merged`)
        self.sources: dict[str, dict[str, RunSummary]] = {}
        self.tasks: dict[str, dict[str, TaskSums]] = {}

    def add(
        self, row: Mapping[str, Any], category: str, model: str, source: str, task: str
    ) -> None:
        model = model or NO_MODEL
        by_source = self.sources.get(model)
        if by_source is None:
            by_source = self.sources[model] = {}
        s = by_source.get(source)
        if s is None:
            s = by_source[source] = RunSummary(self.policy, queue_items=False, paper=False)
        s.add(row, category)
        if task and na_reason(row) is None:
            low, high = _PAIRS[_code(row, False)].difference_range()
            add_task(self.tasks.setdefault(model, {}), task, low, high)

    def result(self, *, n_boot: int, seed: int = 0) -> dict[str, Any]:
        """``per_model``: each model's counts, overall Δ and per-category table (with
        ``sources`` when it has several run sources), the most results first;
        ``model_differences``: Δ of A − Δ of B for each two models with tasks."""
        per_model: dict[str, Any] = {}
        models = {
            m: RunSummary.merged(self.policy, list(s.values())) for m, s in self.sources.items()
        }
        for m in sorted(models, key=lambda m: (-models[m].n, m)):
            entry = _model_part(models[m].result(n_boot=n_boot, seed=seed))
            sources = self.sources[m]
            if len(sources) > 1:
                entry["sources"] = {
                    src or NO_MODEL: _model_part(sources[src].result(n_boot=n_boot, seed=seed))
                    for src in sorted(sources)
                }
            per_model[m] = entry
        paired = [m for m in per_model if self.tasks.get(m)][:PAIRED_MODELS]
        differences = [
            {
                "a": a,
                "b": b,
                **difference_in_differences(self.tasks[a], self.tasks[b], n_boot=n_boot, seed=seed),
            }
            for i, a in enumerate(paired)
            for b in paired[i + 1 :]
        ]
        out: dict[str, Any] = json_safe({"per_model": per_model, "model_differences": differences})
        return out


#: Where a policy's run summary keeps its transition-matrix cells, [[actor, guarded, n], …] in
#: the order of their first occurrence (the run page draws the matrix from them).
MATRIX_KEY = "transition_matrix"


class PolicyFold:
    """One policy's run summary as a fold over its result rows in the run's order: `add` each
    row with its trace's category (and model, run source, task), then `result`. Holds
    `RunSummary` (counts and the paper table), the same tables per model (`ModelTables`),
    TwinCheck's `TwincheckReport` and the transition-matrix cells — counts, and per model a
    few integers a task, so a run is summarised a page of rows at a time."""

    def __init__(self, policy: str, *, queue_items: bool = False) -> None:
        self.policy = policy
        self.summary = RunSummary(policy, queue_items=queue_items)
        self.models = ModelTables(policy)
        self.report = TwincheckReport() if policy == "twincheck" else None
        self.cells: dict[tuple[Any, Any], int] = {}

    @property
    def n(self) -> int:
        return self.summary.n

    def add(
        self,
        row: Mapping[str, Any],
        category: str,
        *,
        model: str = "",
        source: str = "",
        task: str = "",
    ) -> None:
        """Fold one result row; its trace's category, model, run source (the run it was
        uploaded as) and benchmark task id key the per-model tables (`ModelTables`)."""
        self.summary.add(row, category)
        self.models.add(row, category, model, source, task)
        if self.report is not None:
            self.report.add(row, category)
        if row["transition"] != "not_applicable":
            key = (row["actor_success"], row["guarded_success"])
            self.cells[key] = self.cells.get(key, 0) + 1

    def result(self, *, n_boot: int) -> dict[str, Any]:
        """The policy's part of the run summary (with its report for TwinCheck)."""
        if not self.summary.n:
            return {"n": 0, MATRIX_KEY: []}
        out = self.summary.result(n_boot=n_boot)
        out[MATRIX_KEY] = [[a, g, n] for (a, g), n in self.cells.items()]
        out.update(self.models.result(n_boot=n_boot))
        if self.report is not None:  # the paper's per-certificate table and Fig. 2 (gate AUC/AP)
            out["report"] = self.report.result(n_boot=n_boot, seed=0)
        return out
