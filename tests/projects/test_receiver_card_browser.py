"""The project page's "Send spans live" card: an owner creates an upload token and finds this
server's OTLP endpoint and the variables to set, with the new token filled in; the real OTel
SDK exporter sent with those values lands its spans in the buffer, and the card counts them as
waiting. Members who are not owners see no card. Both themes, desktop and phone width."""

from __future__ import annotations

import re

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.browsing import WIDE, login, shot, watch
from tests.importers.otlp_samples import openinference_spans
from traces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_owner_points_an_exporter_at_the_card_s_values(
    page, live_server, project, alice, django_user_model, tmp_path, monkeypatch
):
    # Completion is not what this test is about: its tasks are not queued.
    monkeypatch.setattr("traces.otlp_receiver.tasks.finish_later", lambda p, ts: True)
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    url = f"{live_server.url}{project.get_absolute_url()}"
    page.goto(url)
    assert "No spans wait" in page.inner_text("#receiver-backlog")
    page.fill("#token-name", "travel-agent")
    page.click("form:has(#token-name) button[type=submit]")
    page.wait_for_selector("#new-token")
    env = page.inner_text("#receiver-env")
    endpoint = re.search(r"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=(\S+)", env).group(1)  # type: ignore[union-attr]
    header = re.search(r"OTEL_EXPORTER_OTLP_HEADERS=authorization=(.+)", env).group(1)  # type: ignore[union-attr]
    assert endpoint == f"{live_server.url}/v1/traces"
    assert header == f"Bearer {page.inner_text('#new-token')}"

    spans = openinference_spans()
    exporter = OTLPSpanExporter(endpoint=endpoint, headers={"authorization": header})
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()

    page.goto(url)
    assert page.locator("#receiver-env").inner_text().count("ta_…") == 1  # the token: once only
    backlog = page.locator("#receiver-backlog")
    assert backlog.get_attribute("data-spans") == str(len(spans))
    assert f"{len(spans)} spans" in backlog.inner_text()
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(url)
            assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), (
                page.evaluate(WIDE)
            )
            page.locator("#receiver").scroll_into_view_if_needed()
            shot(page, tmp_path, f"project-receiver-{theme}-{width}.png", full_page=False)
    assert errors == [], errors

    bob = django_user_model.objects.create_user("bob", password="bob-pw")
    Membership.objects.create(project=project, user=bob, role=Membership.Role.ANNOTATOR)
    page.context.clear_cookies()
    login(page, live_server, "bob", "bob-pw")
    page.goto(url)
    assert page.locator("#receiver").count() == 0
