"""The columns of the traces list, in one registry that the template, sorting and the column
chooser all read. A column has a key (its name in the URL, `?cols=trace,model`), a heading, the
trace field it sorts by (a nullable one is listed in sorting.NULLABLE: its traces without the
figure come last either way) and whether it shows by default. The trace column always shows:
it links to the trace.

A new column is an entry here and its cell in templates/auditor/trace_list.html."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    sort: str = ""  # the Trace field ordered by; "" when the column does not sort
    default: bool = True
    numeric: bool = False
    always: bool = False  # shown whatever the choice


COLUMNS: tuple[Column, ...] = (
    Column("trace", "Trace", sort="external_id", always=True),
    Column("model", "Model", sort="model"),
    Column("benchmark", "Benchmark", sort="benchmark"),
    Column("category", "Category", sort="category"),
    Column("outcome", "Outcome"),
    Column("events", "Events", sort="event_count", numeric=True),
    Column("duration", "Duration", sort="duration_ms", numeric=True),
    Column("tokens", "Tokens", sort="total_tokens", numeric=True),
    Column("cost", "Cost", sort="cost_usd", numeric=True),
    Column("created", "Uploaded", sort="created_at", default=False),
    Column("tags", "Tags"),
    Column("transitions", "Transitions"),
)
BY_KEY = {c.key: c for c in COLUMNS}
# Columns that show the audit's decisions: never offered to the annotator role
# (auditor.runs.blindness), whatever a view or the URL asks for.
DECISION_COLUMNS = frozenset({"transitions"})
DEFAULT = tuple(c.key for c in COLUMNS if c.default)
SORTS = {c.key: c.sort for c in COLUMNS if c.sort}


def parse_columns(value: str | list[str] | None) -> tuple[str, ...] | None:
    """'model,events' or ['model', 'events'] → the chosen columns in registry order, with the
    always-shown ones; None when nothing known is named (the caller falls back)."""
    if value is None:
        return None
    names = value.split(",") if isinstance(value, str) else value
    wanted = {n.strip() for n in names if n.strip() in BY_KEY}
    if not wanted:
        return None
    return tuple(c.key for c in COLUMNS if c.key in wanted or c.always)


def columns_param(keys: tuple[str, ...]) -> str:
    """The `cols` value of a choice; "" for the default (the URL stays short)."""
    return "" if keys == DEFAULT else ",".join(keys)
