"""The contract every foreign-format importer fulfils.

An importer turns a foreign file into v1 event dicts (SPEC §3). It never stores anything: the
ingest service validates what it yields with the same v1 validator as native uploads, groups
events into traces and stores them. An importer reports what it could not map instead of
dropping it silently, and reports records it cannot import at all as errors with a location.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol


@dataclass(frozen=True, slots=True)
class SourceEvent:
    """One v1 event and where it came from in the source file (1-based line or record number)."""

    line: int
    event: dict


@dataclass(slots=True)
class RecordError:
    """A source record that could not be imported; the whole trace it belongs to is rejected."""

    line: int
    trace_id: str | None
    path: str
    message: str


@dataclass(slots=True)
class ImportReport:
    """What an import did not map cleanly.

    `unmapped` counts fields or values that were kept (in `meta`) but had no v1 meaning, keyed
    by a short description; `examples` holds a few samples per key so a user can see what it was.
    `errors` are records rejected outright. `flags` counts kept-but-suspicious values (e.g. a
    malformed BFCL function name) that were imported and marked in the event's `meta`.
    """

    format: str
    detected: bool = False
    unmapped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    errors: list[RecordError] = field(default_factory=list)
    # The uploaded file's name, when the caller knows it (the stream may be a decompressor with
    # no name). Importers use it only for hints such as a model name in `<model>-airline.json`.
    filename: str = ""
    # Sentences about the file as a whole (what it lacks), each once: shown with the upload.
    notes: list[str] = field(default_factory=list)

    MAX_EXAMPLES = 3

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def note_unmapped(self, key: str, example: str) -> None:
        self.unmapped[key] = self.unmapped.get(key, 0) + 1
        samples = self.examples.setdefault(key, [])
        if len(samples) < self.MAX_EXAMPLES:
            samples.append(example[:200])

    def note_flag(self, key: str) -> None:
        self.flags[key] = self.flags.get(key, 0) + 1

    def error(self, *, line: int, trace_id: str | None, path: str, message: str) -> None:
        self.errors.append(RecordError(line=line, trace_id=trace_id, path=path, message=message))

    def to_dict(self) -> dict:
        return {
            "format": self.format,
            "detected": self.detected,
            "unmapped": dict(self.unmapped),
            "examples": {k: list(v) for k, v in self.examples.items()},
            "flags": dict(self.flags),
            "notes": list(self.notes),
            "errors": [
                {"line": e.line, "trace_id": e.trace_id, "path": e.path, "message": e.message}
                for e in self.errors
            ],
        }


class Importer(Protocol):
    """A foreign format. `name` is what `--format` takes."""

    name: str
    label: str

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first bytes of the file (up to 64 KiB) look like this format."""
        ...

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        """Yield v1 events; put unimportable records in `report.errors`; never raise on bad data."""
        ...
