"""Schemathesis drives the API from its own OpenAPI schema: whatever it sends, no 5xx.

Schemathesis's pytest plugin does not run under pytest 9 (it reads a removed private
attribute), so the operations are walked here and each one's strategy is driven by
hypothesis directly.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.conftest import fuzz_examples

pytestmark = pytest.mark.django_db

EXAMPLES_PER_OPERATION = fuzz_examples(30)


@pytest.fixture
def keep_test_connection():  # type: ignore[no-untyped-def]
    """Schemathesis calls the WSGI app directly, whose request signals would close the test's
    database connection mid-transaction; Django's own test client disconnects them the same
    way."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_api_answers_without_server_errors(token, keep_test_connection):  # type: ignore[no-untyped-def]
    from auditor.wsgi import application

    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5  # the schema really lists the API
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case):  # type: ignore[no-untyped-def]
            response = case.call(headers={"Authorization": f"Bearer {token}"})
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path}: {response.status_code} "
                    f"{response.text[:300]}"
                )

        check()
    assert failures == []
