"""The run an upload records — model, agent (method), benchmark, label — and the trace ids that
name it.

Importers derive trace ids from the task alone (`repair:HumanEval/45`), so a second model's run
of the same tasks would collide with the first in one project. The ingest therefore puts the run
into every importer trace id: `repair:reflexion/gpt-3.5-turbo-0613:HumanEval/45`. What the
uploader states (upload page, API, `--model/--agent/--label`) wins over what the file says; the
label alone tells apart two runs of one model and method. Native v1 trace ids are the user's
own and are never changed. Plain Python: no database here.
"""

from __future__ import annotations

from dataclasses import dataclass

# Trace ids are at most 255 characters (SPEC §3); the run part leaves room for the task part.
MAX_KEY = 120


@dataclass(frozen=True, slots=True)
class RunSource:
    """What the uploader stated about the run; blank means 'read it from the file'."""

    model: str = ""
    agent: str = ""
    benchmark: str = ""
    label: str = ""

    @classmethod
    def of(cls, upload: object) -> RunSource:
        return cls(
            model=getattr(upload, "run_model", "") or "",
            agent=getattr(upload, "run_agent", "") or "",
            benchmark=getattr(upload, "run_benchmark", "") or "",
            label=getattr(upload, "run_label", "") or "",
        )

    def apply(self, header: dict) -> None:
        """Put the stated run into an importer's header; what the file said is kept in meta."""
        for key, value in (("model", self.model), ("agent", self.agent)):
            if value and header.get(key) != value:
                if header.get(key):
                    header.setdefault("meta", {})[f"file_{key}"] = header[key]
                header[key] = value
        if self.benchmark:
            task = header.get("task")
            if isinstance(task, dict):
                if task.get("benchmark") and task["benchmark"] != self.benchmark:
                    header.setdefault("meta", {})["file_benchmark"] = task["benchmark"]
                task["benchmark"] = self.benchmark
        if self.label:
            labels = header.get("labels")
            if not isinstance(labels, dict):
                labels = header["labels"] = {}
            labels["run"] = self.label

    def key(self, header: dict | None) -> str:
        """The run part of a trace id: agent/model/label, each when known ('' when none is)."""
        h = header or {}
        agent = self.agent or _text(h.get("agent"))
        model = self.model or _text(h.get("model"))
        # SYCON names the model as the agent: one part is enough when they are the same.
        parts = list(dict.fromkeys(p for p in (agent, model, self.label) if p))
        return "/".join(parts)[:MAX_KEY]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def qualify(trace_id: str, key: str) -> str:
    """`prefix:task` → `prefix:key:task` (an id without a prefix gets the key in front)."""
    if not key:
        return trace_id
    prefix, sep, rest = trace_id.partition(":")
    if not sep:
        return f"{key}:{trace_id}"
    return f"{prefix}:{key}:{rest}"


class Qualifier:
    """Rewrites the trace ids of an importer's events as they stream past.

    Importers yield each trace's header first, so the run is known from the header before any
    other event of that trace; an event of an unseen trace (never the case for the bundled
    importers) gets the stated run alone.
    """

    __slots__ = ("source", "ids")

    def __init__(self, source: RunSource) -> None:
        self.source = source
        self.ids: dict[str, str] = {}

    def event(self, event: dict) -> dict:
        tid = event.get("trace_id")
        if not isinstance(tid, str):
            return event
        new = self.ids.get(tid)
        if new is None:
            header = event if event.get("type") == "trace" else None
            if header is not None:
                self.source.apply(header)
            new = self.ids[tid] = qualify(tid, self.source.key(header))
        event["trace_id"] = new
        return event

    def trace_id(self, tid: str | None) -> str | None:
        """The id an error names: the rewritten one when the trace was seen."""
        if tid is None:
            return None
        return self.ids.get(tid) or qualify(tid, self.source.key(None))


def run_read(upload: object, accepted: list) -> dict:
    """The run parts the uploader left blank (`Upload.run_*` updates), when every accepted
    trace's header names the same one."""
    found: dict[str, str] = {}
    headers = [st.header for st in accepted if st.header is not None]
    for field, key in (("run_model", "model"), ("run_agent", "agent")):
        if getattr(upload, field, ""):
            continue
        values = {h.get(key) for h in headers}
        if len(values) == 1 and isinstance(value := next(iter(values)), str) and value:
            found[field] = value[:200]
    if not getattr(upload, "run_benchmark", ""):
        benches = {
            (h.get("task") or {}).get("benchmark")
            for h in headers
            if isinstance(h.get("task"), dict)
        }
        if len(benches) == 1 and isinstance(bench := next(iter(benches)), str) and bench:
            found["run_benchmark"] = bench[:200]
    return found
