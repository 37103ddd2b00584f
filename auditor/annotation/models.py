"""Human annotation: queues, items, verdicts (SPEC §5.5 and §6 "Annotation").

A queue belongs to one audit run and holds items that need a human verdict. An item is one
question about one audit result (the guarded outcome, one TwinCheck actor-vs-twin pair, one
feedback event, one VRR commit). Annotators claim items with a lease, give verdicts; when k
verdicts agree (or an owner adjudicates) the item has its final label, and an outcome item's
label flows back into the result's transition (`ResultOverride` keeps the machine values).
"""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.urls import reverse

__all__ = ["AnnotationItem", "AnnotationQueue", "ResultOverride", "Verdict"]


class AnnotationQueue(models.Model):
    """Items of one audit run that need a verdict, with the queue's settings: how many
    annotators per item (k), the claim lease, and the verdict schema per item kind."""

    class Source(models.TextChoices):
        NEEDS = "needs", "results that need a verdict"
        FILTER = "filter", "results matching a filter"

    run = models.ForeignKey("auditor.AuditRun", on_delete=models.CASCADE, related_name="queues")
    name = models.CharField(max_length=200)
    kinds = models.JSONField(help_text="item kinds: outcome, pair, feedback, commit")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.NEEDS)
    result_filter = models.JSONField(
        default=dict, blank=True, help_text="policy / transition / category, for source=filter"
    )
    k = models.PositiveSmallIntegerField(default=2, help_text="annotators per item")
    lease_seconds = models.PositiveIntegerField(default=600)
    schema = models.JSONField(
        default=dict, blank=True, help_text="per kind: question, rubric, labels (overrides)"
    )
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"queue #{self.pk} {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("annotate:queue", args=[self.pk])


class AnnotationItem(models.Model):
    """One question about one audit result. `ref` tells apart several questions of one kind
    on one result (the TwinCheck decision, the feedback event). The claim fields implement
    assignment: one holder at a time, until `lease_until`."""

    class Kind(models.TextChoices):
        OUTCOME = "outcome", "guarded outcome"
        PAIR = "pair", "actor vs twin"
        FEEDBACK = "feedback", "feedback validity"
        COMMIT = "commit", "VRR commit"

    class Status(models.TextChoices):
        OPEN = "open"  # fewer than k verdicts
        DISAGREE = "disagree"  # k verdicts that differ: waits for adjudication
        DONE = "done"  # final label (agreement or adjudication)

    queue = models.ForeignKey(AnnotationQueue, on_delete=models.CASCADE, related_name="items")
    result = models.ForeignKey(
        "auditor.AuditResult", on_delete=models.CASCADE, related_name="annotation_items"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    ref = models.IntegerField(default=0)
    payload = models.JSONField(default=dict, blank=True, help_text="what the item asks about")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    verdicts_count = models.PositiveSmallIntegerField(default=0, help_text="non-skip verdicts")
    final_label = models.CharField(max_length=40, blank=True)
    final_source = models.CharField(max_length=12, blank=True, help_text="agreement/adjudication")
    claimed_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    lease_until = models.DateTimeField(null=True, blank=True)
    claim_order = models.JSONField(
        default=list, blank=True, help_text="for pairs: the order shown to the claim's holder"
    )

    class Meta:
        ordering = ["id"]
        # As what deleting an upload takes with it names them (traces.upload_manage).
        verbose_name = "annotation question"
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "result", "kind", "ref"], name="annotation_item_unique"
            )
        ]
        indexes = [models.Index(fields=["queue", "status"], name="annotation_item_status")]

    def __str__(self) -> str:
        return f"{self.kind} item #{self.pk}"


class Verdict(models.Model):
    """One annotator's answer on one item (or a skip). For pairs, `label` is already
    de-blinded (actor / twin / tie) and `display_order` logs what was shown as A and B."""

    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="verdicts")
    annotator = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    label = models.CharField(max_length=40, blank=True)
    shown_label = models.CharField(max_length=40, blank=True, help_text="as chosen: A / B / …")
    fatal = models.BooleanField(null=True)
    comment = models.TextField(blank=True)
    display_order = models.JSONField(default=list, blank=True)
    skipped = models.BooleanField(default=False)
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        # An annotator's verdict is what the app calls an annotation (the confirmation of an
        # upload's deletion counts them under this name).
        verbose_name = "annotation (verdict)"
        verbose_name_plural = "annotations (verdicts)"
        constraints = [
            # An annotator never answers (or skips) the same item twice.
            models.UniqueConstraint(fields=["item", "annotator"], name="verdict_unique")
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on item {self.item_id}: {self.label or 'skip'}"


class ResultOverride(models.Model):
    """A human verdict that changed an audit result: the machine values it replaced, so
    nothing is lost, and where the transition now comes from."""

    result = models.OneToOneField(
        "auditor.AuditResult", on_delete=models.CASCADE, related_name="override"
    )
    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="overrides")
    machine_actor_success = models.BooleanField(null=True)
    machine_guarded_success = models.BooleanField(null=True)
    machine_transition = models.CharField(max_length=16)
    human_guarded_success = models.BooleanField()
    human_actor_success = models.BooleanField(
        null=True, help_text="set only when guarded = actor (exact) and was unknown"
    )
    source = models.CharField(max_length=12, help_text="agreement / adjudication")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"override of result {self.result_id} ({self.source})"
