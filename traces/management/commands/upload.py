"""`python manage.py upload rename|reprocess|delete ID [...]`: change a stored upload — the same
service as the upload page and the API (the CLI is the operator's: no role check).

    upload rename ID [--model M] [--agent A] [--benchmark B] [--label L]
    upload reprocess ID [--format F] [--model M ...] [--inline]
    upload delete ID [--yes]     (without --yes: says what would go, deletes nothing, exit 1)
"""

from __future__ import annotations

import sys

import orjson
from django.core.management.base import BaseCommand, CommandError

from traces.models import Upload
from traces.run_source import RunSource
from traces.services import FORMATS, UploadRejected, upload_process
from traces.upload_manage import upload_delete, upload_dependents, upload_rename, upload_reprocess

RUN_PARTS = ("model", "agent", "benchmark", "label")


class Command(BaseCommand):
    help = "Rename an upload's run, process it again with another format, or delete it."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        sub = parser.add_subparsers(dest="action", required=True)
        rename = sub.add_parser("rename", help="give the run another name; its traces follow")
        reprocess = sub.add_parser("reprocess", help="process the stored file again")
        delete = sub.add_parser("delete", help="delete the upload with its traces")
        for p in (rename, reprocess, delete):
            p.add_argument("upload", type=int, help="the upload's number")
            p.add_argument("--json", action="store_true", help="print one JSON object")
        for p in (rename, reprocess):
            for part in RUN_PARTS:
                p.add_argument(f"--{part}", default=None, help=f"the run's {part}")
        reprocess.add_argument("--format", default=None, choices=FORMATS)
        reprocess.add_argument(
            "--inline", action="store_true", help="process here, not in a worker"
        )
        delete.add_argument("--yes", action="store_true", help="delete (else only say what goes)")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        upload = Upload.objects.filter(pk=opts["upload"]).first()
        if upload is None:
            raise CommandError(f"no upload #{opts['upload']}")
        action = opts["action"]
        try:
            if action == "delete":
                out = self._delete(upload, opts["yes"])
            else:
                current = RunSource.of(upload)
                run = RunSource(
                    **{k: getattr(current, k) if opts[k] is None else opts[k] for k in RUN_PARTS}
                )
                if action == "rename":
                    upload = upload_rename(upload=upload, run=run)
                else:
                    upload = upload_reprocess(
                        upload=upload, fmt=opts["format"], run=run, enqueue=not opts["inline"]
                    )
                    if opts["inline"]:
                        upload = upload_process(upload_id=upload.pk) or upload
                out = {
                    "upload": upload.pk,
                    "status": upload.status,
                    "format": upload.format_detected or upload.format_requested,
                    "run_sources": sorted(
                        set(upload.traces.values_list("run_source", flat=True)) - {""}
                    ),
                    "traces_accepted": upload.traces_accepted,
                    "traces_rejected": upload.traces_rejected,
                }
        except UploadRejected as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(orjson.dumps(out).decode() if opts["json"] else _text(action, out))
        if action == "delete" and not out["deleted"]:
            sys.exit(1)

    def _delete(self, upload: Upload, yes: bool) -> dict:
        if not yes:
            return {
                "upload": upload.pk,
                "deleted": False,
                "would_delete": dict(upload_dependents(upload)),
            }
        return {"upload": upload.pk, "deleted": True, "with": dict(upload_delete(upload=upload))}


def _text(action: str, out: dict) -> str:
    if action == "delete":
        what = ", ".join(f"{n} {k}" for k, n in (out.get("with") or out["would_delete"]).items())
        if out["deleted"]:
            return f"upload #{out['upload']} deleted with {what or 'no traces'}"
        return (
            f"upload #{out['upload']} would be deleted with {what or 'no traces'}; "
            "repeat with --yes to delete"
        )
    return (
        f"upload #{out['upload']} {action}: {out['status']}, format {out['format']}, "
        f"run {', '.join(out['run_sources']) or '—'}, {out['traces_accepted']} traces stored, "
        f"{out['traces_rejected']} rejected"
    )
