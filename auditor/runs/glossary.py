"""Plain-language definitions of the statistics' terms, one sentence each: the hover and focus
text of every term on the run page (`{% term %}` in auditor/templatetags/terms.py) and the
page's "What the numbers mean" list, so a term reads the same wherever it appears."""

from __future__ import annotations

#: key → (label shown, definition)
TERMS: dict[str, tuple[str, str]] = {
    "delta": (
        "Δ",
        "How much more often the guarded run succeeds than the actor, over the traces where "
        "the difference is known (both outcomes known, or the guarded run replays the actor "
        "exactly): +0.10 means 10 more successes in 100 tasks, −0.10 ten fewer.",
    ),
    "interval": (
        "95 % interval",
        "The range the true Δ lies in with 95 % confidence (a bootstrap over traces, within "
        "each category); when it does not contain 0, the difference is unlikely to be chance.",
    ),
    "bounds": (
        "bounds",
        "The lowest and the highest Δ once every unknown outcome is settled: all of them harms "
        "gives the low end, all of them rescues the high end.",
    ),
    "rescue": (
        "rescue",
        "The actor failed and the guarded run succeeded: the guard fixed the task.",
    ),
    "harm": (
        "harm",
        "The actor succeeded and the guarded run failed: the guard broke the task.",
    ),
    "same": ("same", "Both outcomes are known and equal: the guard changed nothing that mattered."),
    "unknown": (
        "unknown",
        "A trace whose actor or guarded outcome is not known yet (nothing could replay it to "
        "the end); an annotator's verdict settles it.",
    ),
    "na": (
        "n/a",
        "Not applicable: the policy had nothing to decide on the trace (no decision point, or "
        "evidence it needs is missing); counted apart, never as “same”.",
    ),
    "applicable": (
        "applicable",
        "Traces where the policy could decide (the rest are not applicable); every count and "
        "rate of the policy is over these.",
    ),
    "applied": (
        "intervened",
        "Applicable traces where the policy found a decision point and acted on it (for "
        "TwinCheck: a certificate held).",
    ),
    "paired": (
        "paired",
        "Over the same traces: only those whose actor and guarded outcomes are both known, so "
        "the two rates compare like with like.",
    ),
    "mcnemar": (
        "McNemar p",
        "The chance of a split of rescues and harms at least this lopsided if the guard made no "
        "difference (exact McNemar test); below 0.05 is usually called significant.",
    ),
    "roc_auc": (
        "ROC-AUC",
        "How well the gate's score ranks the actor's failing calls above its passing ones: 0.5 "
        "is a coin toss, 1 ranks every failure first.",
    ),
    "ap": (
        "average precision",
        "How pure the calls the gate flags are, averaged over every threshold; compare it with "
        "the failure prevalence, what flagging at random would score.",
    ),
    "known_of": (
        "k of known (all)",
        "A rate's count: k of the cases whose label is known, with all the cases in brackets, "
        "so an unknown never shrinks a denominator unseen.",
    ),
    "theta": (
        "θ rule",
        "The checklist's rule: keep an answer under pushback unless the confidence in the "
        "claims the feedback targets falls below the threshold θ.",
    ),
    "margin": (
        "margin δ",
        "How many more accept than reject votes VRR-Guard needs before it ships a repaired "
        "candidate instead of the previous one.",
    ),
    "holm": (
        "Holm",
        "With many categories tested at once, Holm's correction raises each p-value so that a "
        "small one is not just the luck of testing many.",
    ),
}


def term(key: str) -> tuple[str, str]:
    """(label, definition) of a term; KeyError for a term not defined here."""
    return TERMS[key]
