"""A run's tasks × models matrix for one policy: each cell a model's actor and guarded outcome on
the task (its transition: rescue, harm, same, unknown, not applicable), linking to the trace —
which tasks the guard rescues (or harms) for which model.

Tasks are matched across models by their benchmark task id (a trace without one is its own
row). Filters: the models shown, a category, a transition some shown cell has, rows where the
models' transitions differ, and text in the task id. A page shows `PAGE_TASKS` rows, and only
its rows' cells are read whole: the filters run on a first pass that keeps two small numbers per
task and model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

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


#: A transition as one small number in the first pass's index of tasks (`_index`).
_TRANSITIONS = tuple(AuditResult.Transition.values)


def _task_key(benchmark: str, task_id: str, external_id: str) -> str:
    """The row a result goes in: its benchmark task (matched across models), else its trace."""
    return f"{benchmark}:{task_id}" if task_id else external_id


def _index(
    results: Any, all_models: list[str]
) -> tuple[dict[str, dict[int, int]], dict[str, tuple[str, str]]]:
    """The first pass: per task, each model's first result's transition (by model and
    transition number), and the task's category and benchmark task id ('' for none). Reads
    six short columns per result and keeps two small integers per task and model: the cells
    themselves (their outcomes and links) are read for one page's tasks only (`_cells`)."""
    model_no = {m: i for i, m in enumerate(all_models)}
    tasks: dict[str, dict[int, int]] = {}
    about: dict[str, tuple[str, str]] = {}
    values = results.values_list(
        "transition", "trace__model", "trace__benchmark", "trace__task_id",
        "trace__external_id", "trace__category",
    ).order_by("trace_id")  # fmt: skip
    for tr, model, bench, task_id, ext, cat in values.iterator(2000):
        model = model or NO_MODEL
        m = model_no.get(model)
        if m is None:
            m = model_no[model] = len(all_models)
            all_models.append(model)
        key = _task_key(bench, task_id, ext)
        cells = tasks.get(key)
        if cells is None:
            cells = tasks[key] = {}
            about[key] = (cat or "—", task_id)
        cells.setdefault(m, _TRANSITIONS.index(tr))
    return tasks, about


def _cells(
    results: Any, run: AuditRun, policy: str, keys: list[str], task_ids: set[str]
) -> dict[str, dict[str, Cell]]:
    """The second pass: the cells of ``keys``' tasks, read by their benchmark task ids (and
    trace ids, for results without one)."""
    page = results.filter(
        Q(trace__task_id__in=task_ids) | Q(trace__task_id="", trace__external_id__in=keys)
    ).values_list(
        "trace_id", "transition", "actor_success", "guarded_success", "trace__model",
        "trace__benchmark", "trace__task_id", "trace__external_id",
    ).order_by("trace_id")  # fmt: skip
    wanted = set(keys)
    out: dict[str, dict[str, Cell]] = {}
    for trace, tr, actor, guarded, model, bench, task_id, ext in page.iterator(2000):
        key = _task_key(bench, task_id, ext)
        if key not in wanted:  # the same task id in another benchmark
            continue
        model = model or NO_MODEL
        cells = out.setdefault(key, {})
        cell = cells.get(model)
        if cell is not None:
            cell.more += 1
            continue
        url = f"{page_url('trace', trace)}?run={run.pk}&policy={policy}"
        cells[model] = Cell(trace, tr, actor, guarded, url)
    return out


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
    the filters. ``differs``: rows where the shown models' transitions are not all the same
    (a model's first result on the task counts)."""
    results = AuditResult.objects.filter(run=run, policy=policy)
    if category:
        results = results.filter(trace__category=category)
    all_models = list(((run.summary or {}).get(policy) or {}).get("per_model") or {})
    tasks, about = _index(results, all_models)
    shown = [m for m in all_models if not models or m in models]
    shown_no = [all_models.index(m) for m in shown]
    wanted = _TRANSITIONS.index(transition) if transition in _TRANSITIONS else None
    needle = q.lower()
    matching = []
    for key, by_model in tasks.items():
        found = [by_model[m] for m in shown_no if m in by_model]
        if not found or (needle and needle not in key.lower()):
            continue
        if wanted is not None and wanted not in found:
            continue
        if differs and len(set(found)) < 2:
            continue
        matching.append(key)
    matching.sort(key=lambda k: (task_order(k), k))
    pages = max(1, -(-len(matching) // PAGE_TASKS))
    page = min(max(page, 1), pages)
    keys = matching[(page - 1) * PAGE_TASKS : page * PAGE_TASKS]
    task_ids = {about[k][1] for k in keys} - {""}
    cells = _cells(results, run, policy, keys, task_ids) if keys else {}
    return {
        "models": shown,
        "all_models": all_models,
        "rows": [
            {
                "task": k,
                "category": about[k][0],
                "cells": [(cells.get(k) or {}).get(m) for m in shown],
            }
            for k in keys
        ],
        "n_tasks": len(matching),
        "page": page,
        "pages": pages,
        "page_tasks": PAGE_TASKS,
    }
