"""The sandbox that labels code candidates: whatever a candidate does ends as
that candidate's labelled failure — or, stopped at the wall clock twice, its unknown label —
and the calling process (a worker) carries on."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from policies.labels import CandidateLabel, apply_labels, human_labels
from policies.sandbox.code_tests import execute_hidden_tests, hidden_test_program, program_key
from policies.sandbox.process import SandboxDisabled, SandboxSettings, _classify, run_program
from policies.trace import Trace
from tests.conftest import unavailable

FAST = SandboxSettings(enabled=True, timeout_s=4.0, cpu_s=3)


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available() -> None:
    res = run_program("print(1)", FAST)
    if res.status == "unavailable":
        unavailable(f"the sandbox needs bubblewrap, libseccomp and user namespaces: {res.detail}")


@pytest.fixture
def listener() -> Iterator[tuple[int, list[Any]]]:
    """A real TCP server on the host's loopback, counting the connections it accepts."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    accepted: list[Any] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            accepted.append(conn)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], accepted
    stop.set()
    t.join()
    srv.close()


def processes_with(token: str) -> list[int]:
    """Host processes whose command line contains ``token``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(pid))
    return found


def candidate_trace(bodies: dict[str, str]) -> list[dict[str, Any]]:
    """A repair-run-shaped trace: hidden tests in the header, one candidate per body."""
    events: list[dict[str, Any]] = [
        {
            "trace_id": "sb",
            "type": "trace",
            "task": {"id": "sb", "prompt": "def f():\n    '''Return 1.'''\n", "entry_point": "f"},
            "labels": {"hidden_tests": "def check(candidate):\n    assert candidate() == 1\n"},
        }
    ]
    for i, (cid, body) in enumerate(bodies.items()):
        events.append(
            {
                "trace_id": "sb",
                "type": "candidate",
                "candidate_id": cid,
                "round": i,
                "content": body,
            }
        )
    return events


def test_hostile_candidates_end_as_their_own_labelled_failures(
    tmp_path: Path, listener: tuple[int, list[Any]]
) -> None:
    port, accepted = listener
    token = f"{uuid.uuid4().int % 10**9 + 10**9}"  # a unique `sleep` argument
    outside = tmp_path / "escaped.txt"
    bodies = {
        "infinite_loop": "def f():\n    while True:\n        pass\n",
        "children": (
            "import os, sys, time\n"
            "def f():\n"
            "    for _ in range(20):  # bounded here: root ignores process-count limits\n"
            "        if os.fork() == 0:\n"
            "            os.execv(sys.executable,\n"
            f"                     ['python', '-c', 'import time; time.sleep({token})'])\n"
            "    while True:\n"
            "        time.sleep(1)\n"
        ),
        "allocate_10gb": "def f():\n    block = bytearray(10 * 1024**3)\n    return 1\n",
        "network": (
            "import socket\n"
            "def f():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
            "    return 1\n"
        ),
        "write_outside": f"def f():\n    open({str(outside)!r}, 'w').write('x')\n    return 1\n",
        "exit_early": "import sys\ndef f():\n    sys.exit(0)\n",
        "correct": (
            "def f():\n"
            "    with open('scratch.txt', 'w') as fh:  # the scratch directory is writable\n"
            "        fh.write('ok')\n"
            "    return 1\n"
        ),
    }
    labels, stats = execute_hidden_tests([candidate_trace(bodies)], FAST, workers=2)
    got = {cid: labels[("sb", cid)] for cid in bodies}
    assert all(lab.source == "executed" for lab in got.values())
    assert got["correct"].valid is True and got["correct"].detail == "hidden tests passed"
    # a program stopped at the wall clock twice did not get to finish: unknown, not failed
    wall = "wall-clock limit: killed at the wall-clock limit"
    assert got["children"].valid is None and got["children"].detail == wall
    for cid in bodies:
        if cid not in ("correct", "children", "infinite_loop"):
            assert got[cid].valid is False, (cid, got[cid])
    # whichever limit comes first: 3 CPU seconds, or 4 s of wall clock (twice) on a loaded machine
    assert (got["infinite_loop"].valid, got["infinite_loop"].detail) in (
        (None, wall),
        (False, "failed: CPU time limit"),
    )
    assert "MemoryError" in got["allocate_10gb"].detail
    assert "PermissionError" in got["network"].detail  # the seccomp filter: no socket at all
    assert "No such file or directory" in got["write_outside"].detail  # the host's dirs: absent
    assert got["exit_early"].detail == "failed: exited before the tests finished"
    assert accepted == [] and not outside.exists()
    assert processes_with(token) == []  # every child died with the namespace
    assert stats["timeout"] + stats["failed"] == 6 and stats["timeout"] >= 1
    assert stats["passed"] == 1 and stats["programs run"] == 7
    # the caller is alive and the sandbox still works
    assert run_program("print('still here')", FAST).status == "passed"


def test_a_candidate_cannot_escalate_or_reach_devices() -> None:
    probe = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.mount(None, b'/', None, 32 | 4096, None) != 0  # no remount: no caps\n"
        "assert sorted(os.listdir('/dev')) == ['null', 'random', 'urandom', 'zero']\n"
        "try:\n"
        "    open('/proc/sys/kernel/hostname', 'w').write('x')\n"
        "except OSError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('wrote to /proc/sys')\n"
        "assert sorted(int(p) for p in os.listdir('/proc') if p.isdigit()) == [1, os.getpid()]\n"
        "print('contained')\n"
    )
    res = run_program(probe, FAST, marker="contained")
    assert res.status == "passed", res.stderr
    bomb = run_program("import os\nwhile True:\n    os.fork()\n", FAST)
    if bomb.process_limit:  # a pids cgroup could be made: the fork bomb hits it
        assert bomb.status == "failed" and "Resource temporarily unavailable" in bomb.detail
    big = run_program("open('big', 'wb').write(b'x' * (64 << 20))", FAST)
    assert big.status == "failed" and "File too large" in big.detail


def test_execution_is_off_by_default_and_never_labels_what_did_not_run() -> None:
    with pytest.raises(SandboxDisabled):
        run_program("print(1)", SandboxSettings())
    with pytest.raises(SandboxDisabled):
        execute_hidden_tests(
            [candidate_trace({"a": "def f():\n    return 1\n"})], SandboxSettings()
        )
    broken = SandboxSettings(enabled=True, python="/nonexistent/python3")
    res = run_program("print(1)", broken)
    assert res.status == "unavailable" and res.passed is None
    assert res.detail.startswith("sandbox unavailable: interpreter /nonexistent/python3")
    labels, stats = execute_hidden_tests(
        [candidate_trace({"a": "def f():\n    return 1\n"})], broken
    )
    # unknown, with the reason — never a failure, and never run any weaker way
    assert labels == {("sb", "a"): CandidateLabel(None, "executed", res.detail)}
    assert stats["unavailable"] == 1
    events = apply_labels(candidate_trace({"a": "x"}), labels).events
    assert "valid" not in events[1]["labels"]
    assert events[1]["labels"]["label_detail"].startswith("sandbox unavailable: ")
    no_bwrap = SandboxSettings(enabled=True, bwrap="/nonexistent/bwrap")
    res = run_program("print(1)", no_bwrap)
    assert res.status == "unavailable" and "bubblewrap (/nonexistent/bwrap) not found" in res.detail


def test_hidden_test_programs_for_humaneval_and_mbpp_shapes() -> None:
    humaneval = Trace.from_events(candidate_trace({"a": "def f():\n    return 1\n"}))
    prog = hidden_test_program(humaneval, "def f():\n    return 1\n", "MARK")
    assert prog is not None
    assert prog.index("Return 1.") < prog.index("return 1") < prog.index("def check")
    assert prog.rstrip().endswith("check(f)\n\nprint('MARK')")
    mbpp = candidate_trace({"a": ""})
    mbpp[0]["task"]["prompt"] = "Write a function f that returns 1."  # prose: not prepended
    mbpp[0]["labels"]["hidden_tests"] = "def check(candidate):\n    assert f() == 1\ncheck(f)\n"
    prog = hidden_test_program(Trace.from_events(mbpp), "def f():\n    return 1\n", "M")
    assert prog is not None and "Write a function" not in prog and prog.count("check(f)") == 1
    no_tests = candidate_trace({"a": ""})
    del no_tests[0]["labels"]
    assert hidden_test_program(Trace.from_events(no_tests), "x", "M") is None


def test_label_precedence_recorded_then_human_then_executed() -> None:
    events = candidate_trace({"a": "x", "b": "y", "c": "z"})
    events[1]["labels"] = {"valid": True}
    executed = {
        ("sb", "a"): CandidateLabel(False, "executed", "failed: AssertionError"),
        ("sb", "b"): CandidateLabel(False, "executed", "failed: AssertionError"),
        ("sb", "c"): CandidateLabel(True, "executed", "hidden tests passed"),
    }
    human = human_labels({("sb", "b"): True})
    out = apply_labels(events, executed, human)
    a, b, c = out.events[1:]
    assert a is events[1] and a["labels"] == {"valid": True}  # recorded stays, same dict
    assert b["labels"]["valid"] is True and b["labels"]["label_source"] == "human"
    assert c["labels"] == {
        "valid": True,
        "label_source": "executed",
        "label_detail": "hidden tests passed",
    }
    assert out.applied == {"a": "recorded", "b": "human", "c": "executed"}
    assert [x["candidate_id"] for x in out.conflicts] == ["a", "b"]
    assert "labels" not in events[2]  # the input is never modified


def test_a_failure_names_the_programs_error_not_a_dying_childs_half_traceback() -> None:
    # What CI once saw from a fork bomb: the program's error, then a child's traceback cut off
    # when the PID namespace died with the program.
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/x/scratch/program.py", line 3, in <module>\n'
        "    os.fork()\n"
        "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/x/scratch/program.py", line 3, in <module>\n'
    )
    assert _classify(1, False, True, "", stderr, None) == (
        "failed",
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
    )
    assert _classify(1, False, True, "", "  only indented\n", None) == ("failed", "only indented")
    assert _classify(3, False, True, "", "", None) == ("failed", "exit status 3")


class DictStore:
    """A `ResultStore` in a dict."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[bool, str]] = {}

    def get_many(self, keys: Collection[str]) -> dict[str, tuple[bool, str]]:
        return {k: self.kept[k] for k in keys if k in self.kept}

    def put_many(self, outcomes: Mapping[str, tuple[bool, str]]) -> None:
        self.kept.update(outcomes)


def test_a_store_keeps_passed_and_failed_outcomes_and_a_later_run_runs_only_the_rest() -> None:
    bodies = {
        "correct": "def f():\n    return 1\n",
        "wrong": "def f():\n    return 2\n",
        "same_as_correct": "def f():\n    return 1\n",
        "slow": "import time\ndef f():\n    time.sleep(60)\n",  # the wall clock ends it
    }
    quick = SandboxSettings(enabled=True, timeout_s=1.5, cpu_s=3)
    store = DictStore()
    first, stats = execute_hidden_tests([candidate_trace(bodies)], quick, workers=2, store=store)
    assert stats["programs run"] == 3 and stats["outcomes reused"] == 0  # two bodies are one
    assert len(store.kept) == 2  # passed and failed; the timeout depends on the machine's load
    again, stats = execute_hidden_tests([candidate_trace(bodies)], quick, workers=2, store=store)
    assert again == first  # the same labels, details included
    assert stats["programs run"] == 1 and stats["outcomes reused"] == 2  # only the timeout ran
    assert stats["passed"] == 2 and stats["failed"] == 1 and stats["timeout"] == 1
    # other limits, or other tests: other programs, run anew
    other = SandboxSettings(enabled=True, timeout_s=1.5, cpu_s=2)
    _, stats = execute_hidden_tests([candidate_trace(bodies)], other, workers=2, store=store)
    assert stats["outcomes reused"] == 0 and stats["programs run"] == 3
    changed = candidate_trace(bodies)
    changed[0]["labels"] = {"hidden_tests": "def check(candidate):\n    assert candidate() == 2\n"}
    relabelled, stats = execute_hidden_tests([changed], quick, workers=2, store=store)
    assert stats["outcomes reused"] == 0
    assert relabelled[("sb", "wrong")].valid and not relabelled[("sb", "correct")].valid
    # a program's key does not contain the run's random marker: a stored pass is this program's
    trace = Trace.from_events(candidate_trace(bodies))
    assert program_key(trace, bodies["correct"], quick) == program_key(
        trace, bodies["same_as_correct"], quick
    )
    key = program_key(trace, bodies["correct"], quick)
    assert key != program_key(trace, bodies["wrong"], quick)


def test_the_wait_ends_at_the_programs_exit_or_its_limit_with_or_without_pidfds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quick = SandboxSettings(enabled=True, timeout_s=1.5, cpu_s=3)
    sleeper = "import time\ntime.sleep(60)\n"
    for pidfds in (True, False):
        if not pidfds:  # Linux before 5.3: Popen.wait's polling
            monkeypatch.delattr(os, "pidfd_open")
        done = run_program("print('hi')", quick)
        assert (done.status, done.stdout) == ("passed", "hi\n"), pidfds
        late = run_program(sleeper, quick)
        assert late.status == "timeout" and late.duration_s >= 1.5, pidfds


def test_programs_import_the_standard_library_and_numpy_and_nothing_else_installed() -> None:
    ok = run_program(
        "import json, hashlib, ctypes, sqlite3, numpy\nprint(int(numpy.arange(4).sum()))\n", FAST
    )
    assert ok.status == "passed" and ok.stdout == "6\n", ok.stderr
    for name in ("django", "psycopg", "policies", "pytest"):  # the worker's own packages
        res = run_program(f"import {name}\n", FAST)
        assert res.detail == f"ModuleNotFoundError: No module named '{name}'", res.detail
    bare = run_program("import numpy\n", SandboxSettings(enabled=True, packages=()))
    assert bare.detail == "ModuleNotFoundError: No module named 'numpy'"
