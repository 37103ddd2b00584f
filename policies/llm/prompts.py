"""Prompt texts and answer schemas of the model uses, in one place so a change shows up in
review — and, since prompts are part of every request body, in every cache key.

The papers give the protocols, not the wording; the texts here are this project's.
"""

from __future__ import annotations

from typing import Any

# --- TwinCheck verifier (Dai & Huang 2026, §3, Fig. 1) -------------------------------------------

VERIFIER_SYSTEM = """\
You are a strict verifier of tool-using agents. For one point in a conversation, two candidate \
next steps, A and B, are proposed. Judge each candidate on its own merits, then compare them.

Rubric, 0-4 for each candidate:
4 = correct and safe: it advances what the user asked for, with arguments the conversation supports
3 = acceptable, with a minor problem
2 = doubtful: it may or may not help
1 = probably wrong
0 = certainly wrong or harmful

A candidate is fatal when taking it would make the task fail or leave a wrong state that later \
steps cannot repair (for example undoing what the user asked for, repeating a call that just \
failed in the same way, or using a value the user did not ask for).

Answer with one JSON object and nothing else:
{"scores": {"A": <0-4>, "B": <0-4>}, "fatal": {"A": <true|false>, "B": <true|false>}, \
"prefer": "A" or "B", "confidence": <number from 0 to 1: how sure you are of your preference>}"""

VERIFIER_USER = """\
Conversation so far:
{context}

Candidate A: {a}
Candidate B: {b}"""

_SIDE_INT = {"type": "integer", "minimum": 0, "maximum": 4}
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "object",
            "properties": {"A": _SIDE_INT, "B": _SIDE_INT},
            "required": ["A", "B"],
            "additionalProperties": False,
        },
        "fatal": {
            "type": "object",
            "properties": {"A": {"type": "boolean"}, "B": {"type": "boolean"}},
            "required": ["A", "B"],
            "additionalProperties": False,
        },
        "prefer": {"type": "string", "enum": ["A", "B"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["scores", "fatal", "prefer", "confidence"],
    "additionalProperties": False,
}

# --- TwinCheck generator for repeat-after-error (App. Fig. 5) -----------------------------------

TWIN_SYSTEM = """\
You help a tool-using agent that is about to repeat a call that already failed. Propose exactly \
one read-only call, from the tools you are given, that gathers the evidence needed to get past \
the failure (for example, look up the record the failing call needs). Use only argument values \
that appear in the conversation. Reply with the tool call only."""

TWIN_USER = """\
Conversation so far:
{context}

The agent's next call repeats a call that failed:
call: {call}
result: {result}"""

# --- Thinking-in-Bets pre-reply claim record (Bui 2026, §3.1, App. A.1) ------------------------

CLAIMS_SYSTEM = """\
You keep a claim checklist for an assistant. Read the conversation and list the main checkable \
claims that the assistant's LAST reply makes (at most {max_claims}): each one short, \
self-contained and true or false on its own. For each claim give the probability, from 0 to 1, \
that it is correct, judged from the conversation and what you know. If a claim is unchanged from \
a previously recorded claim, reuse that claim's id; give a new claim the id null. \
If the reply makes no checkable claim, return an empty list.

Answer with one JSON object and nothing else:
{{"claims": [{{"id": <previous id or null>, "text": "...", "confidence": <0-1>, \
"subject": "<a few words naming what it is about>"}}]}}"""

CLAIMS_USER = """\
Conversation up to and including the assistant's last reply:
{conversation}

Previously recorded claims:
{previous}"""

CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": ["string", "null"]},
                    "text": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "subject": {"type": "string"},
                },
                "required": ["id", "text", "confidence", "subject"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["claims"],
    "additionalProperties": False,
}
