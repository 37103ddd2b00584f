"""Importers for foreign trace formats, and format detection.

`IMPORTERS` maps a format name (what `--format` takes) to its importer; `detect` picks one from
the first bytes of a file. Detection order matters: specific formats first, the generic
OpenAI-chat shape and native v1 last.
"""

from __future__ import annotations

from ._common import head_lines
from .base import Importer, ImportReport, RecordError, SourceEvent
from .bfcl import BFCLImporter
from .export_jsonl import ExportImporter
from .inspect_log import InspectLogImporter
from .openai_chat import OpenAIChatImporter
from .otlp import OTLPImporter
from .pushback import PushbackImporter
from .repair_runs import RepairRunsImporter
from .sycobench import SycoBenchImporter
from .tau_bench import TauBenchImporter
from .v1 import V1Importer

__all__ = ["IMPORTERS", "Importer", "ImportReport", "RecordError", "SourceEvent", "detect"]

_ORDER: list[Importer] = [
    ExportImporter(),
    OTLPImporter(),
    InspectLogImporter(),
    TauBenchImporter(),
    BFCLImporter(),
    RepairRunsImporter(),
    SycoBenchImporter(),
    PushbackImporter(),
    OpenAIChatImporter(),
    V1Importer(),
]

IMPORTERS: dict[str, Importer] = {imp.name: imp for imp in _ORDER}


def detect(head: bytes, filename: str) -> str:
    """The name of the first format whose `sniff` accepts the file's first bytes (≤ 64 KiB).

    Raises ValueError naming every format tried when none matches.
    """
    for importer in _ORDER:
        if importer.sniff(head, filename):
            return importer.name
    tried = ", ".join(imp.name for imp in _ORDER)
    raise ValueError(
        f"could not detect the format of {filename or 'the file'!r}; tried: {tried}" + nearest(head)
    )


# The keys that make a first record one format's, for saying which format a file that was not
# detected comes nearest to and what it lacks. Alternatives: any one of a tuple's sets suffices.
SIGNATURES: dict[str, tuple[frozenset[str], ...]] = {
    "bfcl": (frozenset({"id", "result"}),),
    "repair_runs": (
        frozenset({"task_id", "implementations", "test_feedback"}),
        frozenset({"name", "implementations", "test_feedback"}),
        frozenset({"task_id", "solution", "is_solved"}),
        frozenset({"name", "solution", "is_solved"}),
    ),
    "pushback": (frozenset({"question", "turns"}),),
    "sycobench": (frozenset({"conversations"}),),
    "openai_chat": (frozenset({"messages"}),),
    "v1": (frozenset({"trace_id", "type"}),),
    "tau_bench": (frozenset({"task_id", "reward", "info", "traj"}),),
    "ta_export": (frozenset({"trace", "events"}),),
    "otlp": (frozenset({"resourceSpans"}),),
}


def nearest(head: bytes) -> str:
    """'; nearest: <format> (the first record lacks <keys>)' for the format whose signature the
    file's first JSON object shares most keys with; '' when it shares none or is not JSON."""
    records = head_lines(head, 1)
    if not records or not isinstance(records[0], dict):
        return ""
    keys = records[0].keys()
    best: tuple[int, int, str, frozenset[str]] | None = None
    for fmt, alternatives in SIGNATURES.items():
        for sig in alternatives:
            shared = len(sig & keys)
            if shared and (best is None or (shared, -len(sig - keys)) > best[:2]):
                best = (shared, -len(sig - keys), fmt, sig)
    if best is None:
        return ""
    _, _, fmt, sig = best
    missing = ", ".join(sorted(sig - keys))
    return f"; nearest: {fmt} (the first record lacks the field {missing})"
