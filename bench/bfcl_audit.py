#!/usr/bin/env python
"""BFCL TwinCheck audit against the bare bfcl-eval multi-turn checker on the same 200 traces
(target: ≤ 1.5x, in-process and as whole commands), both measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \\
        .venv/bin/python bench/bfcl_audit.py [--traces 200] [--repeat 3] [--results DIR]

The traces: BFCL result files built from the bfcl-eval package's own multi-turn data
(`traces.samples.bfcl.build_record`: the ground truth as the model's calls, with its realistic
faults — extra `ls`, repeated failing calls, mangled names, broken argument JSON) over the first
N/4 tasks of each category; tasks 1, 5, 9, … also drop one call and tasks 3, 7, 11, … change one
string argument (in the first turn with calls), so both verdicts occur. Deterministic: the same
files on any machine. `--results DIR` uses real result files instead
(`DIR/<model>/multi_turn/*_result.json`, first N records).

Measured, best of --repeat, alternating (the machine is shared: ratios, not seconds, travel):
- in-process, CPU time of this process: (a) the package's `multi_turn_checker` on the decoded
  records, as its `eval_runner` calls it (instances it keeps in module globals are cleared
  between repeats, as a fresh process has them); (b) `Auditor(("twincheck",), judge="heuristic",
  environment=BFCLEnvironment()).audit` on the imported events — policies only, no database. The
  verdicts of (b)'s actor replay are compared with (a)'s.
- whole commands, start to exit: wall time, CPU time and peak RSS (`/usr/bin/time -v`), after
  one unmeasured run of each and with the project's bytecode compiled (as installed): the bare
  checker as a script (this file with `--bare-check DIR`: read the package's tasks and the
  result files, check every record, print the verdict counts) against `manage.py audit --project
  P --policies twincheck --inline` on a project the files were ingested into (not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
MODEL = "bench-bfcl-FC"


# ---- the bare checker (also run alone as a whole command: only the package is imported) --------


def convert_to_function_call(function_call_list: Any) -> list[str]:
    # bfcl_eval.model_handler.utils.convert_to_function_call (not importable without the
    # package's inference dependencies), as eval_runner decodes an FC model's steps.
    if type(function_call_list) is dict:
        function_call_list = [function_call_list]
    out = []
    for function_call in function_call_list:
        for key, value in function_call.items():
            if type(value) is str:
                value = json.loads(value)
            out.append(f"{key}({','.join([f'{k}={v!r}' for k, v in value.items()])})")
    return out


def package_tasks() -> dict[str, dict]:
    """Every multi-turn task of the package's data, with its possible_answer ground truth."""
    import bfcl_eval  # type: ignore[import-untyped]

    base = Path(bfcl_eval.__file__).parent / "data"
    tasks: dict[str, dict] = {}
    for path in sorted(base.glob("BFCL_v4_multi_turn_*.json")):
        with path.open() as f:
            for line in f:
                if line.strip():
                    entry = json.loads(line)
                    tasks[entry["id"]] = entry
        with (base / "possible_answer" / path.name).open() as f:
            for line in f:
                if line.strip():
                    answer = json.loads(line)
                    tasks[answer["id"]]["ground_truth"] = answer["ground_truth"]
    return tasks


def decode(record: dict) -> list[list[list[str]]] | None:
    """eval_runner._evaluate_single_multi_turn_entry's decoding (None: inference error)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (  # type: ignore[import-untyped]
        is_empty_execute_response,
    )

    if type(record["result"]) is not list:
        return None
    turns = []
    for turn in record["result"]:
        steps = []
        for step in turn:
            try:
                calls = convert_to_function_call(step)
            except Exception:  # noqa: BLE001, S112 — the runner skips undecodable steps
                continue
            if not is_empty_execute_response(calls):
                steps.append(calls)
        turns.append(steps)
    return turns


def bare_verdict(decoded: list | None, task: dict, model: str) -> tuple[bool, str | None]:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (  # type: ignore[import-untyped]
        multi_turn_checker,
    )

    if decoded is None:
        return False, "multi_turn:inference_error"
    if len(decoded) != len(task["ground_truth"]):
        return False, "multi_turn:force_terminated"
    r = multi_turn_checker(decoded, task["ground_truth"], task, task["id"].rsplit("_", 1)[0], model)
    return bool(r["valid"]), r.get("error_type")


def clear_package_instances() -> None:
    """The checker keeps every task's instances in its module's globals; a new repeat must start
    from none, as a fresh process does (else it reuses mutated instances)."""
    from bfcl_eval.eval_checker.multi_turn_eval import (
        multi_turn_utils,  # type: ignore[import-untyped]
    )

    for key in [k for k in vars(multi_turn_utils) if k.endswith("_instance")]:
        del vars(multi_turn_utils)[key]


def result_files(results: Path) -> list[tuple[str, Path]]:
    return [(p.parts[-3], p) for p in sorted(results.glob("*/multi_turn/*_result.json"))]


def read_records(results: Path, limit: int) -> list[tuple[str, dict]]:
    out = []
    for model, path in result_files(results):
        with path.open() as f:
            out += [(model, json.loads(line)) for line in f if line.strip()]
    return out[:limit] if limit else out


def bare_check_command(results: Path) -> None:
    """`bfcl evaluate` for the multi-turn files of DIR, reduced to its checking."""
    tasks = package_tasks()
    counts: dict[str, int] = {}
    for model, record in read_records(results, 0):
        valid, error = bare_verdict(decode(record), tasks[record["id"]], model)
        key = "valid" if valid else str(error)
        counts[key] = counts.get(key, 0) + 1
    print(json.dumps(counts, sort_keys=True))


# ---- the traces -----------------------------------------------------------------------------


def modified_task(task: dict, kind: str) -> dict:
    """The task with its ground truth changed for the model's side: one call dropped, or one
    argument's value changed (the checker still compares with the original)."""
    from traces.importers.bfcl import parse_call_string

    gt = [list(calls) for calls in task["ground_truth"]]
    turn = next((t for t, calls in enumerate(gt) if calls), None)
    if turn is None:
        return task
    i = len(gt[turn]) - 1
    if kind == "drop_call":
        del gt[turn][i]
    else:
        parsed = parse_call_string(gt[turn][i])
        if parsed is None:
            return task
        name, args = parsed
        key = next((k for k, v in args.items() if isinstance(v, str)), None)
        if key is None:
            return task
        args[key] += "_x"
        # positional arguments (parsed as _0, _1, …) stay positional
        parts = [repr(v) if re.fullmatch(r"_\d+", k) else f"{k}={v!r}" for k, v in args.items()]
        gt[turn][i] = f"{name}({','.join(parts)})"
    return {**task, "ground_truth": gt}


def write_results(out: Path, n: int) -> Path:
    """N records over the four categories as BFCL result files under OUT/result."""
    from traces.importers.bfcl import load_tasks
    from traces.samples.bfcl import build_record

    tasks = load_tasks()
    target = out / "result" / MODEL / "multi_turn"
    target.mkdir(parents=True, exist_ok=True)
    per = -(-n // len(CATEGORIES))
    for c, category in enumerate(CATEGORIES):
        with (target / f"BFCL_v4_multi_turn_{category}_result.json").open("w") as f:
            for i in range(max(min(per, n - c * per), 0)):
                task = tasks[f"multi_turn_{category}_{i}"]
                kind = {1: "drop_call", 3: "wrong_arg"}.get(i % 4)
                record, _ = build_record(modified_task(task, kind) if kind else task, seed=i)
                f.write(json.dumps(record) + "\n")
    return out / "result"


def copy_results(source: Path, out: Path, n: int) -> Path:
    """The first N records of real result files (SOURCE/<model>/multi_turn/*_result.json), in
    the same layout under OUT/result, so both commands see exactly these."""
    left = n
    for model, path in result_files(source):
        if left <= 0:
            break
        target = out / "result" / model / "multi_turn" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        with path.open() as f:
            lines = [line for line in f if line.strip()][:left]
        target.write_text("".join(lines))
        left -= len(lines)
    return out / "result"


# ---- measuring ------------------------------------------------------------------------------


def best(times: list[float]) -> float:
    return min(times)


def time_v(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one command, start to exit."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *argv], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{argv} failed:\n{proc.stderr[-3000:]}")

    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: ([\d.]+)", proc.stderr)
        return float(m.group(1)) if m else 0.0

    cpu = field("User time (seconds)") + field("System time (seconds)")
    rss = int(field("Maximum resident set size (kbytes)")) // 1024
    return wall, cpu, rss, proc.stdout.strip()


def in_process(records: list[tuple[str, dict]], result_dir: Path, repeat: int) -> None:
    from policies import Auditor
    from policies.environments.bfcl import BFCLEnvironment

    sys.path.insert(0, str(ROOT / "bench"))
    from real_twincheck import import_file  # type: ignore[import-not-found]

    tasks = package_tasks()
    decoded = [(model, decode(r), tasks[r["id"]]) for model, r in records]
    traces: list[list[dict]] = []
    for model, path in result_files(result_dir):
        rel = f"result/{model}/multi_turn/{path.name}"
        traces += list(import_file(path, "bfcl", rel))
    traces = traces[: len(records)]
    bare_s, ours_s = [], []
    bare: list[tuple[bool, str | None]] = []
    ours: list[bool | None] = []
    for _ in range(repeat):
        clear_package_instances()
        # CPU time of this process: the machine is shared, and both sides do only CPU work
        t0 = time.process_time()
        bare = [bare_verdict(d, task, model) for model, d, task in decoded]
        bare_s.append(time.process_time() - t0)
        auditor = Auditor(("twincheck",), judge="heuristic", environment=BFCLEnvironment())
        t0 = time.process_time()
        ours = [auditor.audit(events)["twincheck"].actor_success for events in traces]
        ours_s.append(time.process_time() - t0)
    clear_package_instances()
    agree = sum(1 for (v, _), o in zip(bare, ours, strict=True) if v is o)
    valid = sum(1 for v, _ in bare if v)
    print(f"{len(records)} traces: bare checker {valid} valid, {len(bare) - valid} invalid; "
          f"TwinCheck actor replay agrees on {agree}/{len(bare)}")  # fmt: skip
    a, b = best(bare_s), best(ours_s)
    print(f"in-process, CPU s, best of {repeat}: bare checker {a:.3f} s, TwinCheck + BFCL replay "
          f"{b:.3f} s: ratio {b / a:.2f}")  # fmt: skip
    paired = sorted(o / b for b, o in zip(bare_s, ours_s, strict=True))
    print(f"  median of the {repeat} paired ratios {paired[len(paired) // 2]:.2f}")
    print(f"  all runs: bare {[round(x, 3) for x in bare_s]}, ours {[round(x, 3) for x in ours_s]}")


def whole_commands(result_dir: Path, n: int, repeat: int) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from traces.models import Project

    env = dict(os.environ)
    py = str(ROOT / ".venv/bin/python")
    project = f"bench-bfcl-{time.time_ns()}"
    files = [str(p) for _, p in result_files(result_dir)]
    subprocess.run(
        [py, "manage.py", "ingest", *files, "--project", project, "--inline", "--json"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    bare_cmd = [py, str(Path(__file__).resolve()), "--bare-check", str(result_dir)]
    audit_cmd = [py, "manage.py", "audit", "--project", project, "--policies", "twincheck",
                 "--inline", "--json"]  # fmt: skip
    # Bytecode for the project's modules, as an installed copy has it (the package's was
    # written by pip); without it every start compiles ~190 modules from source.
    subprocess.run([py, "-m", "compileall", "-q", "auditor", "traces", "policies", "common"],
                   cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    runs: dict[str, list[tuple[float, float, int]]] = {"bare": [], "audit": []}
    try:
        time_v(bare_cmd, env)  # warm the file cache for both, unmeasured
        time_v(audit_cmd, env)
        for _ in range(repeat):
            wall, cpu, rss, out = time_v(bare_cmd, env)
            runs["bare"].append((wall, cpu, rss))
            wall, cpu, rss, counts = time_v(audit_cmd, env)
            runs["audit"].append((wall, cpu, rss))
    finally:
        Project.objects.filter(name=project).delete()
    print(f"bare checker verdicts: {out}")
    tc = json.loads(counts)["policies"]["twincheck"]
    print(f"audit: {json.loads(counts)['traces']} traces, actor ok {tc['actor_success']} of "
          f"{tc['actor_known']} known")  # fmt: skip
    bw, bc, br = (min(x[i] for x in runs["bare"]) for i in range(3))
    aw, ac, ar = (min(x[i] for x in runs["audit"]) for i in range(3))
    print(f"whole commands, best of {repeat} ({n} traces), start to exit:")
    print(f"  bare checker script:  wall {bw:5.2f} s  CPU {bc:5.2f} s  peak RSS {br} MB")
    print(f"  manage.py audit --policies twincheck --inline:  wall {aw:5.2f} s  CPU {ac:5.2f} s  "
          f"peak RSS {ar} MB")  # fmt: skip
    print(f"  ratios: wall {aw / bw:.2f}, CPU {ac / bc:.2f}, peak RSS {ar / br:.2f}")
    print(f"  all runs (wall, CPU, MB): bare {runs['bare']}, audit {runs['audit']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--results", type=Path, help="real result files (DIR/<model>/multi_turn)")
    ap.add_argument("--keep", type=Path, help="write the generated files here (else a temp dir)")
    ap.add_argument("--skip-commands", action="store_true", help="in-process only (no database)")
    ap.add_argument("--bare-check", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.bare_check:
        bare_check_command(a.bare_check)
        return
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        out = a.keep or Path(tmp)
        if a.results:
            result_dir = copy_results(a.results, out, a.traces)
        else:
            result_dir = write_results(out, a.traces)
        records = read_records(result_dir, a.traces)
        if len(records) < a.traces:
            sys.exit(f"{result_dir}: {len(records)} records, fewer than --traces {a.traces}")
        in_process(records, result_dir, a.repeat)
        if not a.skip_commands:
            whole_commands(result_dir, a.traces, a.repeat)


if __name__ == "__main__":
    main()
