"""Does a guard help one model more than another? The difference between two models' Δ on
the tasks both ran (difference-in-differences), paired by task, with a bootstrap interval over
tasks.

Each model's result on a task is the range of its guarded − actor difference (`Pair`'s
``difference_range``: one value when its outcomes are known, a range when one is unknown),
averaged over the model's results on that task (a task run several times counts once). A
task's difference-in-differences is then A's difference − B's: known where both are, else the
range from A's lowest − B's highest to A's highest − B's lowest.

Reported as `delta_report` reports Δ (`policies.stats.delta`): the estimate and percentile
interval over the tasks whose difference is known (``did_known``, ``ci_known``), the sharp
bounds over all common tasks, and a headline ``ci`` that covers every unknown (the bootstrap of
the worst and best cases, never narrower than the bounds). A positive difference means the
guard helps model A more than model B. Plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .methods import quantile, stratified_bootstrap_means

#: A model's results on one task: [sum of lowest differences, sum of highest, results].
TaskSums = list[int]


def add_task(tasks: dict[str, TaskSums], task: str, low: int, high: int) -> None:
    """Count one result (its difference range) of a model on ``task``."""
    sums = tasks.get(task)
    if sums is None:
        tasks[task] = [low, high, 1]
    else:
        sums[0] += low
        sums[1] += high
        sums[2] += 1


def difference_in_differences(
    a: Mapping[str, TaskSums],
    b: Mapping[str, TaskSums],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Δ of model A − Δ of model B, paired over the tasks both ran (`add_task`'s sums per task).
    Keys: ``n_tasks`` (common tasks), ``n_only_a``/``n_only_b`` (tasks one model ran alone,
    left out), ``n_known``/``n_unknown``, ``did_known`` and ``ci_known`` over the known tasks,
    ``bounds``, ``ci`` (covering the unknowns), ``ci_kind``, ``excludes_zero``, ``level``.
    None where undefined."""
    common = sorted(set(a) & set(b))
    out: dict[str, Any] = {
        "n_tasks": len(common),
        "n_only_a": len(set(a) - set(b)),
        "n_only_b": len(set(b) - set(a)),
        "n_known": 0,
        "n_unknown": 0,
        "did_known": None,
        "ci_known": None,
        "bounds": None,
        "ci": None,
        "ci_kind": None,
        "excludes_zero": False,
        "level": level,
    }
    if not common:
        return out
    worst: list[float] = []
    best: list[float] = []
    for t in common:
        a_lo, a_hi, a_n = a[t]
        b_lo, b_hi, b_n = b[t]
        worst.append(a_lo / a_n - b_hi / b_n)
        best.append(a_hi / a_n - b_lo / b_n)
    known = [w for w, b_ in zip(worst, best, strict=True) if w == b_]
    n = len(common)
    tail = (1.0 - level) / 2.0
    out.update(n_known=len(known), n_unknown=n - len(known))
    if known:
        [dist] = stratified_bootstrap_means([known], None, n_boot=n_boot, seed=seed)
        out.update(
            did_known=sum(known) / len(known),
            ci_known=[quantile(dist, tail), quantile(dist, 1.0 - tail)],
        )
    bounds = [sum(worst) / n, sum(best) / n]
    out["bounds"] = bounds
    if len(known) == n:
        out.update(ci=out["ci_known"], ci_kind="known_tasks")
    else:
        w_dist, b_dist = stratified_bootstrap_means([worst, best], None, n_boot=n_boot, seed=seed)
        out.update(
            ci=[
                min(quantile(w_dist, tail), bounds[0]),
                max(quantile(b_dist, 1.0 - tail), bounds[1]),
            ],
            ci_kind="with_unknowns",
        )
    ci = out["ci"]
    out["excludes_zero"] = bool(ci[0] > 0.0 or ci[1] < 0.0)
    return out
