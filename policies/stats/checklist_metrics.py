"""Metrics of the Claim Checklist (SPEC §5.2; Bui 2026, §4 and App. C).

Rates are computed over classified feedback events: the false-reversal rate over events with
*mistaken* feedback on *passing* work, the successful-correction rate over events with *valid*
feedback on *failing* work (the paper's two protocols). Events with an unknown label before
or unknown feedback validity are not counted; events of a protocol whose state after is
unknown (e.g. the guard's revision that is not in the trace) are counted in ``unknown_after``,
never as held or fixed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..trace import Claims, Trace, label_outcome
from .methods import brier_score, reliability_bins


@dataclass(frozen=True, slots=True)
class FeedbackRates:
    false_reversals: int
    mistaken_on_passing: int
    corrections: int
    valid_on_failing: int
    unknown_after: int = 0

    @property
    def false_reversal_rate(self) -> float:
        return (
            self.false_reversals / self.mistaken_on_passing
            if self.mistaken_on_passing
            else math.nan
        )

    @property
    def successful_correction_rate(self) -> float:
        return self.corrections / self.valid_on_failing if self.valid_on_failing else math.nan

    @property
    def balanced_accuracy(self) -> float:
        """(1 − FR + SC) / 2: mean of "held under mistaken feedback" and "fixed under valid"."""
        return (1.0 - self.false_reversal_rate + self.successful_correction_rate) / 2.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            false_reversal_rate=self.false_reversal_rate,
            successful_correction_rate=self.successful_correction_rate,
            balanced_accuracy=self.balanced_accuracy,
        )
        return d


def feedback_rates(events: Iterable[Mapping[str, Any]], which: str = "actor") -> FeedbackRates:
    """Rates from checklist feedback events; ``which`` = "actor", "guarded" or "keep"
    selects the post-feedback state (the recorded one, the rule's, or always-keep)."""
    after_key = {"actor": "after", "guarded": "guarded_after", "keep": "before"}[which]
    fr = mp = sc = vf = unknown = 0
    for e in events:
        before, after, valid = e.get("before"), e.get(after_key), e.get("valid")
        if before is None or valid is None:
            continue
        if after is None:
            unknown += int(bool(before) != bool(valid))  # mistaken-on-passing or valid-on-failing
            continue
        if before and valid is False:
            mp += 1
            fr += 0 if after else 1
        elif not before and valid is True:
            vf += 1
            sc += 1 if after else 0
    return FeedbackRates(fr, mp, sc, vf, unknown)


def expected_error_cost(
    false_reversal_rate: float, correction_rate: float, q: float, cost_ratio: float
) -> float:
    """Expected error cost per feedback event (App. C): a fraction ``q`` of feedback is mistaken
    and a false reversal costs ``cost_ratio`` times a missed fix:
    q·r·FR + (1 − q)·(1 − SC)."""
    if not 0.0 <= q <= 1.0 or cost_ratio < 0:
        raise ValueError("q must be in [0, 1] and cost_ratio ≥ 0")
    return q * cost_ratio * false_reversal_rate + (1.0 - q) * (1.0 - correction_rate)


def dominates(a: FeedbackRates, b: FeedbackRates) -> bool:
    """A dominates B (App. C): no more false reversals and no fewer corrections, one of them
    strictly — then A has lower expected cost for every q ∈ (0, 1) and cost ratio > 0."""
    fa, fb = a.false_reversal_rate, b.false_reversal_rate
    sa, sb = a.successful_correction_rate, b.successful_correction_rate
    if any(math.isnan(x) for x in (fa, fb, sa, sb)):
        return False
    return fa <= fb and sa >= sb and (fa < fb or sa > sb)


def claim_calibration(traces: Sequence[Trace], n_bins: int = 10) -> dict[str, Any]:
    """Brier score and reliability curve of claim confidences against claim labels: a claim
    is labelled by its record's ``labels[claim id]`` (bool) or by ``labels.valid`` of the
    record when it holds a single claim."""
    conf: list[float] = []
    out: list[bool] = []
    for t in traces:
        for e in t.events:
            if not isinstance(e, Claims):
                continue
            for c in e.claims:
                lab = e.labels.get(c.id)
                truth = (
                    lab
                    if isinstance(lab, bool)
                    else (label_outcome(e.labels) if len(e.claims) == 1 else None)
                )
                if c.confidence is None or truth is None:
                    continue
                conf.append(c.confidence)
                out.append(truth)
    return {
        "n": len(conf),
        "brier": brier_score(conf, out),
        "reliability": reliability_bins(conf, out, n_bins),
    }
