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

import hashlib
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
        """What the upload's uploader stated (`run_stated`; older uploads: its `run_*`)."""
        stated = getattr(upload, "run_stated", None)
        if isinstance(stated, dict) and stated:
            return cls(
                **{k: str(stated.get(k) or "") for k in ("model", "agent", "benchmark", "label")}
            )
        return cls(
            model=getattr(upload, "run_model", "") or "",
            agent=getattr(upload, "run_agent", "") or "",
            benchmark=getattr(upload, "run_benchmark", "") or "",
            label=getattr(upload, "run_label", "") or "",
        )

    def stated(self) -> dict[str, str]:
        return {
            "model": self.model,
            "agent": self.agent,
            "benchmark": self.benchmark,
            "label": self.label,
        }

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


def request_key(fmt: str, run: RunSource) -> str:
    """What makes two uploads of the same bytes the same request: the format asked for and the
    run stated. An identical request is a no-op; another run name or format is processed."""
    text = "\x1f".join((fmt, run.model, run.agent, run.benchmark, run.label))
    return hashlib.sha256(text.encode()).hexdigest()


# File name suffixes dropped from an upload's default run name.
_SUFFIXES = (".gz", ".jsonl", ".json", ".ndjson", ".eval", ".txt", ".zip")


def default_key(filename: str, upload_id: int | None) -> str:
    """The run part of an upload that names no run: its file name and upload number, e.g.
    `false_presuppositions_claude_prompt0@12` (no ':' or '/', which separate id parts)."""
    stem = filename.rsplit("/", 1)[-1]
    for _ in range(2):
        for suffix in _SUFFIXES:
            if stem.lower().endswith(suffix) and len(stem) > len(suffix):
                stem = stem[: -len(suffix)]
                break
    clean = "".join(ch if ch.isprintable() and ch not in ":/\\ " else "-" for ch in stem)
    return f"{clean[:80] or 'upload'}@{upload_id}"


def own_key(key: str, upload_id: int | None, taken: frozenset[str] | set[str]) -> str:
    """`key`, or `key@<upload>` when another upload of the project already uses it."""
    if key not in taken:
        return key
    suffix = f"@{upload_id}"
    return key[: MAX_KEY - len(suffix)] + suffix


def requalify(trace_id: str, old: str, new: str) -> str:
    """A qualified id with its run part `old` replaced by `new` (`qualify`'s layout)."""
    if old == new:
        return trace_id
    if not old:
        return qualify(trace_id, new)
    prefix, sep, rest = trace_id.partition(":")
    if sep and rest.startswith(old + ":"):
        return f"{prefix}:{new}:{rest[len(old) + 1 :]}"
    if trace_id.startswith(old + ":"):
        return new + trace_id[len(old) :]
    return qualify(trace_id, new)


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

    __slots__ = ("source", "ids", "keys", "default", "upload_id", "taken")

    def __init__(
        self,
        source: RunSource,
        *,
        default: str = "",
        upload_id: int | None = None,
        taken: frozenset[str] = frozenset(),
    ) -> None:
        self.source = source
        self.ids: dict[str, str] = {}
        self.keys: dict[str, str] = {}  # rewritten id → its run part
        self.default = default
        self.upload_id = upload_id
        self.taken = taken

    def run_key(self, header: dict | None) -> str:
        """The run part for a trace with this header: stated or read, made this upload's own
        when another upload uses it; the upload's default when nothing names the run."""
        key = self.source.key(header)
        return own_key(key, self.upload_id, self.taken) if key else self.default

    def event(self, event: dict) -> dict:
        tid = event.get("trace_id")
        if not isinstance(tid, str):
            return event
        new = self.ids.get(tid)
        if new is None:
            header = event if event.get("type") == "trace" else None
            if header is not None:
                self.source.apply(header)
            key = self.run_key(header)
            new = self.ids[tid] = qualify(tid, key)
            self.keys[new] = key
        event["trace_id"] = new
        return event

    def trace_id(self, tid: str | None) -> str | None:
        """The id an error names: the rewritten one when the trace was seen."""
        if tid is None:
            return None
        return self.ids.get(tid) or qualify(tid, self.run_key(None))


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


def unapply(header: dict, stated: RunSource) -> dict:
    """A copy of a stored header as the file had it: what `stated.apply` put in is taken out
    (a stated part that equalled the file's own value cannot be told apart and is kept)."""
    h = dict(header)
    meta = dict(h.get("meta") or {}) if isinstance(h.get("meta"), dict) else None
    for key in ("model", "agent"):
        if meta is not None and f"file_{key}" in meta:
            h[key] = meta.pop(f"file_{key}")
        elif getattr(stated, key) and h.get(key) == getattr(stated, key):
            h.pop(key, None)
    if isinstance(h.get("task"), dict):
        task = h["task"] = dict(h["task"])
        if meta is not None and "file_benchmark" in meta:
            task["benchmark"] = meta.pop("file_benchmark")
        elif stated.benchmark and task.get("benchmark") == stated.benchmark:
            task.pop("benchmark", None)
    if stated.label and isinstance(h.get("labels"), dict):
        labels = h["labels"] = dict(h["labels"])
        if labels.get("run") == stated.label:
            labels.pop("run")
    if meta is not None:
        h["meta"] = meta
    return h
