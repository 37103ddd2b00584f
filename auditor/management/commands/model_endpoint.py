"""`python manage.py model_endpoint --project NAME list`
`python manage.py model_endpoint --project NAME set ENDPOINT [--base-url URL] [--model NAME]
[--key-stdin | --key-env VAR | --no-key]`
`python manage.py model_endpoint --project NAME delete ENDPOINT`

A project's model endpoints from the command line (the operator's counterpart of the owners'
page and API). The key is read from standard input (``--key-stdin``: never an argument, which
other users of the machine could see in the process list), or names a variable the operator
lists in ``TA_MODEL_KEY_ENVS`` (``--key-env``). The key is never printed.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from auditor.llm.endpoints import EndpointRejected, endpoint_by_ref, endpoint_list, endpoint_save
from traces.models import Project


class Command(BaseCommand):
    help = "List, add, change or remove a project's model endpoints (docs/models.md)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--project", required=True)
        parser.add_argument("action", choices=("list", "set", "delete"))
        parser.add_argument("name", nargs="?", default="")
        parser.add_argument("--base-url", default=None)
        parser.add_argument("--model", default=None, help="the default model")
        key = parser.add_mutually_exclusive_group()
        key.add_argument("--key-stdin", action="store_true", help="read the key from stdin")
        key.add_argument("--key-env", default=None, help="a variable of TA_MODEL_KEY_ENVS")
        key.add_argument("--no-key", action="store_true", help="remove the endpoint's key")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        if opts["action"] == "list":
            for ep in endpoint_list(project=project):
                self.stdout.write(
                    f"{ep.name}\t{ep.base_url}\t{ep.model or '-'}\tkey: {ep.key_source}"
                )
            return
        name = opts["name"].strip()
        if not name:
            raise CommandError(f"{opts['action']}: name the endpoint")
        existing = endpoint_by_ref(project=project, ref=name)
        if opts["action"] == "delete":
            if existing is None:
                raise CommandError(f"no model endpoint {name!r} in {project.name}")
            existing.delete()
            self.stdout.write(f"removed {name}")
            return
        values: dict[str, Any] = {"name": name}
        if opts["base_url"] is not None:
            values["base_url"] = opts["base_url"]
        if opts["model"] is not None:
            values["model"] = opts["model"]
        if opts["key_stdin"]:
            values["key"] = sys.stdin.readline().strip()
            if not values["key"]:
                raise CommandError("key: standard input held no key")
        elif opts["key_env"] is not None:
            values["key_env"] = opts["key_env"]
        elif opts["no_key"]:
            values["clear_key"] = True
        try:
            ep = endpoint_save(project=project, values=values, endpoint=existing)
        except EndpointRejected as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"saved {ep.name}: {ep.base_url} (key: {ep.key_source})")
