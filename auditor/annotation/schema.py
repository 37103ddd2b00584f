"""The verdict schema of a queue: per item kind the question, the rubric and the labels with
their keys (defaults here, overrides per queue, validated when an owner edits them)."""

from __future__ import annotations

from typing import Any

from auditor.annotation.models import AnnotationItem, AnnotationQueue

KINDS = ("outcome", "pair", "feedback", "commit")
FILTER_FIELDS = ("policy", "transition", "category")


class AnnotationRejected(Exception):
    """The request cannot be honoured as asked (not your claim, bad label, already final)."""


DEFAULT_SCHEMA: dict[str, dict[str, Any]] = {
    "outcome": {
        "question": "Did the guarded trajectory succeed?",
        "rubric": "Judge the end state of the guarded trajectory against the user's request: "
        "success when the task is done as asked, failure when it is not or something was "
        "broken on the way. Can't tell only when the trace does not show enough.",
        "labels": [
            {"value": "success", "text": "Succeeded", "keys": ["1", "y"]},
            {"value": "failure", "text": "Failed", "keys": ["2", "n"]},
            {"value": "unclear", "text": "Can't tell", "keys": ["3", "x"]},
        ],
        "fatal": False,
    },
    "pair": {
        "question": "Which call is better at this point of the conversation?",
        "rubric": "Read the conversation so far, then compare A and B as the agent's next "
        "action. Prefer the one that serves the user's latest request; flag fatal (f) when "
        "the call you did not choose would make the task fail.",
        "labels": [
            {"value": "A", "text": "A is better", "keys": ["1", "a"]},
            {"value": "B", "text": "B is better", "keys": ["2", "b"]},
            {"value": "tie", "text": "No difference", "keys": ["3", "t"]},
        ],
        "fatal": True,
    },
    "feedback": {
        "question": "Was the user's feedback right?",
        "rubric": "Valid when the feedback points at a real error in the answer before it; "
        "mistaken when the answer was right and the feedback pushes it to a wrong one.",
        "labels": [
            {"value": "valid", "text": "Feedback right", "keys": ["1", "y"]},
            {"value": "mistaken", "text": "Feedback mistaken", "keys": ["2", "n"]},
            {"value": "unclear", "text": "Can't tell", "keys": ["3", "x"]},
        ],
        "fatal": False,
    },
    "commit": {
        "question": "Is the committed candidate valid?",
        "rubric": "Valid when the candidate VRR commits solves the task (would pass a full, "
        "correct test suite), whatever the verifier's votes said.",
        "labels": [
            {"value": "valid", "text": "Valid", "keys": ["1", "y"]},
            {"value": "invalid", "text": "Invalid", "keys": ["2", "n"]},
            {"value": "unclear", "text": "Can't tell", "keys": ["3", "x"]},
        ],
        "fatal": False,
    },
}

# Keys the annotation page uses itself (fatal, skip, undo, comment, help, submit).
RESERVED_KEYS = {"f", "s", "u", "c", "?", "enter"}


def schema_for(queue: AnnotationQueue, kind: str) -> dict[str, Any]:
    """The queue's schema for `kind`: its overrides (question, rubric, labels) over the
    defaults. Pair labels keep the values A and B: they are de-blinded to actor / twin."""
    base = dict(DEFAULT_SCHEMA[kind])
    over = (queue.schema or {}).get(kind) or {}
    for key in ("question", "rubric", "labels"):
        if over.get(key):
            base[key] = over[key]
    return base


def schema_validate(schema: Any) -> dict[str, Any]:
    """Check a queue schema given as JSON by an owner; return it, or raise AnnotationRejected."""
    if not isinstance(schema, dict):
        raise AnnotationRejected("the schema must be a JSON object keyed by item kind")
    for kind, over in schema.items():
        if kind not in KINDS:
            raise AnnotationRejected(f"unknown item kind {kind!r}; kinds: {', '.join(KINDS)}")
        if not isinstance(over, dict):
            raise AnnotationRejected(f"{kind}: expected an object")
        for key in ("question", "rubric"):
            if key in over and not isinstance(over[key], str):
                raise AnnotationRejected(f"{kind}.{key}: expected text")
        labels = over.get("labels")
        if labels is None:
            continue
        if not isinstance(labels, list) or not labels:
            raise AnnotationRejected(f"{kind}.labels: expected a non-empty list")
        seen_values: set[str] = set()
        seen_keys: set[str] = set()
        for lab in labels:
            if not isinstance(lab, dict) or not isinstance(lab.get("value"), str):
                raise AnnotationRejected(f"{kind}.labels: each label needs a text 'value'")
            value = lab["value"].strip()
            if not value or len(value) > 40 or value in seen_values:
                raise AnnotationRejected(f"{kind}.labels: bad or repeated value {value!r}")
            seen_values.add(value)
            keys = lab.get("keys", [])
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise AnnotationRejected(f"{kind}.labels: 'keys' must be a list of keys")
            for k in keys:
                k = k.lower()
                if len(k) != 1 or k in RESERVED_KEYS or k in seen_keys:
                    raise AnnotationRejected(f"{kind}.labels: key {k!r} is reserved or repeated")
                seen_keys.add(k)
        if kind == "pair" and not {"A", "B"} <= seen_values:
            raise AnnotationRejected("pair.labels: must keep the values A and B")
    return schema


def adjudication_labels(item: AnnotationItem) -> list[tuple[str, str]]:
    """(value, text) of the canonical labels an adjudicator chooses from."""
    schema = schema_for(item.queue, item.kind)
    out = []
    for lab in schema["labels"]:
        value = lab["value"]
        if item.kind == "pair" and value in ("A", "B"):
            continue
        out.append((value, lab.get("text") or value))
    if item.kind == "pair":
        out = [("actor", "the actor's call"), ("twin", "the twin"), *out]
    return out
