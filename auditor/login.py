"""The login page with failure limits per client address and per account (common/throttle.py):
429 with Retry-After once either is locked, before the password is hashed (deliberately costly)."""

from __future__ import annotations

import unicodedata
from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from common import throttle


def account_key(raw: object) -> str:
    """The account a login attempt counts against: the name as the login form hands it to the
    authentication backend (stripped, NFKC-normalised: `UsernameField`), case-folded, so
    look-alike spellings of one name (full-width letters, ligatures, another case) share one
    counter and one lock."""
    return unicodedata.normalize("NFKC", str(raw).strip()).casefold()[:150]


class ThrottledLoginView(auth_views.LoginView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        ip = throttle.client_ip(request)
        account = account_key(request.POST.get("username", ""))
        by_ip, by_account = throttle.policy("login-ip"), throttle.policy("login-account")
        wait = max(throttle.retry_after(by_ip, ip), throttle.retry_after(by_account, account))
        if wait:
            return self._locked(request, wait)
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            throttle.reset(by_account, account)
            return response
        locked = max(
            throttle.record_failure(by_ip, ip),
            throttle.record_failure(by_account, account) if account else 0,
        )
        return self._locked(request, locked) if locked else response

    def _locked(self, request: HttpRequest, wait: int) -> HttpResponse:
        response = render(
            request,
            "registration/login.html",
            {"locked_minutes": max(1, round(wait / 60)), "next": request.POST.get("next", "")},
            status=429,
        )
        response["Retry-After"] = str(wait)
        return response
