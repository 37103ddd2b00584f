"""An upload's line errors grouped by problem, so 200 lines with one problem read as one row
("lines 3–200: …, 198 lines") rather than 200 identical rows."""

from __future__ import annotations

from typing import Any

# Up to this many runs of consecutive lines are listed ("lines 3–5, 9"); more (one bad line per
# trace, say) read as their span ("200 lines from 2 to 1395").
MAX_RANGES = 4


def line_ranges(lines: list[int]) -> list[tuple[int, int]]:
    """Sorted, distinct line numbers as runs of consecutive lines: [3,4,5,9] → [(3,5),(9,9)]."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _lines_text(ranges: list[tuple[int, int]], count: int) -> str:
    if len(ranges) > MAX_RANGES:
        return f"{count} lines from {ranges[0][0]} to {ranges[-1][1]}"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return f"line {ranges[0][0]}"
    return "lines " + ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in ranges)


def group_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Errors with the same path and message as one group, in order of first occurrence.

    Each group: path, message, count (lines), lines (as text: "lines 3–200"), first_line,
    traces (how many distinct trace ids) and trace_id (the first, for an example)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for e in errors:
        key = (str(e.get("path") or ""), str(e.get("message") or ""))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {
                "path": key[0],
                "message": key[1],
                "line_numbers": [],
                "trace_ids": [],
            }
        line = e.get("line")
        if isinstance(line, int):
            g["line_numbers"].append(line)
        tid = e.get("trace_id")
        if tid and tid not in g["trace_ids"]:
            g["trace_ids"].append(tid)
    out = []
    for g in groups.values():
        ranges = line_ranges(g["line_numbers"])
        out.append(
            {
                "path": g["path"],
                "message": g["message"],
                "count": len(g["line_numbers"]) or 1,
                "lines": _lines_text(ranges, len(set(g["line_numbers"]))) if ranges else "",
                "first_line": ranges[0][0] if ranges else None,
                "traces": len(g["trace_ids"]),
                "trace_id": g["trace_ids"][0] if g["trace_ids"] else "",
            }
        )
    return out
