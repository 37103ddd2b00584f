"""A scripted OpenAI-compatible server per test, and clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from policies.llm import ModelClient, ModelConfig
from policies.llm.netguard import AddressGuard
from tests.fakes.openai_server import FakeOpenAI

KEY = "sk-test-0123456789-secret"
# The scripted server listens on loopback, which model requests may not reach by default.
LOCAL = AddressGuard(["127.0.0.1"])


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    s = FakeOpenAI().start()
    yield s
    s.stop()


def config(server: FakeOpenAI, **kw: Any) -> ModelConfig:
    values: dict[str, Any] = {
        "base_url": server.url,
        "model": "fake-model",
        "timeout": 2.0,
        "max_retries": 2,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
    }
    values.update(kw)
    return ModelConfig(**values)


def client(server: FakeOpenAI, **kw: Any) -> ModelClient:
    extra = {k: kw.pop(k) for k in ("cache", "budget", "stats") if k in kw}
    return ModelClient(config(server, **kw), api_key=KEY, guard=LOCAL, **extra)
