"""Per policy and real data file, the counts of an audit — applied, accepted, rescue, harm,
same, unknown, not applicable — from `manage.py audit --json`, for one checkout of the app; and
the table of two such collections side by side (before / after a change) or a check that two
collections are identical (the same audit on an idle and on a busy machine).

    .venv/bin/python bench/closing_counts.py collect --repo . --database URL --out DIR
    .venv/bin/python bench/closing_counts.py table BEFORE_DIR AFTER_DIR
    .venv/bin/python bench/closing_counts.py same DIR_A DIR_B

`collect` ingests each file of the data folder (default ../shared/data, or TA_SHARED_DATA) into a
project of its own in the given database (migrated first) and audits it twice, inline, with
code execution on: the four policies with VRR forced to Stop, then VRR forced to Guard. It
writes each file's two `--json` outputs to DIR/<folder>__<file>.json. The database should be
empty of such projects (a project's stored executions would be reused).

Accepted: TwinCheck's accepted replacements; VRR's loops whose shipped round is not the actor's
(the rule changed the program shipped); the checklist's applied decisions that kept or
reverted against the actor; commit's applied conversations whose committed answer is not the
actor's last. The policies' own tables (`paper_table`) give each.
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
        (out / f"{key}.json").write_text(json.dumps(runs, indent=1, sort_keys=True))
        print(key, file=sys.stderr)


def accepted(policy: str, c: dict[str, Any]) -> int | None:
    """How many of the policy's decisions changed what the actor did (module docstring)."""
    table = c.get("paper_table") or {}
    if policy == "twincheck":
        return table.get("accepted")
    if policy == "vrr":
        changed = table.get("changed")
        if changed is not None:
            return int(changed)
        return None
    if policy == "checklist":
        return (table.get("guarded") or {}).get("corrections")
    if policy == "commit":
        return table.get("changed")
    return None


def counts(runs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{row: {column: count}} of one file's two runs."""
    out: dict[str, dict[str, Any]] = {}
    for row, run, policy in ROWS:
        c = runs[run]["policies"].get(policy) or {}
        got: dict[str, Any] = {k: c.get(k) for k in COLUMNS if k != "accepted"}
        got["accepted"] = accepted(policy, c)
        out[row] = got
    return out


def _load(folder: Path) -> dict[str, dict[str, dict[str, Any]]]:
    return {p.stem: counts(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}


def _cell(v: Any) -> str:
    return "—" if v is None else str(v)


def table(before: Path, after: Path) -> str:
    b, a = _load(before), _load(after)
    head = "| file | policy | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for key in sorted(set(a) | set(b)):
        for row, _, _ in ROWS:
            x, y = (b.get(key) or {}).get(row) or {}, (a.get(key) or {}).get(row) or {}
            cells = [
                _cell(y.get(k)) if x.get(k) == y.get(k) else f"{_cell(x.get(k))} → {_cell(y.get(k))}"
                for k in COLUMNS
            ]
            lines.append(f"| {key} | {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def same(one: Path, two: Path) -> list[str]:
    """Where two collections differ (file, policy, column), empty when identical."""
    x, y = _load(one), _load(two)
    diffs = []
    for key in sorted(set(x) | set(y)):
        for row, _, _ in ROWS:
            for k in COLUMNS:
                p, q = ((x.get(key) or {}).get(row) or {}).get(k), (
                    (y.get(key) or {}).get(row) or {}
                ).get(k)
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
