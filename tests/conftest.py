"""Shared fixtures: personas, real services (PostgreSQL, Redis, a Celery worker process) and a
real browser.

A test that needs a service it cannot reach is skipped — unless TA_STRICT=1 (as in CI), where it
fails instead, so a missing service can never turn a red run green.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

REPO = Path(__file__).resolve().parent.parent
STRICT = os.environ.get("TA_STRICT", "") == "1"

# Hypothesis, for every property test: time is not a property. On a cold cache (every fresh CI
# checkout) the first text draw builds Hypothesis' Unicode charmap — 2.6 s here — and that time
# was counted against the first example, failing the too_slow health check; a loaded 2-core
# machine can likewise push an example past the 200 ms deadline. So the profile suppresses only
# too_slow and turns the deadline off; the health checks about the data itself (filter_too_much,
# data_too_large, …) stay on. Speed is measured in bench/, never asserted in tests.
hypothesis_settings.register_profile(
    "trace-auditor", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("trace-auditor")


def unavailable(reason: str) -> None:
    """Skip, or fail in strict mode."""
    if STRICT:
        pytest.fail(f"required in strict mode (TA_STRICT=1): {reason}")
    pytest.skip(reason)


@pytest.fixture(autouse=True, scope="session")
def _media_root(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Uploads of the test session go to a temporary folder shared with the worker process."""
    from django.conf import settings

    media = tmp_path_factory.mktemp("media")
    old = settings.MEDIA_ROOT
    settings.MEDIA_ROOT = media
    yield media
    settings.MEDIA_ROOT = old


@pytest.fixture(autouse=True)
def _cache_per_test(settings):  # type: ignore[no-untyped-def]
    """Each test sees an empty cache: the real backend (Redis in CI) under a key prefix of its
    own. The cache outlives test databases, so without this a test would read values another
    run's database produced, and authentication failures of one test would lock out the next."""
    import uuid

    settings.CACHES = {
        name: {**conf, "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}
        for name, conf in settings.CACHES.items()
    }


@pytest.fixture(autouse=True)
def _audit_lanes_closed():  # type: ignore[no-untyped-def]
    """An audit in this process leaves its read and write threads (auditor.runs.lanes) holding
    connections to the test database, which its teardown could not then drop: closed after
    each test that started them."""
    yield
    from auditor.runs import lanes

    lanes.shutdown()


# --- personas ----------------------------------------------------------------------------
@pytest.fixture
def alice(django_user_model):  # type: ignore[no-untyped-def]
    """Alice owns the project "alpha"."""
    return django_user_model.objects.create_user("alice", password="alice-pw")


@pytest.fixture
def charlie(django_user_model):  # type: ignore[no-untyped-def]
    """Charlie is an outsider: he should have no access to Alice's stuff."""
    return django_user_model.objects.create_user("charlie", password="charlie-pw")


@pytest.fixture
def project(alice):  # type: ignore[no-untyped-def]
    from traces.models import Membership, Project

    p = Project.objects.create(name="alpha")
    Membership.objects.create(project=p, user=alice, role=Membership.Role.OWNER)
    return p


@pytest.fixture
def token(project):  # type: ignore[no-untyped-def]
    """A project token with the write scope: the API tests upload and read with it."""
    from traces.models import ProjectToken

    _t, raw = ProjectToken.issue(project=project, name="agent", scope=ProjectToken.Scope.WRITE)
    return raw


@pytest.fixture
def upload_token(project):  # type: ignore[no-untyped-def]
    """A project token as issued by default: upload only."""
    from traces.models import ProjectToken

    _t, raw = ProjectToken.issue(project=project, name="uploader")
    return raw


# --- real services -----------------------------------------------------------------------
def _broker_url() -> str:
    from django.conf import settings

    return settings.CELERY_BROKER_URL


@pytest.fixture(scope="session")
def postgres(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    from django.db import connection

    if connection.vendor != "postgresql":
        unavailable("PostgreSQL: set DATABASE_URL=postgres://… (the README's test command does)")
    return connection.settings_dict


@pytest.fixture(scope="session")
def redis_broker():  # type: ignore[no-untyped-def]
    url = _broker_url()
    if not url.startswith("redis://"):
        unavailable("Redis: set CELERY_BROKER_URL=redis://… (the README's test command does)")
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis at {url} does not answer: {exc}")
    # Leftover messages of an earlier, interrupted run would be processed against this run's
    # database; start from an empty broker database.
    client.flushdb()
    return url


def _db_url(s: dict) -> str:
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    host = s.get("HOST") or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{s['NAME']}"


class WorkerProcess:
    """A real `celery worker` subprocess against the test database and broker."""

    def __init__(self, env: dict[str, str], log: Path, options: list[str] | None = None) -> None:
        self.env = env
        self.log = log
        # The worker's options; the default leaves out gossip, mingle and heartbeats for speed.
        # A test of the deployed shape passes docker/entrypoint.sh's own (None = the default).
        self.options = options
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        celery = shutil.which("celery", path=str(Path(sys.executable).parent)) or "celery"
        # The log is appended to across restarts: only what this start writes counts.
        offset = self.log.stat().st_size if self.log.exists() else 0
        self.proc = subprocess.Popen(
            [
                celery,
                "-A",
                "auditor",
                "worker",
                "-Q",
                "ingest,audit,export",
                *(
                    self.options
                    if self.options is not None
                    else [
                        "--concurrency",
                        "1",
                        "--pool",
                        "prefork",
                        "-l",
                        "info",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                    ]
                ),
            ],
            cwd=REPO,
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early; log:\n{self.log.read_text()[-3000:]}")
            if b"ready." in self.log.read_bytes()[offset:]:
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready after 60s; log:\n{self.log.read_text()[-3000:]}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="session")
def celery_worker_process(postgres, redis_broker, _media_root, tmp_path_factory):  # type: ignore[no-untyped-def]
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_db_url(postgres),
        CELERY_BROKER_URL=redis_broker,
        TA_MEDIA_ROOT=str(_media_root),
        DJANGO_SETTINGS_MODULE="auditor.settings",
        # The scripted model server (tests/fakes/openai_server.py) listens on 127.0.0.1, which
        # model requests may not reach by default; only that address is allowed, exactly.
        TA_MODEL_ALLOWED_HOSTS="127.0.0.1",
        # A program's wall clock well above its CPU limit: a looping candidate is stopped by the
        # CPU limit (a failure) even when other work on the machine slows it.
        TA_SANDBOX_TIMEOUT="90",
    )
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    worker = WorkerProcess(env, log)
    worker.start()
    yield worker
    worker.stop()


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


# --- browser -----------------------------------------------------------------------------
CHROMIUM = os.environ.get("TA_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).exists():
        unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    # Playwright runs an event loop in this thread; Django's ORM guard would otherwise refuse
    # the (synchronous, test-only) database work done around it.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()


def fuzz_examples(n: int) -> int:
    """Examples for a fuzz/property test: `n` in the normal run, TA_FUZZ_SCALE times more in a
    deep run (scripts/fuzz)."""
    return n * max(1, int(os.environ.get("TA_FUZZ_SCALE", "1")))


# --- model-backed audits -------------------------------------------------------------------
N_TRACES = 4  # traces of `lock_project`


@pytest.fixture()
def lock_project(project):  # type: ignore[no-untyped-def]
    """Alice's project with N_TRACES lock/unlock traces, one case each (tests.builders.v1)."""
    from tests.builders.v1 import lock_cases
    from traces.services import upload_create, upload_process

    up, _ = upload_create(
        project=project,
        fileobj=lock_cases(N_TRACES),
        filename="lock.jsonl",
        source="cli",
        enqueue=False,
    )
    assert upload_process(upload_id=up.pk).traces_accepted == N_TRACES
    return project


def decisions(run) -> list[tuple[str, str, bytes]]:  # type: ignore[no-untyped-def]
    """A run's results, comparable across runs: trace id, transition, the stored record."""
    from auditor.models import AuditResult

    rows = AuditResult.objects.filter(run=run).select_related("trace").order_by("trace_id")
    return [
        (
            r.trace.external_id,
            r.transition,
            json.dumps(
                [r.record, r.guarded_trajectory, r.guarded_success, r.continuation],
                sort_keys=True,
            ).encode(),
        )
        for r in rows
    ]
