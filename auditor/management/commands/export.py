"""`python manage.py export --project NAME --format jsonl|csv|parquet [--out PATH] [--run ID]
[--policy P] [--transition T] [--model M] [--benchmark B] [--category C] [--chunk-size N]
[--json]`

Builds the snapshot here (inline, the same function the workers run), keeps it in storage like
any export, and writes a copy to --out (or prints the stored path). --json prints the manifest.
Filter options may be repeated.
"""

from __future__ import annotations

import shutil

import orjson
from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand, CommandError

from auditor.exports.selectors import export_open
from auditor.exports.services import FORMATS, ExportRejected, export_build, export_create
from traces.models import Project


class Command(BaseCommand):
    help = "Export a project's traces, decisions and annotations as an immutable snapshot."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--out", help="also write the file here")
        parser.add_argument("--run", action="append", type=int, default=[], metavar="ID")
        for name in ("policy", "transition", "model", "benchmark", "category"):
            parser.add_argument(f"--{name}", action="append", default=[])
        parser.add_argument("--chunk-size", type=int, default=None, help="rows per chunk")
        parser.add_argument("--json", action="store_true", help="print the manifest as JSON")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        filters = {
            "runs": opts["run"],
            **{k: opts[k] for k in ("policy", "transition", "model", "benchmark", "category")},
        }
        try:
            export = export_create(
                project=project, format=opts["format"], filters=filters, enqueue=False
            )
        except ExportRejected as exc:
            raise CommandError(str(exc)) from exc
        built = export_build(export_id=export.pk, chunk_size=opts["chunk_size"])
        if built is None or built.status != "done":
            raise CommandError(f"export #{export.pk} failed: {built.error if built else '?'}")
        if opts["out"]:
            with export_open(built) as src, open(opts["out"], "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 16)
            where = opts["out"]
        else:
            try:
                where = default_storage.path(built.file.name)
            except NotImplementedError:  # object storage: no local path
                where = built.file.name
        if opts["json"]:
            self.stdout.write(orjson.dumps(built.manifest, option=orjson.OPT_INDENT_2).decode())
        else:
            counts = built.manifest["counts"]
            self.stdout.write(
                f"export #{built.pk}: {built.rows} rows ({counts['traces']} traces, "
                f"{counts['decisions']} decisions, {counts['annotations']} annotations), "
                f"{built.bytes} bytes, sha256 {built.manifest['content_hash']}"
            )
            self.stdout.write(where)
