"""Parquet: one row per decision, the record and annotations as JSON string columns, the trace's
totals typed (a UTC timestamp, float64 milliseconds and dollars, int64 token counts; null where
unknown), one row group per chunk (written before the next chunk is read), zstd-compressed."""

from __future__ import annotations

from auditor.exports.rows import DECISION_COLUMNS, JSON_COLUMNS
from auditor.exports.snapshot import SCHEMA_VERSION, Snapshot


def parquet_schema():  # type: ignore[no-untyped-def]
    import pyarrow as pa

    types = {
        "run": pa.int64(),
        "trace_pk": pa.int64(),
        "applied": pa.bool_(),
        "actor_success": pa.bool_(),
        "guarded_success": pa.bool_(),
        "started_at": pa.timestamp("us", tz="UTC"),
        "duration_ms": pa.float64(),
        "input_tokens": pa.int64(),
        "output_tokens": pa.int64(),
        "total_tokens": pa.int64(),
        "cost_usd": pa.float64(),
    }
    fields = [pa.field(c, types.get(c, pa.string())) for c in DECISION_COLUMNS]
    return pa.schema(
        fields,
        metadata={
            "trace_auditor.schema_version": str(SCHEMA_VERSION),
            "trace_auditor.json_columns": ",".join(JSON_COLUMNS),
        },
    )


def write(snapshot: Snapshot, path: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema()
    snapshot.columns = list(schema.names)
    n = n_ann = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for rows in snapshot.rows():
            table = pa.Table.from_pylist(
                [{c: r[c] for c in snapshot.columns} for r in rows], schema=schema
            )
            writer.write_table(table, row_group_size=max(1, len(rows)))
            n += len(rows)
            n_ann += sum(r["_n_annotations"] for r in rows)
            del table
    return snapshot.row_counts(n, n_ann)
