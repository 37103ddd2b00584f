#!/usr/bin/env python
"""The four policies' speed now against an earlier commit, in one process: the earlier `policies`
package is read from git into a temporary directory as `policies_base`, and the two audit the
same synthetic traces (tests/builders/synthetic.py's mix) in alternating chunks, so both see
the same machine load. Reports the time ratio new/base (total and median chunk) and checks that
every result is identical.

    .venv/bin/python bench/policies_ab.py --base 19a7b52 [--traces 4000] [--chunk 100]

Works while the package imports itself only relatively (``from .trace import …``), as it does.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policies import Auditor  # noqa: E402
from tests.builders.synthetic import make_traces  # noqa: E402

SETTINGS: dict[str, dict[str, Any]] = {
    "vrr": {"params": {"rho0": 0.2, "rho1": 0.15, "alpha": 0.3, "beta": 0.2, "prior": 0.6}}
}


def _base_package(rev: str, into: Path) -> Any:
    """The `policies` package as of ``rev``, imported as `policies_base`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "policies"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "policies").rename(into / "policies_base")
    sys.path.insert(0, str(into))
    return importlib.import_module("policies_base")


def _records(results: dict[str, Any]) -> str:
    return json.dumps({k: r.to_dict() for k, r in results.items()}, sort_keys=True, default=str)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--traces", type=int, default=4000)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--passes", type=int, default=2)
    a = ap.parse_args()
    traces = make_traces(a.traces, 50)
    with tempfile.TemporaryDirectory() as tmp:
        base_pkg = _base_package(a.base, Path(tmp))
        base, new = base_pkg.Auditor(settings=SETTINGS), Auditor(settings=SETTINGS)
        differ = sum(_records(base.audit(t)) != _records(new.audit(t)) for t in traces)
        total = {"base": 0.0, "new": 0.0}
        ratios: list[float] = []
        for p in range(a.passes):
            for k, i in enumerate(range(0, len(traces), a.chunk)):
                chunk = traces[i : i + a.chunk]
                took: dict[str, float] = {}
                order = [("base", base), ("new", new)]
                for name, auditor in order if (k + p) % 2 == 0 else order[::-1]:
                    t0 = time.perf_counter()
                    for t in chunk:
                        auditor.audit(t)
                    took[name] = time.perf_counter() - t0
                    total[name] += took[name]
                ratios.append(took["new"] / took["base"])
    ratios.sort()
    n = a.passes * len(traces)
    print(f"{len(traces)} traces x 50 events, {a.passes} passes in chunks of {a.chunk}")
    print(f"base ({a.base}): {n / total['base']:8,.0f} traces/s")
    print(f"new (work tree): {n / total['new']:8,.0f} traces/s")
    print(
        f"new/base time: {total['new'] / total['base']:.3f} "
        f"(median chunk {ratios[len(ratios) // 2]:.3f})"
    )
    print(f"traces whose results differ: {differ} of {len(traces)}")


if __name__ == "__main__":
    main()
