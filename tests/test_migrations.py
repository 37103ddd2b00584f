import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor


@pytest.mark.django_db
def test_no_missing_migrations():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


# What auditor's migration 0005 created before search moved to traces.
LEGACY_SEARCH_TABLE = """
CREATE TABLE auditor_eventsearch (
    event_id bigint PRIMARY KEY, trace_id bigint NOT NULL, document tsvector NOT NULL
);
CREATE INDEX eventsearch_document ON auditor_eventsearch USING gin (document);
CREATE INDEX eventsearch_trace ON auditor_eventsearch (trace_id);
INSERT INTO auditor_eventsearch VALUES (7, 3, to_tsvector('simple', 'quokka wombat'));
"""
# What auditor's migration 0002 created (a database that never ran 0005).
LEGACY_FTS_INDEX = (
    "CREATE INDEX event_payload_fts ON traces_event USING gin "
    "(to_tsvector('simple'::regconfig, left((payload)::text, 100000)))"
)


def _tables() -> set[str]:
    with connection.cursor() as cur:
        return set(connection.introspection.table_names(cur))


def _index_exists(name: str) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [name])
        return cur.fetchone() is not None


@pytest.mark.parametrize("legacy", ["search_table", "fts_index"])
def test_a_database_of_the_old_layout_migrates_forward_keeping_search_rows(
    postgres, transactional_db, legacy
):  # type: ignore[no-untyped-def]
    """The search table moved from auditor to traces: a database migrated by the old auditor
    migrations keeps its rows (the table is renamed), and one with the older expression index
    loses only that index."""
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(
            [("traces", "0004_events_append_only_again"), ("auditor", "0005_event_search_table")]
        )
        assert "traces_eventsearch" not in _tables()
        # One transaction from the legacy row to reading it back, so no other session sees the
        # row: the session's live Celery worker sweeps search rows whose trace does not exist
        # (this row's) every TA_SWEEP_SECONDS, and a sweep landing here made this test flaky.
        # The migrations are atomic, so they run inside it (as savepoints).
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(LEGACY_SEARCH_TABLE if legacy == "search_table" else LEGACY_FTS_INDEX)
            executor = MigrationExecutor(connection)
            executor.migrate(latest)
            assert "auditor_eventsearch" not in _tables()
            assert "traces_eventsearch" in _tables()
            assert not _index_exists("event_payload_fts")
            assert _index_exists("eventsearch_document") and _index_exists("eventsearch_trace")
            cur.execute(
                "SELECT event_id, trace_id FROM traces_eventsearch "
                "WHERE document @@ plainto_tsquery('simple', 'wombat')"
            )
            rows = cur.fetchall()
        assert rows == ([(7, 3)] if legacy == "search_table" else [])
    finally:
        MigrationExecutor(connection).migrate(latest)
        with connection.cursor() as cur:
            cur.execute("DELETE FROM traces_eventsearch")


@pytest.mark.django_db
def test_result_json_columns_are_compressed_with_lz4(postgres):  # type: ignore[no-untyped-def]
    """auditor 0009: new results' records and trajectories are TOASTed with lz4 (a third of
    the server's time storing a run went to pglz), where the server has lz4."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' "
            "AND 'lz4' = ANY(enumvals)"
        )
        if cur.fetchone() is None:
            pytest.skip("this PostgreSQL has no lz4")
        cur.execute(
            "SELECT attname, attcompression FROM pg_attribute "
            "WHERE attrelid = 'auditor_auditresult'::regclass "
            "AND attname IN ('record', 'guarded_trajectory')"
        )
        assert dict(cur.fetchall()) == {"record": "l", "guarded_trajectory": "l"}


@pytest.mark.django_db
def test_no_results_index_is_a_prefix_of_another():
    """auditor 0011: an index whose columns lead another index only costs writes (the run_id
    index beside result_unique (run, trace, policy)); every result written maintains each."""
    with connection.cursor() as cur:
        constraints = connection.introspection.get_constraints(cur, "auditor_auditresult")
    indexes = {name: c["columns"] for name, c in constraints.items() if c["index"] or c["unique"]}
    assert len(indexes) >= 3  # pkey, result_unique, result_run_transition, trace_id
    for name, cols in indexes.items():
        for other, longer in indexes.items():
            assert other == name or longer[: len(cols)] != cols, (name, other)
