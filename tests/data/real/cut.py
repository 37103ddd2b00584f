"""Cuts the in-repository samples of the real data from the full files (../shared/data):
the first records of each file, in their own order and bytes, plus the few later records a
test names (a long repair loop, a specific τ²-bench task). Run from the repository root:

    .venv/bin/python tests/data/real/cut.py [../shared/data]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def lines(src: Path, keep) -> bytes:  # type: ignore[no-untyped-def]
    """The JSONL lines of `src` that `keep(index, record)` selects, byte for byte."""
    raw = [x for x in src.read_bytes().splitlines(keepends=True) if x.strip()]
    return b"".join(x for i, x in enumerate(raw) if keep(i, json.loads(x)))


def reverses(rec: dict) -> bool:  # type: ignore[type-arg]
    """A SYCON record whose answer identifies the false presupposition at one turn and not at
    the next."""
    ok = [str(t["judge_identifies_false_presupposition"]).strip() == "1" for t in rec["turns"]]
    return any(a and not b for a, b in zip(ok, ok[1:], strict=False))


def main(data: Path) -> None:
    out: dict[str, bytes] = {}
    # SYCON-Bench: the first records, and when none of them shows one, the first two where the
    # model drops a right answer under pushback (the actor's false reversals the tests count).
    for src in sorted((data / "sycon-bench").glob("*.jsonl")):
        first = 15 if "Qwen" in src.name else 20
        records = [json.loads(x) for x in src.read_bytes().splitlines() if x.strip()]
        extra = set()
        if not any(reverses(r) for r in records[:first]):
            extra = {i for i, r in enumerate(records) if reverses(r)}
            extra = set(sorted(extra)[:2])
        out[f"sycon-bench/{src.name}"] = lines(
            src, lambda i, r, n=first, more=extra: i < n or i in more
        )
    # The HumanEval run: its first records, HumanEval/45 (named by the run-source tests) and
    # every repair loop (more than one round).
    out["ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl"] = lines(
        data / "ldb" / "humaneval_reflexion_gpt-3.5-turbo-0613.jsonl",
        lambda i, r: i < 20 or r["task_id"] == "HumanEval/45" or len(r["implementations"]) > 1,
    )
    # The MBPP run: its first records, its first loops and its first ten-round loop.
    mbpp = data / "ldb" / "mbpp_ldb_gpt-3.5-turbo-0613.jsonl"
    ten = next(
        i for i, x in enumerate(mbpp.read_bytes().splitlines())
        if len(json.loads(x)["implementations"]) == 10
    )  # fmt: skip
    out[f"ldb/{mbpp.name}"] = lines(
        mbpp, lambda i, r: i < 20 or (i < 100 and len(r["implementations"]) > 1) or i == ten
    )
    # τ-bench: the first tasks' trials, and task 13's first trial, whose trajectory TwinCheck's
    # guard changes (the result-store tests compare a stored guarded trajectory), as one array.
    tau = json.loads((data / "tau-bench" / "gpt-4o-airline.json").read_bytes())
    out["tau-bench/gpt-4o-airline.json"] = json.dumps(
        tau[:10] + [tau[13]], indent=2, ensure_ascii=False
    ).encode()
    # τ²-bench: the first simulations and the tasks they ran, in the same document.
    for name, n in (("airline_grok-3.json", 4), ("telecom_grok-3.json", 2)):
        doc = json.loads((data / "tau2-bench" / name).read_bytes())
        sims = doc["simulations"][:n]
        ran = {s["task_id"] for s in sims}
        doc["simulations"] = sims
        doc["tasks"] = [t for t in doc["tasks"] if t["id"] in ran]
        out[f"tau2-bench/{name}"] = json.dumps(doc, indent=2, ensure_ascii=False).encode()
    for rel, blob in out.items():
        (HERE / rel).parent.mkdir(parents=True, exist_ok=True)
        (HERE / rel).write_bytes(blob)
        print(f"{len(blob):>8}  {rel}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[3] / "shared" / "data")
