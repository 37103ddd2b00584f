from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from auditor import env
from tests.conftest import REPO


def test_env_example_lists_every_variable_the_settings_read():
    read = set()
    for path in (REPO / "auditor").glob("*.py"):
        read |= set(
            re.findall(r'env_(?:str|bool|int|float|list)\(\s*"([A-Z_]+)"', path.read_text())
        )
    listed = set(re.findall(r"^([A-Z_]+)=", (REPO / ".env.example").read_text(), re.M))
    assert read and read <= listed, f"missing from .env.example: {sorted(read - listed)}"


def test_bad_integer_names_the_variable(monkeypatch):
    monkeypatch.setenv("TA_X", "12MB")
    with pytest.raises(ImproperlyConfigured, match="TA_X='12MB' is not an integer"):
        env.env_int("TA_X", 1)


def test_integer_minimum(monkeypatch):
    monkeypatch.setenv("TA_X", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env.env_int("TA_X", 5, minimum=1)


def test_bad_boolean(monkeypatch):
    monkeypatch.setenv("TA_B", "maybe")
    with pytest.raises(ImproperlyConfigured, match="not a boolean"):
        env.env_bool("TA_B")


def test_secret_from_file(monkeypatch, tmp_path):
    secret = tmp_path / "s"
    secret.write_text("  hunter2\n")
    monkeypatch.setenv("TA_S_FILE", str(secret))
    assert env.env_str("TA_S") == "hunter2"


def test_unreadable_secret_file(monkeypatch, tmp_path):
    monkeypatch.setenv("TA_S_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="TA_S_FILE"):
        env.env_str("TA_S")
