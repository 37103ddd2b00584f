"""`python manage.py demo`: a demo project, a demo login and demo traces made by our own code,
already audited.

Traces come from the `bfcl-eval` package's multi-turn tasks (result files built from its ground
truth, some with the faults real models make) and the bundled v1 examples. Idempotent: running
it again changes nothing (identical uploads are no-ops; the audit runs only once).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from auditor.limits import apply_memory_limit
from auditor.runs.models import AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from policies.vrr.rule import VrrParams
from policies.vrr.sim import loop_events, simulate_loops
from traces.models import Membership, Project, Upload
from traces.services import upload_create, upload_process

EXAMPLES = Path(__file__).resolve().parents[3] / "traces" / "schema" / "examples"


def _simulated_repair_loops(folder: Path, n: int = 120) -> Path:
    """Noisy verify-repair loops with known parameters in a stress setting (β > 0), from the
    policies library's simulator: VRR has something to calibrate and stop."""
    params = VrrParams(rho0=0.25, rho1=0.15, alpha=0.35, beta=0.2, prior=0.45)
    path = folder / "simulated_repair_loops.jsonl"
    with path.open("wb") as fh:
        for i, loop in enumerate(simulate_loops(params, n, n_rounds=5, votes=5, seed=7)):
            events = loop_events(loop, f"vrr-sim-{i:03d}", label_all=True)
            events[0].update(
                agent="vrr-simulator",
                model="sim-coder",
                task={"id": f"loop-{i:03d}", "benchmark": "vrr-sim", "category": "stress"},
            )
            fh.write(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


class Command(BaseCommand):
    help = "Create the demo project (login demo/demo) with demo traces."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument(
            "--per-category",
            type=int,
            default=10,
            help="BFCL tasks per multi-turn category (default 10)",
        )
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        apply_memory_limit()  # an inline audit runs here: keep a runaway trace from the machine
        User = get_user_model()
        user = User.objects.filter(username=opts["username"]).first()
        if user is None:
            user = User.objects.create_user(
                opts["username"], password=opts["password"], is_staff=True, is_superuser=True
            )
        project, _ = Project.objects.get_or_create(name="demo")
        Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": Membership.Role.OWNER}
        )
        files = sorted(EXAMPLES.glob("*.jsonl"))
        with tempfile.TemporaryDirectory() as tmp:
            try:
                from traces.samples.bfcl import write_samples

                files += write_samples(Path(tmp), per_category=opts["per_category"], seed=0)
            except ImportError as exc:  # bfcl-eval not installed: v1 examples only
                self.stderr.write(f"skipping BFCL demo traces: {exc}")
            files.append(_simulated_repair_loops(Path(tmp)))
            for path in files:
                with path.open("rb") as fh:
                    upload, created = upload_create(
                        project=project,
                        fileobj=fh,
                        filename=path.name,
                        source=Upload.Source.CLI,
                        enqueue=False,
                    )
                if created or upload.status == Upload.Status.PENDING:
                    upload = upload_process(upload_id=upload.pk) or upload
                self.stdout.write(
                    f"{path.name}: {upload.status}, {upload.traces_accepted} traces, "
                    f"{upload.error_count} errors"
                )
        if not AuditRun.objects.filter(project=project).exists():
            run = audit_run_create(
                project=project, label="demo: all policies, defaults", user=user, enqueue=False
            )
            run = audit_run_start(run_id=run.pk, inline=True) or run
            self.stdout.write(
                f"audit run #{run.pk}: {run.status}, {run.traces_total} traces, "
                f"{run.error_count} errors"
            )
        self.stdout.write(self.style.SUCCESS(f"demo project ready: log in as {opts['username']}"))
