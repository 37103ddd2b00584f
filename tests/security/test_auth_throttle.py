"""Failed logins and bad bearer tokens are counted per client address and per account in the
shared cache (Redis in CI); past the limit, 429 with Retry-After until the lockout ends."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def limits(settings):  # type: ignore[no-untyped-def]
    settings.TA_AUTH_THROTTLE = {"login-ip": 6, "login-account": 3, "token-ip": 4}
    settings.TA_AUTH_LOCKOUT_SECONDS = 600
    return settings


def _login(client, username: str, password: str, ip: str = "10.0.0.1"):  # type: ignore[no-untyped-def]
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def test_account_locked_after_failures_even_with_the_right_password(client, alice, limits):
    for _ in range(2):
        assert _login(client, "alice", "wrong").status_code == 200
    r = _login(client, "alice", "wrong")
    assert r.status_code == 429 and int(r["Retry-After"]) > 500
    # Locked: the right password is refused too, from another address.
    r = _login(client, "alice", "alice-pw", ip="10.0.0.2")
    assert r.status_code == 429 and b"Too many failed log-ins" in r.content
    assert "_auth_user_id" not in client.session


def test_address_locked_across_accounts(client, alice, limits, django_user_model):
    for i in range(5):
        assert _login(client, f"nobody{i}", "x").status_code == 200
    assert _login(client, "nobody9", "x").status_code == 429
    # Another address still logs in.
    r = _login(client, "alice", "alice-pw", ip="10.9.9.9")
    assert r.status_code == 302


def test_success_resets_the_account_count(client, alice, limits):
    for _ in range(2):
        _login(client, "alice", "wrong")
    assert _login(client, "alice", "alice-pw").status_code == 302
    client.logout()
    for _ in range(2):
        assert _login(client, "alice", "wrong").status_code == 200


def test_bad_bearer_tokens_get_429_with_retry_after(limits, project, token):
    api = APIClient(REMOTE_ADDR="10.1.1.1")
    api.credentials(HTTP_AUTHORIZATION="Bearer ta_guess")
    codes = [api.get("/api/uploads/").status_code for _ in range(5)]
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]
    r = api.get("/api/uploads/")
    assert r.status_code == 429 and int(r["Retry-After"]) > 500
    # The address is locked for bad tokens; a real token from it still passes.
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/uploads/").status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Bearer ta_guess2")
    assert api.get("/api/uploads/").status_code == 429
    other = APIClient(REMOTE_ADDR="10.1.1.2")
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert other.get("/api/uploads/").status_code == 200


def test_counts_are_in_the_shared_cache_not_the_process(limits, settings):
    """gunicorn runs several processes: the counts must live outside any one of them."""
    backend = settings.CACHES["default"]["BACKEND"]
    assert backend.endswith(("RedisCache", "FileBasedCache", "DatabaseCache")), backend


def test_admin_login_has_the_same_limits(client, alice, limits):
    alice.is_staff = alice.is_superuser = True
    alice.save()
    for _ in range(2):
        r = client.post(
            "/admin/login/", {"username": "alice", "password": "no"}, REMOTE_ADDR="10.3.3.3"
        )
        assert r.status_code == 200
    r = client.post(
        "/admin/login/", {"username": "alice", "password": "no"}, REMOTE_ADDR="10.3.3.3"
    )
    assert r.status_code == 429 and "Retry-After" in r
    r = client.post(
        "/admin/login/", {"username": "alice", "password": "alice-pw"}, REMOTE_ADDR="10.3.3.4"
    )
    assert r.status_code == 429  # the account is locked


def test_admin_login_still_logs_in_staff(client, alice, limits):
    alice.is_staff = alice.is_superuser = True
    alice.save()
    page = client.get("/admin/login/")
    assert page.status_code == 200 and b'action="/admin/login/"' in page.content
    r = client.post(
        "/admin/login/?next=/admin/",
        {"username": "alice", "password": "alice-pw", "next": "/admin/"},
    )
    assert r.status_code == 302 and r["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


@pytest.mark.parametrize(
    "look_alike",
    ["ＡＬＩＣＥ", "Alice", " alice ", "ａｌｉｃｅ", "ALICE"],
)
def test_look_alike_names_count_against_one_account(client, alice, limits, look_alike):
    """The form hands the backend the NFKC-normalised name: its spellings share one lock."""
    assert _login(client, "alice", "wrong", ip="10.4.0.1").status_code == 200
    assert _login(client, look_alike, "wrong", ip="10.4.0.2").status_code == 200
    r = _login(client, "ａlice", "wrong", ip="10.4.0.3")
    assert r.status_code == 429
    r = _login(client, "alice", "alice-pw", ip="10.4.0.4")
    assert r.status_code == 429 and "_auth_user_id" not in client.session


def test_failed_password_logins_do_not_block_tokens_from_that_address(
    client, alice, limits, project, token
):
    for i in range(6):
        _login(client, f"nobody{i}", "x", ip="10.5.5.5")
    assert _login(client, "nobody", "x", ip="10.5.5.5").status_code == 429  # address locked
    api = APIClient(REMOTE_ADDR="10.5.5.5")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/uploads/").status_code == 200
