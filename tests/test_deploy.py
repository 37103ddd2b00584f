"""Deployment files stay valid: production settings pass `check --deploy`, compose validates."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import REPO, unavailable


def test_check_deploy_is_clean_under_production_settings(tmp_path):  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret"
    secret.write_text("x" * 64 + "-production-secret-for-the-check-only-0123456789")
    env = dict(
        os.environ,
        TA_PRODUCTION="1",
        DJANGO_SECRET_KEY_FILE=str(secret),
        DJANGO_ALLOWED_HOSTS="audit.example.org",
        TA_VAR_DIR=str(tmp_path / "var"),
    )
    env.pop("DJANGO_DEBUG", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by the browser fixture for the test process
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout


def test_production_refuses_to_start_without_a_secret(tmp_path):  # type: ignore[no-untyped-def]
    env = dict(os.environ, TA_PRODUCTION="1", TA_VAR_DIR=str(tmp_path / "var"))
    env.pop("DJANGO_SECRET_KEY", None)
    env.pop("DJANGO_SECRET_KEY_FILE", None)
    out = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "DJANGO_SECRET_KEY" in out.stderr


def test_compose_file_validates():
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        cmd = ["docker", "compose", "-f", "docker/compose.yml", "config", "--quiet"]
    elif shutil.which("docker-compose"):
        cmd = ["docker-compose", "-f", "docker/compose.yml", "config", "--quiet"]
    else:
        unavailable("neither `docker compose` nor `docker-compose` is installed")
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
