"""Merging the folds of a run's parts (issue 17: run summaries computed incrementally): a fold
over a run's results in order, merged with the fold of the results that follow, must be what one
fold over both gives — or say it cannot be (`NotMergeable`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any


class NotMergeable(ValueError):
    """Two folds cannot be merged into exactly what one fold over both parts would give."""


def merge_counts(into: dict[Any, Any], other: Mapping[Any, Any]) -> None:
    """``other``'s counts added to ``into``'s, new keys after the old in ``other``'s order:
    merging the folds of a run's parts in the run's order keeps each key where its first
    occurrence puts it, as one fold over the whole run has them (the bootstrap draws over
    counts in that order)."""
    for key, n in other.items():
        into[key] = into.get(key, 0) + n


def merge_nested(into: dict[Any, Any], other: Mapping[Any, Mapping[Any, Any]]) -> None:
    """`merge_counts` per key of dicts of counts (per category, per certificate, …)."""
    for key, counts in other.items():
        merge_counts(into.setdefault(key, Counter()), counts)
