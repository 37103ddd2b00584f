"""The TwinCheck panel: per triggered call, the twin, its checks, both judgments and the gate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.trace_page.events import step_summary
from auditor.trace_page.model_calls import model_calls
from auditor.trace_page.text import as_dict, as_list, fmt_num, short, visible


def twincheck_panel(
    record: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Per triggered call: the call, certificate, twin, structural checks, both judgments (one
    per A/B orientation) and the gate's decision with its reason."""
    decisions = []
    for d in as_list(record.get("decisions")):
        if not isinstance(d, Mapping):
            continue
        call = as_dict(d.get("call"))
        twin = as_dict(d.get("twin"))
        cert = as_dict(d.get("certificate"))
        checks = as_dict(d.get("checks"))
        gate = as_dict(d.get("gate"))
        judgments = []
        for j in as_list(d.get("judgments")):
            if not isinstance(j, Mapping):
                continue
            judgments.append(
                {
                    "orientation": visible(str(j.get("orientation", "?"))),
                    "order": "A = actor, B = twin"
                    if j.get("orientation") in ("actor_first", "AB", "forward")
                    else "A = twin, B = actor"
                    if j.get("orientation") in ("twin_first", "BA", "reversed")
                    else "",
                    "prefer": short(j.get("prefer"), 10) if j.get("prefer") is not None else "none",
                    "fatal_a": j.get("fatal_a"),
                    "fatal_b": j.get("fatal_b"),
                    "score_a": fmt_num(j.get("score_a")),
                    "score_b": fmt_num(j.get("score_b")),
                    "confidence": fmt_num(j.get("confidence")),
                    "judge": visible(str(j.get("judge", d.get("judge", "?")))),
                    "error": short(j["error"], 200) if j.get("error") else "",
                }
            )
        twin_text = ""
        if twin.get("kind") == "completion" or (twin.get("text") and not twin.get("name")):
            twin_text = f"reply: {short(twin.get('text'), 200)}"
        elif twin.get("kind") == "delete":
            twin_text = "delete the call"
        elif twin:
            twin_text = step_summary(
                {"type": "tool_call", "name": twin.get("name"), "arguments": twin.get("arguments")}
            )
        check_rows = []
        for key in ("tool_exists", "schema_valid", "grounded", "differs", "passed"):
            if key in checks:
                check_rows.append((key.replace("_", " "), checks[key]))
        problems = [
            f"{k.replace('_', ' ')}: {short(checks[k], 160)}"
            for k in ("schema_errors", "ungrounded")
            if checks.get(k)
        ]
        decisions.append(
            {
                "call_index": d.get("call_index"),
                "call": step_summary(
                    {
                        "type": "tool_call",
                        "name": call.get("name"),
                        "arguments": call.get("arguments"),
                    }
                )
                if call
                else "",
                "certificate": visible(str(cert.get("name", ""))) if cert else "",
                "certificate_details": [
                    (visible(str(k)), short(v, 80)) for k, v in cert.items() if k != "name"
                ],
                "twin": twin_text,
                "twin_kind": visible(str(twin.get("kind", ""))),
                "checks": check_rows,
                "check_problems": problems,
                "judgments": judgments,
                "judge": visible(str(d.get("judge", ""))),
                "heuristic": d.get("judge") == "heuristic"
                or any(j["judge"] == "heuristic" for j in judgments),
                "replace": gate.get("replace"),
                "reason": visible(str(gate.get("reason", ""))) if gate else "",
                "pair": visible(str(d.get("pair", ""))),
            }
        )
    missing = [] if "decisions" in record else ["decisions"]
    return {
        "tool_calls": record.get("tool_calls"),
        "triggers": record.get("triggers"),
        "accepted": record.get("accepted"),
        "gate_score": fmt_num(record.get("gate_score")),
        "decisions": decisions,
        "missing": missing,
        # The verifier's and generator's calls, prompt and response (model-backed runs only).
        "model_calls": model_calls(record),
    }
