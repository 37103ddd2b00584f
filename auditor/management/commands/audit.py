"""`python manage.py audit --project NAME [--policies twincheck,checklist,vrr,commit]
[--set KEY=VALUE ...] [--model-endpoint NAME [--model NAME] [--max-calls N] [--max-tokens N]
[--uses judge,twin,live,claims,recheck]] [--execute-code on|off] [--inline] [--json]
[--progress]`

Keys for --set: `POLICY.SETTING=VALUE` (e.g. `twincheck.min_confidence=0.8`,
`checklist.schedule=on_demand`), `judge=heuristic|llm|human|recorded` (`openai` = `llm`),
`environment=auto|none|bfcl`, `label=TEXT`, filters `model=`, `benchmark=`, `category=`,
`agent=`, `upload=ID`, and `model.FIELD=VALUE` for any other model endpoint field
(`model.timeout=20`, `model.offline=true`; docs/models.md). The model endpoint (URL and key) is
one of the project's (`manage.py model_endpoint`); a URL or a key source is never an option here.
Without --inline the run is queued for Celery workers and followed.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
import time

import orjson
from django.core.management.base import BaseCommand, CommandError
from django.db import connections, transaction

from auditor.limits import prepare_audit_process
from auditor.llm.settings import model_settings_from
from auditor.runs import lanes
from auditor.runs.models import AuditRun
from auditor.runs.services import (
    AuditRejected,
    audit_run_create,
    audit_run_start,
    parse_set_options,
)
from auditor.runs.stats_display import delta_text, did_text, model_text
from auditor.runs.summary import audit_run_counts
from policies import POLICIES
from traces.models import ExecutionRefused, Project


class Command(BaseCommand):
    help = "Audit a project's traces with the guard policies."
    # No system checks at start (as `migrate`): they load every template tag library and URL
    # module, a tenth of a 200-trace inline audit, and check nothing an audit depends on.
    requires_system_checks: list[str] = []
    # Set once an inline run is done and reported: from the command line (not call_command),
    # the process then ends without the interpreter's teardown (`_end_process`).
    _inline_done = False

    def run_from_argv(self, argv: list[str]) -> None:
        super().run_from_argv(argv)
        if self._inline_done:
            _end_process()

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--project", required=True)
        parser.add_argument("--policies", default=",".join(POLICIES))
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        model = parser.add_argument_group("model (docs/models.md)")
        model.add_argument(
            "--model-endpoint", default="", help="one of the project's model endpoints (name)"
        )
        model.add_argument("--model", default="", help="another model than the endpoint's default")
        # The old design's options, refused with what to use instead.
        model.add_argument("--model-base-url", default=None, help=argparse.SUPPRESS)
        model.add_argument("--api-key-env", default=None, help=argparse.SUPPRESS)
        model.add_argument("--max-calls", default="", help="budget: model calls")
        model.add_argument("--max-tokens", default="", help="budget: tokens")
        model.add_argument("--uses", default="", help="comma list: judge,twin,live,claims,recheck")
        parser.add_argument(
            "--execute-code",
            choices=("on", "off"),
            default=None,
            help="switch the project's sandboxed execution of code candidates on or off first "
            "(as the project page does; refused where the project may not execute code)",
        )
        parser.add_argument("--inline", action="store_true", help="audit here, not in workers")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--progress",
            action="store_true",
            help="a progress bar on stderr (the default when stderr is a terminal)",
        )
        parser.add_argument("--timeout", type=float, default=3600.0)

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        # an inline audit runs here: as a worker process, with a ceiling against a runaway trace
        prepare_audit_process()
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        if opts["execute_code"] is not None:
            _switch_execution(project, opts["execute_code"] == "on")
        try:
            per_policy, options = parse_set_options(opts["set"])
            judge = str(options.get("judge", "heuristic"))
            try:
                fields = {
                    "endpoint": opts["model_endpoint"],
                    "model": opts["model"],
                    "max_calls": opts["max_calls"],
                    "max_tokens": opts["max_tokens"],
                    "uses": opts["uses"],
                }
                if opts["model_base_url"] is not None:
                    fields["base_url"] = opts["model_base_url"]
                if opts["api_key_env"] is not None:
                    fields["api_key_env"] = opts["api_key_env"]
                model_settings = model_settings_from(
                    fields,
                    {k[6:]: v for k, v in options.items() if k.startswith("model.")},
                    judge=judge,
                    project=project,
                )
            except ValueError as exc:
                raise AuditRejected(f"model settings: {exc}") from exc
            with transaction.atomic():
                run = audit_run_create(
                    project=project,
                    policies=[p.strip() for p in opts["policies"].split(",") if p.strip()],
                    settings=per_policy,
                    judge=judge,
                    model_settings=model_settings,
                    environment=str(options.get("environment", "auto")),
                    label=str(options.get("label", "")),
                    trace_filter={k[7:]: v for k, v in options.items() if k.startswith("filter.")},
                    enqueue=not opts["inline"],
                )
        except AuditRejected as exc:
            raise CommandError(str(exc)) from exc
        # A bar on stderr (stdout stays the report): asked for, or a terminal not taking JSON.
        show = opts["progress"] or (sys.stderr.isatty() and not opts["json"])
        if opts["inline"]:
            if not show:  # no bar, and no tqdm (its import and its multiprocessing lock)
                audit_run_start(run_id=run.pk, inline=True)
            else:
                self._inline_with_bar(run)
        else:
            self._follow(run, opts["timeout"], quiet=not show)
        run.refresh_from_db()
        counts = audit_run_counts(run)
        if opts["json"]:
            self.stdout.write(orjson.dumps(counts).decode())
        else:
            self._print(run, counts)
        if run.status != AuditRun.Status.DONE:
            sys.exit(1)
        self._inline_done = bool(opts["inline"])

    def _inline_with_bar(self, run: AuditRun) -> None:
        from tqdm import tqdm

        bar = tqdm(desc=f"run #{run.pk}", unit="trace", file=sys.stderr)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            audit_run_start(run_id=run.pk, inline=True, progress=progress)
        finally:
            bar.close()

    def _follow(self, run: AuditRun, timeout: float, *, quiet: bool) -> None:
        from tqdm import tqdm

        deadline = time.monotonic() + timeout
        bar = tqdm(total=1, desc=f"run #{run.pk}", unit="trace", disable=quiet, file=sys.stderr)
        try:
            while True:
                run.refresh_from_db()
                bar.total = max(run.traces_total, 1)
                bar.n = run.traces_done
                bar.refresh()
                if run.is_finished:
                    return
                if time.monotonic() > deadline:
                    raise CommandError(f"run #{run.pk} still {run.status} after {timeout:.0f}s")
                time.sleep(0.3)
        finally:
            bar.close()

    def _print(self, run: AuditRun, counts: dict) -> None:
        self.stdout.write(
            f"run #{run.pk}: {run.status}, {counts['traces']} traces, {counts['errors']} errors"
        )
        for policy, c in counts["policies"].items():
            stats = c.get("statistics")
            self.stdout.write(
                f"  {policy:<10} applied {c['applied']:>5}  {success_line(c, stats)}  "
                f"rescue {c['rescue']:>4}  harm {c['harm']:>4}  unknown {c['unknown']:>5}  "
                f"not applicable {c['not_applicable']:>5}"
            )
            if stats:
                self.stdout.write(f"             {delta_text(stats)}")
                if stats.get("paired"):  # the first line's rates are paired: say each own set
                    self.stdout.write(
                        f"             each over its own known outcomes: actor ok "
                        f"{c['actor_success']} of {c['actor_known']} known, guarded ok "
                        f"{c['guarded_success']} of {c['guarded_known']} known"
                    )
                for reason, n in stats["not_applicable_reasons"].items():
                    self.stdout.write(f"             not applicable ({reason}): {n}")
            per_model = c.get("per_model") or {}
            for model, m in per_model.items() if len(per_model) > 1 else ():
                self.stdout.write(f"    model {model}: {model_text(m)}")
            for d in c.get("model_differences") or []:
                self.stdout.write(f"    {did_text(d)}")
        for f in (counts.get("data_quality") or {}).get("flags", []):
            made = ", ".join(
                f"{p['policy']} {p['unknown']} unknown / {p['not_applicable']} n/a"
                for p in f["policies"]
            )
            self.stdout.write(f"  flagged: {f['label']}: {f['traces']} traces ({made})")


def success_line(c: dict, stats: dict | None) -> str:
    """The actor's and the guarded success as the run page sets them side by side: over one
    set, the traces whose two outcomes are both known (`policies.stats.report.paired_rates`).
    A summary without the paired counts gives each over its own known outcomes, said so."""
    paired = (stats or {}).get("paired")
    if paired:
        n = paired["n"]
        return (
            f"actor ok {paired['actor_k']} of {n}, guarded ok {paired['guarded_k']} of {n} "
            f"(paired: the same {n} traces, both outcomes known)"
        )
    return (
        f"actor ok {c['actor_success']} of {c['actor_known']} known  "
        f"guarded ok {c['guarded_success']} of {c['guarded_known']} known (each over its own)"
    )


def _switch_execution(project: Project, on: bool) -> None:
    """The project's code-execution switch, through `Project.save`'s own refusal rule."""
    if project.execute_code_candidates == on:
        return
    project.execute_code_candidates = on
    try:
        project.save(update_fields=["execute_code_candidates"])
    except ExecutionRefused as exc:
        raise CommandError(f"code execution refused: {exc}") from exc


def _end_process() -> None:
    """End the process of a finished inline run from the command line at once. Its work is
    committed and its report printed; what would follow is the interpreter's teardown, every
    module and object freed one by one, a noticeable share of a short audit's CPU time, which
    nothing needs. The database
    connections are closed and the exit handlers run first (logging, coverage); a thread still
    running (none should be) gets the normal exit, which waits for it."""
    lanes.shutdown()
    connections.close_all()  # a clean goodbye to the server, not a dropped socket
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        return
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
