"""A run's tasks × models matrix for one policy: each cell a model's actor and guarded outcome on
the task (its transition: rescue, harm, same, unknown, not applicable), linking to the trace —
which tasks the guard rescues (or harms) for which model.

Tasks are matched across models by their benchmark task id (a trace without one is its own
row). Filters: the models shown, a category, a transition some shown cell has, rows where the
models' transitions differ, and text in the task id. A page shows `PAGE_TASKS` rows."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from auditor.runs.models import AuditResult, AuditRun
from policies.stats.report import NO_MODEL
from traces.links import page_url

PAGE_TASKS = 200
_OUTCOME = {True: "S", False: "F", None: "?"}
_WORD = {True: "success", False: "failure", None: "unknown"}
_DIGITS = re.compile(r"([0-9]+)")


def task_order(key: str) -> tuple[tuple[int, int | str], ...]:
    """Task ids in natural order: runs of digits compare as numbers, so `base_2` comes before
    `base_10` (benchmarks number their tasks without leading zeros)."""
    parts = _DIGITS.split(key)  # text, digits, text, digits, …, text
    return tuple((1, int(p)) if i % 2 else (0, p) for i, p in enumerate(parts) if p)


@dataclass
class Cell:
    trace: int
    transition: str
    actor: bool | None
    guarded: bool | None
    url: str
    more: int = 0  # further results of the model on this task (runs of it several times)

    @property
    def text(self) -> str:
        return f"{_OUTCOME[self.actor]}→{_OUTCOME[self.guarded]}"

    @property
    def label(self) -> str:
        return f"actor {_WORD[self.actor]}, guarded {_WORD[self.guarded]} ({self.transition})"


@dataclass
class Row:
    task: str
    category: str
    cells: dict[str, Cell] = field(default_factory=dict)


def task_matrix(
    run: AuditRun,
    policy: str,
    *,
    models: list[str] | None = None,
    category: str = "",
    transition: str = "",
    differs: bool = False,
    q: str = "",
    page: int = 1,
) -> dict[str, Any]:
    """The matrix's rows (tasks in natural order of their ids, `task_order`) on page ``page``,
    its columns (the run's models, most results first, or ``models``) and how many tasks match
    the filters."""
    results = AuditResult.objects.filter(run=run, policy=policy)
    if category:
        results = results.filter(trace__category=category)
    all_models = list(((run.summary or {}).get(policy) or {}).get("per_model") or {})
    rows: dict[str, Row] = {}
    values = results.values_list(
        "trace_id",
        "transition",
        "actor_success",
        "guarded_success",
        "trace__model",
        "trace__benchmark",
        "trace__task_id",
        "trace__category",
        "trace__external_id",
    ).order_by("trace_id")
    for trace, tr, actor, guarded, model, bench, task_id, cat, ext in values.iterator(2000):
        model = model or NO_MODEL
        if model not in all_models:
            all_models.append(model)
        key = f"{bench}:{task_id}" if task_id else ext
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(key, cat or "—")
        cell = row.cells.get(model)
        if cell is not None:
            cell.more += 1
            continue
        url = f"{page_url('trace', trace)}?run={run.pk}&policy={policy}"
        row.cells[model] = Cell(trace, tr, actor, guarded, url)
    shown = [m for m in all_models if not models or m in models]
    matching = []
    for key in sorted(rows, key=lambda k: (task_order(k), k)):
        row = rows[key]
        cells = [row.cells[m] for m in shown if m in row.cells]
        if not cells or (q and q.lower() not in key.lower()):
            continue
        if transition and not any(c.transition == transition for c in cells):
            continue
        if differs and len({c.transition for c in cells}) < 2:
            continue
        matching.append(row)
    pages = max(1, -(-len(matching) // PAGE_TASKS))
    page = min(max(page, 1), pages)
    rows_page = matching[(page - 1) * PAGE_TASKS : page * PAGE_TASKS]
    return {
        "models": shown,
        "all_models": all_models,
        "rows": [
            {"task": r.task, "category": r.category, "cells": [r.cells.get(m) for m in shown]}
            for r in rows_page
        ],
        "n_tasks": len(matching),
        "page": page,
        "pages": pages,
    }
