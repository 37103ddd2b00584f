"""Where the tests read the real data: the full files of the shared data folder when it is
beside the repository (``TA_SHARED_DATA``, default ``../shared/data``; CI sets it), else the
samples cut from them into ``tests/data/real`` (same folders, same file names, fewer records).

A test whose assertions hold only on a full file asks for it with ``full=True``: without the
shared folder it is skipped, naming the folder — or, when ``TA_SHARED_DATA`` names a folder
that is not there and ``TA_STRICT=1``, it fails, so a misplaced copy never passes for green.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "data" / "real"
SHARED = Path(os.environ.get("TA_SHARED_DATA") or REPO.parent / "shared" / "data")
FULL = SHARED.is_dir()


def data_root() -> Path:
    """The folder the real files are read from: the shared one, else the samples."""
    return SHARED if FULL else SAMPLES


def real_file(rel: str, *, full: bool = False) -> Path:
    """The real file ``rel`` (e.g. ``"ldb/mbpp_ldb_gpt-3.5-turbo-0613.jsonl"``); with
    ``full=True``, only the full file will do (call it inside the test, not at import)."""
    if full:
        need_full()
    return data_root() / rel


def real_files(folder: str, pattern: str) -> list[Path]:
    """The real files of one source folder matching ``pattern``, sorted: the same names from
    the shared folder and from the samples, so parametrized test ids do not change."""
    return sorted((data_root() / folder).glob(pattern))


def count_records(path: Path) -> int:
    """Records of a real JSONL file (164 in the full HumanEval run, fewer in its sample)."""
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def need_full() -> None:
    """Skip the calling test unless the full files are there (see the module docstring)."""
    if FULL:
        return
    reason = f"needs the full real data in {SHARED} (only the samples of {SAMPLES} are here)"
    if os.environ.get("TA_SHARED_DATA") and os.environ.get("TA_STRICT", "") == "1":
        pytest.fail(f"required in strict mode (TA_STRICT=1): {reason}")
    pytest.skip(reason)
