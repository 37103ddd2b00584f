"""An uploaded JSONL export's decisions and human verdicts, re-created in the target project,
when the upload asks for it (`Upload.with_annotations`).

traces stores the traces and events (its `ta_export` importer) and sends `upload_done`; this
receiver reads the same file again and re-creates, per source audit run, an audit run marked
as imported (`settings.imported`), its results, its annotation queues, items and verdicts, and
the human overrides of outcomes. Annotators are pseudonymous in exports (user ids of the other
instance), so each becomes an inactive account of its own, `imported-<upload>-<id>`, that cannot
log in: verdicts stay attributed to distinct people, so agreement statistics hold.

Bad decisions are reported on the upload (`report.annotations_import.errors`, line and path),
never raised: the traces are already stored and stay.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

import orjson
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from auditor.annotation.models import AnnotationItem, AnnotationQueue, ResultOverride, Verdict
from auditor.runs.models import AuditItem, AuditResult, AuditRun
from auditor.runs.summary import audit_run_summary
from traces.models import Trace, Upload
from traces.reader import Limits, open_payload

log = logging.getLogger(__name__)

TRANSITIONS = frozenset(AuditResult.Transition.values)
ITEM_KINDS = frozenset(AnnotationItem.Kind.values)
ITEM_STATUSES = frozenset(AnnotationItem.Status.values)
MAX_ERRORS = 50


class BadDecision(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def reimport_on_upload_done(sender: Any, upload: Upload, **kwargs: Any) -> None:
    """`traces.signals.upload_done` receiver (connected in auditor/apps.py)."""
    if upload.format_detected != "ta_export" or not upload.with_annotations:
        return
    if not upload.traces_accepted:
        return
    counts = reimport(upload)
    report = dict(upload.report or {})
    report["annotations_import"] = counts
    Upload.objects.filter(pk=upload.pk).update(report=report)


def reimport(upload: Upload) -> dict:
    traces = dict(Trace.objects.filter(upload=upload).values_list("external_id", "pk"))
    state = _State(upload)
    with upload.file.open("rb") as raw, transaction.atomic():
        stream, _gz = open_payload(raw, Limits.from_settings())
        for line, blob in enumerate(stream, 1):
            if not blob.strip():
                continue
            try:
                rec = orjson.loads(blob)
            except orjson.JSONDecodeError:
                continue  # the importer already reported it against the traces
            tid = rec.get("trace", {}).get("trace_id") if isinstance(rec, dict) else None
            if tid not in traces:
                continue  # a rejected trace: nothing to hang decisions on
            state.line(line, traces[tid], rec)
        state.finish()
    return state.counts()


def _bool_or_none(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise BadDecision(path, f"expected true, false or null, found {value!r}")


class _State:
    def __init__(self, upload: Upload) -> None:
        self.upload = upload
        self.runs: dict[Any, AuditRun] = {}
        self.policies: dict[int, list[str]] = defaultdict(list)
        self.queues: dict[tuple[int, Any], AnnotationQueue] = {}
        self.annotators: dict[Any, Any] = {}
        self.errors: list[dict] = []
        self.n = {"runs": 0, "decisions": 0, "items": 0, "verdicts": 0, "overrides": 0}
        self.settled: dict[int, AnnotationItem] = {}

    def error(self, line: int, path: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append({"line": line, "path": path, "message": message})

    def run_for(self, source_run: Any) -> AuditRun:
        run = self.runs.get(source_run)
        if run is None:
            run = self.runs[source_run] = AuditRun.objects.create(
                project=self.upload.project,
                label=f"imported: run #{source_run} of {self.upload.filename}"[:200],
                policies=[],
                settings={"imported": {"upload": self.upload.pk, "source_run": source_run}},
                status=AuditRun.Status.DONE,
                created_by=self.upload.created_by,
                started_at=timezone.now(),
                finished_at=timezone.now(),
            )
            self.n["runs"] += 1
        return run

    def line(self, line: int, trace_pk: int, rec: dict) -> None:
        results: dict[tuple[Any, str], AuditResult] = {}
        overrides: list[tuple[AuditResult, Any, str]] = []
        # The item that settled each result (else its first item), for its override.
        self.settled: dict[int, AnnotationItem] = {}
        decisions = rec.get("decisions") or []
        for i, d in enumerate(decisions if isinstance(decisions, list) else []):
            path = f"$.decisions[{i}]"
            try:
                result = self.decision(trace_pk, d, path)
            except BadDecision as exc:
                self.error(line, exc.path, str(exc))
                continue
            results[(d["run"], d["policy"])] = result
            if d.get("override") is not None:
                overrides.append((result, d["override"], path))
        annotations = rec.get("annotations") or []
        for i, a in enumerate(annotations if isinstance(annotations, list) else []):
            path = f"$.annotations[{i}]"
            try:
                self.annotation(results, a, path)
            except BadDecision as exc:
                self.error(line, exc.path, str(exc))
        for result, override, path in overrides:
            try:
                self.override(result, override, path)
            except BadDecision as exc:
                self.error(line, exc.path, str(exc))

    def decision(self, trace_pk: int, d: Any, path: str) -> AuditResult:
        if not isinstance(d, dict):
            raise BadDecision(path, "expected a decision object")
        policy, transition = d.get("policy"), d.get("transition")
        if not isinstance(policy, str) or not policy or len(policy) > 20:
            raise BadDecision(f"{path}.policy", f"expected a policy name, found {policy!r}")
        if transition not in TRANSITIONS:
            raise BadDecision(
                f"{path}.transition", f"expected one of {sorted(TRANSITIONS)}, found {transition!r}"
            )
        if not isinstance(d.get("applied"), bool):
            raise BadDecision(f"{path}.applied", "expected true or false")
        if not isinstance(d.get("record"), dict):
            raise BadDecision(f"{path}.record", "expected the decision record object")
        if not isinstance(d.get("continuation"), str):
            raise BadDecision(f"{path}.continuation", "expected a string")
        if d.get("run") is None or isinstance(d.get("run"), dict | list):
            raise BadDecision(f"{path}.run", "expected the source run id")
        run = self.run_for(d["run"])
        if policy not in self.policies[run.pk]:
            self.policies[run.pk].append(policy)
        item, _ = AuditItem.objects.get_or_create(
            run=run, trace_id=trace_pk, defaults={"status": "done"}
        )
        result, created = AuditResult.objects.get_or_create(
            run=run,
            trace_id=trace_pk,
            policy=policy,
            defaults={
                "applied": d["applied"],
                "actor_success": _bool_or_none(d.get("actor_success"), f"{path}.actor_success"),
                "guarded_success": _bool_or_none(
                    d.get("guarded_success"), f"{path}.guarded_success"
                ),
                "transition": transition,
                "continuation": d["continuation"][:12],
                "record": d["record"],
            },
        )
        if not created:
            raise BadDecision(path, f"a second decision of policy {policy!r} in run {d['run']}")
        self.n["decisions"] += 1
        return result

    def annotation(self, results: dict, a: Any, path: str) -> None:
        if not isinstance(a, dict):
            raise BadDecision(path, "expected an annotation item object")
        result = results.get((a.get("run"), a.get("policy")))
        if result is None:
            raise BadDecision(
                f"{path}.run", "expected the run and policy of a decision on this line"
            )
        kind, status = a.get("kind"), a.get("status")
        if kind not in ITEM_KINDS:
            raise BadDecision(
                f"{path}.kind", f"expected one of {sorted(ITEM_KINDS)}, found {kind!r}"
            )
        if status not in ITEM_STATUSES:
            raise BadDecision(
                f"{path}.status", f"expected one of {sorted(ITEM_STATUSES)}, found {status!r}"
            )
        verdicts = a.get("verdicts") or []
        if not isinstance(verdicts, list):
            raise BadDecision(f"{path}.verdicts", "expected an array of verdicts")
        queue = self.queue_for(result.run, a.get("queue"), kind)
        item = AnnotationItem.objects.create(
            queue=queue,
            result=result,
            kind=kind,
            ref=a.get("ref") if isinstance(a.get("ref"), int) else 0,
            status=status,
            final_label=(a.get("final_label") or "")[:40],
            final_source=(a.get("final_source") or "")[:12],
            verdicts_count=sum(1 for v in verdicts if isinstance(v, dict) and not v.get("skipped")),
        )
        self.n["items"] += 1
        held = self.settled.get(result.pk)
        if held is None or (item.final_label and not held.final_label):
            self.settled[result.pk] = item
        for j, v in enumerate(verdicts):
            vpath = f"{path}.verdicts[{j}]"
            if not isinstance(v, dict) or v.get("annotator") is None:
                raise BadDecision(vpath, "expected a verdict object with its annotator")
            Verdict.objects.create(
                item=item,
                annotator=self.annotator(v["annotator"]),
                label=str(v.get("label") or "")[:40],
                fatal=_bool_or_none(v.get("fatal"), f"{vpath}.fatal"),
                skipped=bool(v.get("skipped")),
                comment=str(v.get("comment") or ""),
                display_order=v.get("display_order")
                if isinstance(v.get("display_order"), list)
                else [],
                seconds=v.get("seconds") if isinstance(v.get("seconds"), int | float) else None,
            )
            self.n["verdicts"] += 1
        queue.k = max(queue.k, item.verdicts_count)

    def override(self, result: AuditResult, o: Any, path: str) -> None:
        item = self.settled.get(result.pk)
        if not isinstance(o, dict) or item is None:
            raise BadDecision(f"{path}.override", "expected an override with an annotation item")
        human = o.get("human_guarded_success")
        if not isinstance(human, bool):
            raise BadDecision(f"{path}.override.human_guarded_success", "expected true or false")
        ResultOverride.objects.create(
            result=result,
            item=item,
            machine_actor_success=result.actor_success,
            machine_guarded_success=_bool_or_none(
                o.get("machine_guarded_success"), f"{path}.override.machine_guarded_success"
            ),
            machine_transition=str(o.get("machine_transition") or "")[:16],
            human_guarded_success=human,
            source=str(o.get("source") or "")[:12],
        )
        self.n["overrides"] += 1

    def queue_for(self, run: AuditRun, source_queue: Any, kind: str) -> AnnotationQueue:
        key = (run.pk, source_queue)
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = AnnotationQueue.objects.create(
                run=run,
                name=f"imported: queue #{source_queue}"[:200],
                kinds=[],
                k=1,
                created_by=self.upload.created_by,
            )
        if kind not in queue.kinds:
            queue.kinds.append(kind)
        return queue

    def annotator(self, source_id: Any) -> Any:
        user = self.annotators.get(source_id)
        if user is None:
            User = get_user_model()
            name = f"imported-{self.upload.pk}-{source_id}"[:150]
            user, created = User.objects.get_or_create(username=name, defaults={"is_active": False})
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            self.annotators[source_id] = user
        return user

    def finish(self) -> None:
        for queue in self.queues.values():
            queue.save(update_fields=["kinds", "k"])
        for run in self.runs.values():
            run.policies = self.policies[run.pk]
            n = AuditItem.objects.filter(run=run).count()
            run.traces_total = run.traces_done = n
            run.save(update_fields=["policies", "traces_total", "traces_done"])
            run.summary = audit_run_summary(run)
            run.save(update_fields=["summary"])

    def counts(self) -> dict:
        return {**self.n, "errors": self.errors}
