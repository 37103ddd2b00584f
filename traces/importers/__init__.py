"""Importers for foreign trace formats, and format detection.

`IMPORTERS` maps a format name (what `--format` takes) to its importer; `detect` picks one from
the first bytes of a file. Detection order matters: specific formats first, the generic
OpenAI-chat shape and native v1 last.
"""

from __future__ import annotations

from .base import Importer, ImportReport, RecordError, SourceEvent
from .bfcl import BFCLImporter
from .openai_chat import OpenAIChatImporter
from .pushback import PushbackImporter
from .repair_runs import RepairRunsImporter
from .tau_bench import TauBenchImporter
from .v1 import V1Importer

__all__ = ["IMPORTERS", "Importer", "ImportReport", "RecordError", "SourceEvent", "detect"]

_ORDER: list[Importer] = [
    TauBenchImporter(),
    BFCLImporter(),
    RepairRunsImporter(),
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
    raise ValueError(f"could not detect the format of {filename or 'the file'!r}; tried: {tried}")
