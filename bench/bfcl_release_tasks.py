"""Writes `traces/importers/bfcl_releases/v3_multi_turn.jsonl.gz`: the multi-turn tasks of
every bfcl-eval release on PyPI that names its data v3, with their ground truth, so a result
file such a release wrote is scored against the task it was run on (`traces.importers.
_bfcl_releases`). One line per test id (in the last v3 release's order): the distinct
versions of the task, each with the releases that ship it.

    pip download bfcl-eval==<v> --no-deps -d WHEELS/   # for each release named below
    .venv/bin/python bench/bfcl_release_tasks.py WHEELS/

The v3 releases on PyPI (2025.6.8 to 2025.8.6.2) carry four different task sets; a release is
named by its first and last version with the same data.
"""

from __future__ import annotations

import gzip
import json
import sys
import zipfile
from pathlib import Path

#: Release ranges with identical v3 multi-turn data, each read from its last wheel.
RANGES = {
    "2025.6.8-2025.6.15": "2025.6.15",
    "2025.6.16-2025.6.30.1": "2025.6.30.1",
    "2025.6.30.2-2025.7.9": "2025.7.9",
    "2025.7.17-2025.8.6.2": "2025.8.6.2",
}
FIELDS = (
    "question",
    "initial_config",
    "involved_classes",
    "path",
    "missed_function",
    "excluded_function",
    "ground_truth",
)
CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
OUT = Path(__file__).resolve().parent.parent / "traces/importers/bfcl_releases"


def _jsonl(z: zipfile.ZipFile, name: str) -> list[dict]:
    return [json.loads(x) for x in z.read(name).decode().splitlines() if x.strip()]


def release_tasks(wheel: Path) -> dict[str, dict]:
    tasks: dict[str, dict] = {}
    with zipfile.ZipFile(wheel) as z:
        for cat in CATEGORIES:
            name = f"BFCL_v3_multi_turn_{cat}.json"
            for e in _jsonl(z, f"bfcl_eval/data/{name}"):
                tasks[e["id"]] = e
            for a in _jsonl(z, f"bfcl_eval/data/possible_answer/{name}"):
                tasks[a["id"]]["ground_truth"] = a["ground_truth"]
    return {i: {k: e[k] for k in FIELDS if k in e} for i, e in tasks.items()}


def main(wheels: Path) -> None:
    sets = {
        rel: release_tasks(next(wheels.glob(f"bfcl_eval-{last}-*.whl")))
        for rel, last in RANGES.items()
    }
    lines = []
    for tid in sets[list(RANGES)[-1]]:
        versions: list[dict] = []
        for rel, tasks in sets.items():
            body = tasks[tid]
            same = next((v for v in versions if v["task"] == body), None)
            if same is None:
                versions.append({"releases": [rel], "task": body})
            else:
                same["releases"].append(rel)
        lines.append(json.dumps({"id": tid, "versions": versions}, separators=(",", ":")))
    data = ("\n".join(lines) + "\n").encode()
    (OUT / "v3_multi_turn.jsonl.gz").write_bytes(gzip.compress(data, mtime=0))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
