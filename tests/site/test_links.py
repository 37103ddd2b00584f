"""traces links to the pages of its objects by the names the project gives in TRACES_PAGES, and
falls back to its own pages and API without them (traces knows nothing of auditor)."""

from __future__ import annotations

import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_models_link_to_the_pages_named_in_settings(project):  # type: ignore[no-untyped-def]
    assert project.get_absolute_url() == reverse("auditor:project", args=[project.pk])


@pytest.mark.django_db
def test_without_the_setting_traces_links_to_its_own_pages(project, settings):  # type: ignore[no-untyped-def]
    from traces.links import page_url

    settings.TRACES_PAGES = {}
    assert project.get_absolute_url() == reverse("traces:home")
    assert page_url("trace", 5) == reverse("api:trace-detail", args=[5])
    assert page_url("trace-list", project.pk) == reverse("api:trace-list")
