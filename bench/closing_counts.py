"""Per policy and real data file, the counts of an audit — applied, accepted, rescue, harm,
same, unknown, not applicable — from `manage.py audit --json`, for one checkout of the app; and
the table of two such collections side by side (before / after a change) or a check that two
collections are identical (the same audit on an idle and on a busy machine).

    .venv/bin/python bench/closing_counts.py collect --repo . --database URL --out DIR
    .venv/bin/python bench/closing_counts.py table BEFORE_DIR AFTER_DIR
    .venv/bin/python bench/closing_counts.py same DIR_A DIR_B
    .venv/bin/python bench/closing_counts.py fill DIR --database URL   (accepted, afterwards)

`collect` ingests each file of the data folder (default ../shared/data, or TA_SHARED_DATA) into a
project of its own in the given database (migrated first) and audits it twice, inline, with
code execution on: the four policies with VRR forced to Stop, then VRR forced to Guard. It
writes each file's two `--json` outputs to DIR/<folder>__<file>.json. The database should be
empty of such projects (a project's stored executions would be reused).

Accepted: the applied decisions whose guarded trajectory is not the actor's (`continuation` is
not ``exact``: TwinCheck's accepted replacements, VRR's shipped rounds other than the actor's
last, a checklist or commit decision that changed the answer); `audit --json` does not count
them, so `collect` reads them from the run's stored results (``accepted`` beside each run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

POLICY_RUNS = {
    "stop": ["--policies", "twincheck,checklist,vrr,commit", "--set", "vrr.mode=stop"],
    "guard": ["--policies", "vrr", "--set", "vrr.mode=guard"],
}
COLUMNS = ("applied", "accepted", "rescue", "harm", "same", "unknown", "not_applicable")
ROWS = (
    ("twincheck", "stop", "twincheck"),
    ("checklist", "stop", "checklist"),
    ("vrr_stop", "stop", "vrr"),
    ("vrr_guard", "guard", "vrr"),
    ("commit", "stop", "commit"),
)


def _manage(repo: Path, env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [str(repo / ".venv/bin/python"), str(repo / "manage.py"), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return out.stdout


def collect(repo: Path, database: str, out: Path, data: Path) -> None:
    env = {**os.environ, "DATABASE_URL": database, "TA_SANDBOX_ALLOW_ALL_PROJECTS": "1"}
    out.mkdir(parents=True, exist_ok=True)
    _manage(repo, env, "migrate", "--noinput", "-v0")
    for path in sorted(p for p in data.rglob("*.json*") if p.is_file()):
        key = f"{path.parent.name}__{path.name}"
        project = f"{out.name}-{key}"[:100]
        _manage(repo, env, "ingest", str(path), "--project", project, "--inline", "--json")
        runs = {}
        for name, options in POLICY_RUNS.items():
            text = _manage(
                repo,
                env,
                "audit",
                "--project",
                project,
                "--inline",
                "--json",
                "--execute-code",
                "on",
                *options,
            )
            runs[name] = json.loads(text.strip().splitlines()[-1])
            runs[name]["accepted"] = _accepted(database, runs[name]["run"])
        (out / f"{key}.json").write_text(json.dumps(runs, indent=1, sort_keys=True))
        print(key, file=sys.stderr)


def _accepted(database: str, run: int) -> dict[str, int]:
    """{policy: applied decisions of ``run`` whose guarded trajectory is not the actor's}."""
    sql = (
        f"select policy, count(*) from auditor_auditresult where run_id = {int(run)} "
        "and applied and continuation <> 'exact' group by policy"
    )
    out = subprocess.run(
        ["psql", database, "-Atc", sql], capture_output=True, text=True, check=True
    ).stdout
    return {p: int(n) for p, n in (line.split("|") for line in out.split())}


def counts(runs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{row: {column: count}} of one file's two runs."""
    out: dict[str, dict[str, Any]] = {}
    for row, run, policy in ROWS:
        c = runs[run]["policies"].get(policy) or {}
        got: dict[str, Any] = {k: c.get(k) for k in COLUMNS if k != "accepted"}
        got["accepted"] = (runs[run].get("accepted") or {}).get(policy, 0)
        out[row] = got
    return out


def _load(folder: Path) -> dict[str, dict[str, dict[str, Any]]]:
    return {p.stem: counts(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}


def _cell(v: Any) -> str:
    return "—" if v is None else str(v)


def _change(before: Any, after: Any) -> str:
    return _cell(after) if before == after else f"{_cell(before)} → {_cell(after)}"


def table(before: Path, after: Path) -> str:
    b, a = _load(before), _load(after)
    head = "| file | policy | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for key in sorted(set(a) | set(b)):
        for row, _, _ in ROWS:
            x, y = (b.get(key) or {}).get(row) or {}, (a.get(key) or {}).get(row) or {}
            cells = [_change(x.get(k), y.get(k)) for k in COLUMNS]
            lines.append(f"| {key} | {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def same(one: Path, two: Path) -> list[str]:
    """Where two collections differ (file, policy, column), empty when identical."""
    x, y = _load(one), _load(two)
    diffs = []
    for key in sorted(set(x) | set(y)):
        for row, _, _ in ROWS:
            for k in COLUMNS:
                p, q = (
                    ((x.get(key) or {}).get(row) or {}).get(k),
                    ((y.get(key) or {}).get(row) or {}).get(k),
                )
                if p != q:
                    diffs.append(f"{key} {row} {k}: {p} vs {q}")
    return diffs


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else ""
    if cmd == "collect":
        opts = dict(zip(argv[1::2], argv[2::2], strict=False))
        data = Path(opts.get("--data") or os.environ.get("TA_SHARED_DATA") or "../shared/data")
        collect(Path(opts["--repo"]).resolve(), opts["--database"], Path(opts["--out"]), data)
        return 0
    if cmd == "fill":  # a collection written without the accepted counts
        for p in sorted(Path(argv[1]).glob("*.json")):
            runs = json.loads(p.read_text())
            for r in runs.values():
                r["accepted"] = _accepted(argv[3], r["run"])
            p.write_text(json.dumps(runs, indent=1, sort_keys=True))
        return 0
    if cmd == "table":
        print(table(Path(argv[1]), Path(argv[2])))
        return 0
    if cmd == "same":
        diffs = same(Path(argv[1]), Path(argv[2]))
        print("\n".join(diffs) or "identical")
        return 1 if diffs else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
