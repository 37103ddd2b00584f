"""The traces list's state in its query string: filters, sort, columns. Cleaned here, once, for
the list, its saved views and its share links. Unknown values of a choice mean "no filter" (a
stale link still opens); a value the user typed that cannot mean anything (a date that is no
date) is dropped too, and said so beside the form."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.http import QueryDict
from django.utils import timezone

from auditor.runs.selectors import TRANSITIONS, latest_run
from auditor.trace_list import usage_columns
from auditor.trace_list.columns import DECISION_COLUMNS, DEFAULT, columns_param, parse_columns
from auditor.trace_list.sorting import parse_sort
from policies import POLICIES

FILTERS = (
    "run", "policy", "transition", "applied", "actor", "guarded",
    "outcome", "model", "benchmark", "category", "tag", "tid", "from", "to", "q", "sort",
    *usage_columns.FILTERS,
)  # fmt: skip
# What a saved view keeps and a share link carries: the filters and the columns.
KEPT = (*FILTERS, "cols")
TRI = ("success", "failure", "unknown")
TID_MAX = 255  # Trace.external_id's length


def as_int(value: str | None) -> int | None:
    return int(value) if value and value.isascii() and value.isdigit() and len(value) < 19 else None


def _date(value: str, name: str, errors: list[str]) -> datetime.date | None:
    if not value:
        return None
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        errors.append(f"{name} {value!r} is not a date; write it as YYYY-MM-DD (e.g. 2026-01-31)")
        return None


@dataclass
class ListState:
    f: dict[str, str]  # the cleaned filters, "" where none
    cols: tuple[str, ...] = DEFAULT
    errors: list[str] = field(default_factory=list)
    since: datetime.datetime | None = None  # created_at ≥ since
    until: datetime.datetime | None = None  # created_at < until (the day after "to")
    run_chosen: bool = False  # the query named the run (else it is the latest)

    def params(self, *, pin_run: bool = True, **extra: str) -> dict[str, str]:
        """The non-empty filters and columns, as query parameters, plus `extra`. `pin_run`
        False: the run only if the user chose it (a saved view or a shared link then follows
        the project's latest run, as the bare list does)."""
        out = {k: v for k, v in self.f.items() if v and (k != "run" or pin_run or self.run_chosen)}
        cols = columns_param(self.cols)
        if cols:
            out["cols"] = cols
        out.update(extra)
        return out

    def query(self, *, pin_run: bool = True, **extra: str) -> str:
        return urlencode(self.params(pin_run=pin_run, **extra))


def _day_start(d: datetime.date) -> datetime.datetime:
    return timezone.make_aware(datetime.datetime.combine(d, datetime.time.min))


# The filters that read the audit's decisions: dropped, with no run read, for a caller who may
# not see them (the annotator role, auditor.runs.blindness).
AUDIT_FILTERS = ("run", "policy", "transition", "applied", "actor", "guarded")


def list_state(  # type: ignore[no-untyped-def]
    g: QueryDict, *, project, runs, cols: tuple[str, ...] | None = None, decisions: bool = True
):
    """(ListState, run): the query's filters cleaned, and the audit run they read (the chosen
    one, else the project's latest; none without `decisions`). `cols`: the columns when the
    query names none."""
    f = {k: g.get(k, "").strip()[:200] for k in FILTERS}
    f["tid"] = g.get("tid", "").strip()[:TID_MAX]
    errors: list[str] = []
    run = None
    if not decisions:
        f.update(dict.fromkeys(AUDIT_FILTERS, ""))
    run_id = as_int(f["run"])
    if run_id is not None:
        run = runs.filter(pk=run_id).first()
    run_chosen = run is not None
    if run is None and decisions:
        run = latest_run(project=project, runs=runs)
    f["run"] = str(run.pk) if run else ""
    if f["policy"] not in POLICIES:
        f["policy"] = ""
    if f["transition"] not in TRANSITIONS:
        f["transition"] = ""
    if f["applied"] not in ("yes", "no"):
        f["applied"] = ""
    for k in ("actor", "guarded", "outcome"):
        if f[k] not in TRI:
            f[k] = ""
    if parse_sort(f["sort"]) is None:
        f["sort"] = ""
    if "\x00" in f["tid"]:
        errors.append("a trace id cannot hold NUL characters")
        f["tid"] = ""
    f["tag"] = f["tag"][:40]
    since = _date(f["from"], "from", errors)
    to = _date(f["to"], "to", errors)
    if since and to and to < since:
        errors.append(f"the range ends ({to}) before it starts ({since}); no date filter applied")
        since = to = None
    f["from"] = since.isoformat() if since else ""
    f["to"] = to.isoformat() if to else ""
    usage_columns.clean(f)
    chosen = parse_columns(g.get("cols")) or cols or DEFAULT
    if not decisions:
        chosen = tuple(k for k in chosen if k not in DECISION_COLUMNS)
    state = ListState(
        f=f,
        cols=chosen,
        errors=errors,
        run_chosen=run_chosen,
        since=_day_start(since) if since else None,
        until=_day_start(to + datetime.timedelta(days=1))
        if to and to < datetime.date.max
        else None,
    )
    return state, run
