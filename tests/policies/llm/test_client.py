"""The model client against a real (scripted) HTTP server: caching, budget, bounds, retries,
hostile replies, and the API key never leaving the Authorization header."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from policies.llm import BUDGET_REACHED, Budget, FileCache, MemoryCache, ModelConfig, cache_key
from policies.llm.client import ModelClient, retry_after
from policies.llm.config import redact
from tests.fakes.openai_server import FakeOpenAI, Reply

from .conftest import KEY, LOCAL, client, config

HI = [{"role": "user", "content": "hi"}]


def test_a_call_returns_response_key_and_tokens_and_is_cached(server: FakeOpenAI) -> None:
    server.queue(Reply.text("hello", usage=(7, 3)))
    c = client(server)
    first = c.chat(HI, purpose="test")
    assert first.ok and first.text == "hello" and not first.cached
    assert first.tokens == 10 and not first.tokens_estimated
    assert first.key == cache_key(server.bodies()[0], c.scope)
    again = c.chat(HI, purpose="test")
    assert again.cached and again.text == "hello" and again.response == first.response
    assert server.count == 1
    assert again.ref() == first.ref()  # records do not say whether the cache served them
    stats = c.stats.to_dict()
    assert (stats["calls"], stats["cache_hits"], stats["cache_misses"]) == (2, 1, 1)
    assert stats["http_requests"] == 1 and stats["tokens"] == 20


def test_request_carries_model_parameters_and_the_key_only_in_the_header(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.queue(Reply.text("ok"))
    cache = FileCache(tmp_path)
    c = client(server, cache=cache, seed=7, max_tokens=50)
    call = c.chat(HI, purpose="test")
    req = server.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.body == {
        "model": "fake-model",
        "messages": HI,
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 50,
    }
    stored = (tmp_path / call.key[:2] / f"{call.key}.json").read_text()
    for text in (stored, json.dumps(call.ref()), repr(c), json.dumps(c.config.to_dict())):
        assert KEY not in text


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("api_key", KEY, "api_key: the key itself is never a setting"),
        ("api_key_env", "DJANGO_SECRET_KEY", "api_key_env: a server environment variable"),
        ("api_key_file", "/etc/hostname", "api_key_file: a server file cannot be named"),
    ],
)
def test_settings_name_no_key_and_no_source_of_one(field: str, value: str, message: str) -> None:
    """Settings cannot make a client read an environment variable or a file: the key is
    handed over by the caller only."""
    with pytest.raises(ValueError, match=message) as exc:
        ModelConfig.from_mapping({"model": "m", "base_url": "https://x.example/v1", field: value})
    assert "model endpoint" in str(exc.value) and KEY not in str(exc.value)


def test_settings_reject_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ValueError, match="unknown model settings: modle"):
        ModelConfig.from_mapping({"modle": "m"})
    with pytest.raises(ValueError, match="base_url") as exc:
        ModelConfig(model="m", base_url="ftp://user:pw@host")
    assert "pw" not in str(exc.value)
    with pytest.raises(ValueError, match="timeout"):
        ModelConfig(model="m", base_url="http://x/v1", timeout=0)


def test_redact_scrubs_keys_bearer_tokens_and_url_credentials() -> None:
    text = f"failed http://bob:hunter2@h/v1 Authorization: Bearer abc.def {KEY}"
    out = redact(text, (KEY,))
    assert KEY not in out and "hunter2" not in out and "abc.def" not in out


def test_an_error_body_echoing_the_key_is_redacted(server: FakeOpenAI) -> None:
    server.queue(Reply.json({"error": {"message": f"bad key {KEY}"}}, status=401))
    call = client(server).chat(HI, purpose="test")
    assert call.error is not None and call.error.startswith("HTTP 401")
    assert KEY not in call.error and "[redacted]" in call.error


HOSTILE = [
    (Reply.garbage(), "malformed response: the endpoint answered with non-JSON (HTTP 200"),
    (Reply.json({"choices": []}), "malformed response: no choices"),
    (Reply.json({"choices": [{"message": {"content": 3}}]}), "malformed response"),
    (Reply.json([1, 2]), "malformed response: expected a JSON object"),
    (Reply.huge(5_000_000), "response too large"),
    (Reply.huge(5_000_000, declare_length=False), "response too large"),
    (Reply.gzip_bomb(200_000_000), "response too large"),
    (Reply.error(400), "HTTP 400"),
    (Reply.refusal("No."), "model refused: No."),
    (Reply.json({"error": {"message": "overloaded"}}), "the endpoint returned an error"),
]


@pytest.mark.parametrize("reply,reason", HOSTILE, ids=lambda x: str(x)[:30])
def test_hostile_replies_fail_only_that_call_with_a_reason(
    server: FakeOpenAI, reply: Reply, reason: str
) -> None:
    c = client(server, max_response_bytes=1_000_000)
    server.queue(reply)
    call = c.chat(HI, purpose="test")
    assert call.error is not None and call.error.startswith(reason), call.error
    assert server.count == 1  # none of these is retried
    server.queue(Reply.text("fine"))
    assert c.chat([{"role": "user", "content": "next"}], purpose="test").text == "fine"


def test_hang_times_out_and_is_retried(server: FakeOpenAI) -> None:
    c = client(server, timeout=0.3, max_retries=1)
    server.queue(Reply(hang=3), Reply(hang=3))
    t = time.monotonic()
    call = c.chat(HI, purpose="test")
    assert "timeout waiting for data" in (call.error or "") and "after 2 attempts" in call.error
    assert time.monotonic() - t < 2.0 and server.count == 2


def test_a_trickled_body_is_cut_off(server: FakeOpenAI) -> None:
    c = client(server, timeout=0.3, max_retries=0)
    server.queue(Reply.text("x" * 400, trickle=0.05, chunk=2))
    t = time.monotonic()
    call = c.chat(HI, purpose="test")
    assert "response body was not complete" in (call.error or "")
    assert time.monotonic() - t < 1.5


def test_dropped_connection_is_retried_then_succeeds(server: FakeOpenAI) -> None:
    server.queue(Reply(drop=True), Reply.error(500), Reply.text("ok"))
    call = client(server).chat(HI, purpose="test")
    assert call.text == "ok" and call.attempts == 3 and server.count == 3


def test_429_waits_as_long_as_retry_after_says(server: FakeOpenAI) -> None:
    server.queue(Reply.error(429, retry_after="1"), Reply.text("ok"))
    t = time.monotonic()
    call = client(server).chat(HI, purpose="test")
    assert call.text == "ok" and time.monotonic() - t >= 1.0


def test_retry_after_beyond_the_cap_fails_at_once(server: FakeOpenAI) -> None:
    server.queue(Reply.error(429, retry_after="3600"))
    t = time.monotonic()
    call = client(server, retry_after_max=5).chat(HI, purpose="test")
    assert "Retry-After 3600 s exceeds the 5 s cap" in (call.error or "")
    assert time.monotonic() - t < 1 and server.count == 1


def test_persistent_500_gives_up_after_the_retries(server: FakeOpenAI) -> None:
    server.queue(*[Reply.error(500)] * 5)
    call = client(server, max_retries=2).chat(HI, purpose="test")
    assert call.error is not None and call.error.startswith("HTTP 500") and server.count == 3


def test_failures_are_not_cached_so_a_rerun_tries_again(server: FakeOpenAI) -> None:
    cache = MemoryCache()
    server.queue(Reply.garbage())
    assert client(server, cache=cache).chat(HI, purpose="t").error is not None
    server.queue(Reply.text("ok"))
    assert client(server, cache=cache).chat(HI, purpose="t").text == "ok"
    assert len(cache) == 1


def test_refusals_are_cached_model_answers(server: FakeOpenAI) -> None:
    cache = MemoryCache()
    server.queue(Reply.refusal())
    first = client(server, cache=cache).chat(HI, purpose="t")
    again = client(server, cache=cache).chat(HI, purpose="t")
    assert first.error == again.error and again.cached and server.count == 1


def test_retry_after_parses_seconds_and_http_dates() -> None:
    assert retry_after("2") == 2.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after("soon") is None and retry_after(None) is None


def test_budget_of_calls_stops_calls_and_says_so(server: FakeOpenAI) -> None:
    server.responder = lambda body: Reply.text("ok")
    budget = Budget(max_calls=2)
    c = client(server, budget=budget)
    calls = [c.chat([{"role": "user", "content": str(i)}], purpose="t") for i in range(4)]
    assert [x.error for x in calls] == [None, None, BUDGET_REACHED, BUDGET_REACHED]
    assert calls[2].budget_reached and budget.reached and server.count == 2
    assert budget.state().message().startswith("Model budget reached (2 of 2 model calls")


def test_budget_of_tokens(server: FakeOpenAI) -> None:
    server.responder = lambda body: Reply.text("ok", usage=(60, 10))
    budget = Budget(max_tokens=100)
    c = client(server, budget=budget)
    errors = [c.chat([{"role": "user", "content": str(i)}], purpose="t").error for i in range(3)]
    assert errors == [None, None, BUDGET_REACHED]  # 70, then 140 ≥ 100: no third call


def test_cache_hits_count_against_the_budget_so_reruns_stop_at_the_same_call(
    server: FakeOpenAI,
) -> None:
    server.responder = lambda body: Reply.text("ok")
    cache = MemoryCache()
    runs = []
    for _ in range(2):
        c = client(server, cache=cache, budget=Budget(max_calls=2))
        runs.append(
            [c.chat([{"role": "user", "content": str(i)}], purpose="t").error for i in range(3)]
        )
    assert runs[0] == runs[1] == [None, None, BUDGET_REACHED]
    assert server.count == 2


def test_a_server_without_usage_figures_is_charged_an_estimate(server: FakeOpenAI) -> None:
    server.queue(Reply.text("ok", usage=None))
    call = client(server).chat(HI, purpose="t")
    assert call.tokens_estimated and call.tokens > 0


def test_offline_mode_serves_the_cache_and_fails_a_miss_without_a_request(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.queue(Reply.text("cached"))
    client(server, cache=FileCache(tmp_path)).chat(HI, purpose="t")
    offline = ModelConfig(model="fake-model", offline=True, base_url=server.url)
    off = ModelClient(offline, cache=FileCache(tmp_path))
    assert off.chat(HI, purpose="t").text == "cached"
    miss = off.chat([{"role": "user", "content": "new"}], purpose="t")
    assert miss.error == "not in cache (offline mode)" and server.count == 1


def test_file_cache_ignores_a_damaged_entry(tmp_path: Path) -> None:
    cache = FileCache(tmp_path)
    req = {"model": "m", "messages": HI}
    key = cache_key(req)
    cache.put(key, req, {"choices": []})
    assert cache.get(key) == {"choices": []}
    path = tmp_path / key[:2] / f"{key}.json"
    path.write_text(path.read_text().replace('"m"', '"other"'))
    assert cache.get(key) is None
    path.write_text("{not json")
    assert cache.get(key) is None and cache.get("0" * 64) is None
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def test_concurrent_requests_per_endpoint_are_bounded(server: FakeOpenAI) -> None:
    live = {"now": 0, "max": 0}
    lock = threading.Lock()

    def slow(body: dict) -> Reply:
        with lock:
            live["now"] += 1
            live["max"] = max(live["max"], live["now"])
        time.sleep(0.2)
        with lock:
            live["now"] -= 1
        return Reply.text("ok")

    server.responder = slow
    c = client(server, max_concurrency=2)
    threads = [
        threading.Thread(
            target=c.chat, args=([{"role": "user", "content": str(i)}],), kwargs={"purpose": "t"}
        )
        for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.count == 6 and live["max"] == 2


def test_the_key_is_the_one_each_client_is_given(server: FakeOpenAI) -> None:
    server.queue(Reply.text("ok"), Reply.text("ok"))
    ModelClient(config(server), api_key="other", guard=LOCAL).chat(HI, purpose="t")
    ModelClient(config(server), guard=LOCAL).chat(HI, purpose="t2")
    assert server.requests[0].headers["Authorization"] == "Bearer other"
    assert "Authorization" not in server.requests[1].headers
