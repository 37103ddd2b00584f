"""The steps tree (`auditor.trace_page.steps`) as the template's rows: flattened depth first,
bounded (`LIMIT` unless "show all" is asked for, `ALL_LIMIT` even then), each row with its bar's
place on the shared time axis, its duration, tokens and cost as text, and whether its
``<details>`` starts open (nested, so the tree folds without script). Pure."""

from __future__ import annotations

from typing import Any

from auditor.trace_page.steps import Node, Tree
from auditor.trace_page.timing import cost_text, count_text, duration_text, tokens_text

LIMIT = 100  # rows rendered unless "show all" is asked for
ALL_LIMIT = 10_000  # rows rendered at most, even then
OPEN_ALL = 150  # a tree this small opens fully; a larger one opens its top levels


def _pct(x: float) -> str:
    return f"{min(100.0, max(0.0, x)):.3f}%"


TONES = {"LLM": "llm", "tool_call": "tool", "TOOL": "tool", "tool_result": "result"}


def _tone(n: Node) -> str:
    """The bar's colour: the model's steps, tool calls, tool results, everything else."""
    if n.label == "message" and n.name == "assistant":
        return "llm"
    return TONES.get(n.label, "other")


def _row(n: Node, depth: int, tree: Tree) -> dict[str, Any]:
    """One row, every value ready for the template (a dict: the template engine resolves dict
    keys at its first try, attributes only after a failed item lookup — per row, per value)."""
    t = n.timing
    duration = duration_title = ""
    if t.duration is not None:
        duration = duration_text(t.duration)
    elif n.derived and n.lo is not None and n.hi is not None:
        duration = duration_text(n.hi - n.lo)
    elif t.bad:
        duration = "unknown"
    elif tree.lo is None and n.summed is not None:
        # No step has a time, so whether the steps under it overlapped is unknown: their
        # durations added up, said as such (the time they took, not a wall-clock span).
        duration = duration_text(n.summed)
        duration_title = "the durations of the steps under it, added up"
    bar = style = when = ""
    if tree.lo is not None and tree.hi is not None and n.lo is not None and n.hi is not None:
        span = tree.hi - tree.lo
        left = _pct((n.lo - tree.lo) / span * 100) if span > 0 else _pct(0)
        width = _pct((n.hi - n.lo) / span * 100) if span > 0 else _pct(0)
        style = f"left:{left};width:{width}"
        when = "starts at +" + (duration_text(n.lo - tree.lo) if n.lo > tree.lo else "0 ms")
        bar = f"wf-bar b-{_tone(n)}"
        if n.hi == n.lo and t.duration is None:
            bar += " point"  # a start with no duration: a mark, not a bar
        if n.derived:
            bar += " derived"
            when += ", spans the steps under it"
    u = n.total
    tokens = tokens_text(u)
    tokens_title = ""
    if u.input is not None or u.output is not None:
        tokens_title = f"{count_text(u.total)} tokens: in / out"
    elif u.total is not None:
        tokens_title = "tokens in all (in and out not recorded apart)"
    if n.children and tokens:
        tokens_title += ", with the steps under it"
    return {
        "depth": depth,
        "opens": False,  # has children: a <details> whose summary is this row
        "open": False,
        "closes": range(0),  # </details> to write after this row
        "cls": f"wf-row{'' if n.children else ' wf-leaf'} k-{n.kind}{' err' if n.error else ''}",
        "label": n.label,
        "name": n.name,
        "error": n.error,
        "events": n.events,
        "seq": n.seq,
        "href": "",
        "sbs_href": "",
        "bar": bar,  # the bar's classes, "" for no bar
        "style": style,  # its place on the axis, CSS percentages (numbers only)
        "when": when,
        "duration": duration,
        "duration_title": duration_title,
        "tokens": tokens,
        "tokens_title": tokens_title,
        "cost": cost_text(u.cost),
    }


def rows(tree: Tree, *, limit: int = LIMIT) -> tuple[list[dict[str, Any]], int]:
    """The tree in display order, at most ``limit`` rows, and how many rows the whole tree has.
    Rows after the limit are left out whole; every ``<details>`` opened is closed. Each row's
    ``href`` and ``sbs_href`` (its event in the timeline and in the side-by-side) are left for
    the caller, which knows what the page shows."""
    out: list[dict[str, Any]] = []
    total = 0
    todo = list(tree.roots)
    while todo:
        n = todo.pop()
        total += 1
        todo.extend(n.children)
    small = total <= OPEN_ALL
    open_depth = 1 + (len(tree.roots) == 1)
    depths: list[int] = []  # depths of the <details> still open
    stack = [(r, 0) for r in reversed(tree.roots)]
    while stack and len(out) < limit:
        n, depth = stack.pop()
        closes = 0
        while depths and depths[-1] >= depth:
            depths.pop()
            closes += 1
        if out:
            out[-1]["closes"] = range(closes)
        row = _row(n, depth, tree)
        if n.children:
            row["opens"] = True
            row["open"] = small or depth < open_depth
            depths.append(depth)
            stack.extend((c, depth + 1) for c in reversed(n.children))
        out.append(row)
    if out:
        out[-1]["closes"] = range(len(depths))
    return out, total


def summary(tree: Tree) -> dict[str, Any]:
    """What the page says about the whole tree, as plain values (cacheable)."""
    return {
        "source": tree.source,
        "events": tree.events,
        "untimed": tree.untimed,
        "bad": tree.bad,
        "has_timing": tree.has_timing,
        "length": tree.length,
        # Durations without times: the column shows them, the header line their sum.
        "summed": "" if tree.summed is None else duration_text(tree.summed),
        "tokens": tokens_text(tree.total),
        "cost": cost_text(tree.total.cost),
        "axis": axis(tree),
    }


def axis(tree: Tree, ticks: int = 4) -> list[tuple[str, str]]:
    """Marks of the shared time axis: (CSS left %, time from the first step)."""
    if tree.lo is None or tree.hi is None or tree.hi <= tree.lo:
        return []
    span = tree.hi - tree.lo
    marks = [(_pct(100 * i / ticks), duration_text(span * i / ticks)) for i in range(ticks + 1)]
    marks[0] = (marks[0][0], "0")
    return marks
