"""`python manage.py ingest FILE... --project NAME [--owner USER] [--format F] [--inline]
[--json] [--model M] [--agent A] [--benchmark B] [--label L]`

A project the command creates gets an owner, so that it shows in the browser: --owner, else the
first superuser; with neither, the project is created without members and the command says how
to give it one. --owner also gives a memberless existing project its owner.

Same service as the upload page and the API. Without --inline the files are queued for a Celery
worker and the command follows their progress; with --inline the same task function runs here.
Exit status: 0 when every line was stored, 1 when any line or file had an error (the good
traces are stored all the same).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from traces.models import Membership, Project, Upload
from traces.projects import MembershipRejected, project_create
from traces.run_source import RunSource
from traces.services import FORMATS, UploadRejected, upload_create, upload_process


class Command(BaseCommand):
    help = "Ingest trace files (JSONL, gzip, or a supported foreign format) into a project."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--project", required=True, help="project name (created if missing)")
        parser.add_argument(
            "--owner",
            default="",
            help="username that owns a project this command creates (default: the first superuser)",
        )
        parser.add_argument("--format", default="auto", choices=FORMATS)
        parser.add_argument(
            "--inline", action="store_true", help="process here instead of in a Celery worker"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--model", default="", help="the run's model (else read from the file)")
        parser.add_argument(
            "--agent", default="", help="the run's agent or method (else read from the file)"
        )
        parser.add_argument("--benchmark", default="", help="the run's benchmark")
        parser.add_argument(
            "--with-annotations",
            action="store_true",
            help="a Trace Auditor export: also re-create its decisions and verdicts",
        )
        parser.add_argument(
            "--label", default="", help="tells apart two runs of the same model and agent"
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=3600.0,
            help="seconds to wait for the worker (default 3600)",
        )

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        as_json = opts["json"]
        project = self._project(opts["project"], opts["owner"], quiet=as_json)
        results = []
        for path in opts["files"]:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            try:
                with path.open("rb") as fh, transaction.atomic():
                    upload, fresh = upload_create(
                        project=project,
                        fileobj=fh,
                        filename=path.name,
                        fmt=opts["format"],
                        source=Upload.Source.CLI,
                        enqueue=not opts["inline"],
                        run=RunSource(
                            model=opts["model"],
                            agent=opts["agent"],
                            benchmark=opts["benchmark"],
                            label=opts["label"],
                        ),
                        origin_path=str(path),
                        with_annotations=opts["with_annotations"],
                    )
            except UploadRejected as exc:
                raise CommandError(f"{path}: {exc}") from exc
            if fresh:
                if opts["inline"]:
                    upload_process(upload_id=upload.pk)
                    upload.refresh_from_db()
                else:
                    upload = self._follow(upload, opts["timeout"], quiet=as_json)
            results.append((path, upload, fresh))
        summary = _summary(results)
        if as_json:
            self.stdout.write(orjson.dumps(summary).decode())
        else:
            self._print(results, summary)
        if summary["errors"] or summary["traces_rejected"]:
            sys.exit(1)

    def _project(self, name: str, owner_name: str, *, quiet: bool) -> Project:
        """The project named, created with its owner when missing (`traces.projects`)."""
        owner = _owner(owner_name)
        project = Project.objects.filter(name=name).first()
        if project is None:
            try:
                project = project_create(name=name, user=owner)
            except MembershipRejected as exc:
                raise CommandError(str(exc)) from exc
            if not quiet:
                who = f"owner {owner.get_username()}" if owner else "no members"
                self.stderr.write(f"created project {project.name!r} ({who})")
        elif owner is not None and not project.members.exists():
            Membership.objects.create(project=project, user=owner, role=Membership.Role.OWNER)
            if not quiet:
                self.stderr.write(
                    f"project {name!r} had no members: {owner.get_username()} owns it"
                )
        if not project.members.exists():
            # Said even with --json (on stderr): a project nobody can see looks like lost data.
            self.stderr.write(
                f"project {name!r} has no members, so no one sees it in the browser: create a "
                "user (`python manage.py createsuperuser`) and run this command again with "
                "--owner USERNAME, or add a membership in /admin/"
            )
        return project

    def _follow(self, upload: Upload, timeout: float, *, quiet: bool) -> Upload:
        from tqdm import tqdm  # here: an inline ingest shows no bar

        deadline = time.monotonic() + timeout
        hinted = False
        bar = tqdm(
            total=100,
            desc=upload.filename[:30],
            unit="%",
            disable=quiet,
            file=sys.stderr,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}",
        )
        try:
            while True:
                upload.refresh_from_db()
                bar.n = round(upload.progress * 100)
                bar.refresh()
                if upload.is_finished:
                    return upload
                if time.monotonic() > deadline:
                    raise CommandError(
                        f"upload #{upload.pk} still {upload.status} after {timeout:.0f}s; it stays "
                        "queued — check the worker, or run with --inline"
                    )
                if (
                    not hinted
                    and upload.status == Upload.Status.PENDING
                    and (time.monotonic() + timeout - deadline > 10)
                ):
                    hinted = True
                    if not quiet:
                        self.stderr.write(
                            "\nwaiting for a worker (start one with "
                            "`celery -A auditor worker -Q ingest,audit,export`, "
                            "or use --inline)"
                        )
                time.sleep(0.2)
        finally:
            bar.close()

    def _print(self, results, summary) -> None:  # type: ignore[no-untyped-def]
        for path, upload, fresh in results:
            if not fresh:
                self.stdout.write(f"{path}: identical to upload #{upload.pk}; nothing to do")
            elif upload.status == Upload.Status.FAILED:
                self.stdout.write(self.style.ERROR(f"{path}: failed: {upload.failure}"))
            else:
                self.stdout.write(
                    f"{path}: {upload.traces_accepted} traces stored, "
                    f"{upload.traces_rejected} rejected, {upload.events} events "
                    f"(format {upload.format_detected})"
                )
                for e in upload.errors[:20]:
                    self.stdout.write(
                        f"  line {e['line']}: [{e['trace_id'] or '-'}] {e['path']}: {e['message']}"
                    )
                if upload.error_count > 20:
                    self.stdout.write(
                        f"  … {upload.error_count - 20} more errors (see --json or the upload page)"
                    )


def _owner(username: str) -> Any:
    """The user named by --owner (refused clearly when there is none), else the first
    superuser, else None."""
    users = get_user_model().objects
    if username:
        user = users.filter(username=username).first()
        if user is None:
            raise CommandError(
                f"--owner {username!r}: no such user (create one with "
                "`python manage.py createsuperuser` or in /admin/)"
            )
        return user
    return users.filter(is_superuser=True, is_active=True).order_by("pk").first()


def _summary(results: list[tuple[Path, Upload, bool]]) -> dict:
    fresh = [(p, u) for p, u, f in results if f]
    errors = []
    for path, upload in fresh:
        for e in upload.errors:
            errors.append({"file": str(path), **e})
        if upload.status == Upload.Status.FAILED:
            errors.append(
                {
                    "file": str(path),
                    "line": None,
                    "trace_id": None,
                    "path": "$",
                    "message": upload.failure,
                }
            )
    return {
        "traces_accepted": sum(u.traces_accepted for _, u in fresh),
        "traces_rejected": sum(u.traces_rejected for _, u in fresh),
        "events": sum(u.events for _, u in fresh),
        "errors": errors,
        "duplicate": bool(results) and not fresh,
        "failed": sum(1 for _, u in fresh if u.status == Upload.Status.FAILED),
        "uploads": [
            {
                "file": str(p),
                "upload": u.pk,
                "status": u.status,
                "duplicate": not f,
                "format": u.format_detected or u.format_requested,
            }
            for p, u, f in results
        ],
    }
