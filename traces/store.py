"""Writing events while the file streams past: COPY on PostgreSQL, executemany on SQLite, in
chunks, each chunk in its own transaction.

Why it is shaped like this:
- Events are written while later lines are still being parsed, so the server's work (jsonb
  parsing, indexes) overlaps with ours and memory stays bounded whatever the file's size.
- An event row needs its trace's id before the Trace row exists, so ids are reserved from the
  sequence up front; the Trace rows are inserted at the end of the chunk, in the same
  transaction. Foreign keys are deferred (Django creates them DEFERRABLE INITIALLY DEFERRED), so
  the check happens at commit, when both exist.
- A trace rejected after some of its rows were written has those rows deleted; and none of an
  upload's traces is visible before the upload is marked done (see selectors), so a crash in
  between never shows half an upload. A retry deletes the partial rows first.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import IntegrityError, connection, transaction

from traces.collect import Row, TraceState
from traces.models import Event, Trace, Upload
from traces.totals import COLUMNS as TOTAL_COLUMNS

_EVENT_COLUMNS = (
    "trace_id",
    "seq",
    "line",
    "turn",
    "type",
    "role",
    "name",
    "call_id",
    "status",
    "payload",
)
_COPY_FLUSH_BYTES = 256 * 1024
# Ids reserved per round trip; a chunk ends early when a file has more new traces than this.
_ID_BLOCK = 1024


def _clip(value: object, width: int) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else str(value))[:width]


def trace_fields(header: dict | None, upload: Upload | None = None) -> dict:
    """The indexed columns of Trace, from a v1 header (missing parts become blank; with the
    upload, what the uploader stated about the run fills what the header leaves blank)."""
    h = header or {}
    task = h.get("task") if isinstance(h.get("task"), dict) else {}
    outcome = h.get("outcome") if isinstance(h.get("outcome"), dict) else {}
    reward = outcome.get("reward")
    success = outcome.get("success")
    fields = {
        "agent": _clip(h.get("agent"), 200),
        "model": _clip(h.get("model"), 200),
        "benchmark": _clip(task.get("benchmark"), 200),
        "category": _clip(task.get("category"), 200),
        "task_id": _clip(task.get("id"), 255),
        "outcome_success": success if isinstance(success, bool) else None,
        "outcome_reward": float(reward)
        if isinstance(reward, (int, float)) and not isinstance(reward, bool)
        else None,
        "header": h,
    }
    if upload is not None:
        for column, stated in (
            ("model", upload.run_model),
            ("agent", upload.run_agent),
            ("benchmark", upload.run_benchmark),
        ):
            if stated and not fields[column]:
                fields[column] = stated
        fields["run_label"] = upload.run_label
    return fields


def existing_trace_ids(project_id: int, ids: list[str]) -> dict[str, int]:
    """Trace ids already stored in the project, with the upload that stored them."""
    found: dict[str, int] = {}
    for start in range(0, len(ids), 2000):
        chunk = ids[start : start + 2000]
        found.update(
            Trace.objects.filter(project_id=project_id, external_id__in=chunk).values_list(
                "external_id", "upload_id"
            )
        )
    return found


def _esc(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    )


def _copy_line(pk: int, row: Row) -> bytes:
    """One row in COPY's text format, columns in `_EVENT_COLUMNS` order. The text columns are
    escaped only when they need it (rare: a tool name with a tab or backslash), which is
    checked once on their joined text."""
    _st, seq, etype, turn, role, name, call_id, status, line, payload = row
    text = f"{etype}\t{role}\t{name}\t{call_id}\t{status}"
    if text.count("\t") != 4 or "\\" in text or "\n" in text or "\r" in text:
        text = "\t".join([_esc(etype), _esc(role), _esc(name), _esc(call_id), _esc(status)])
    if b"\\" in payload or b"\t" in payload or b"\r" in payload:
        payload = payload.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\r", b"\\r")
    turn_text = "\\N" if turn is None else turn
    return f"{pk}\t{seq}\t{line}\t{turn_text}\t{text}\t".encode() + payload + b"\n"


def _totals_now(st: TraceState) -> dict:
    """The duration, tokens and cost of the trace's events so far (traces.totals), for its
    Trace row; remembers how many events they cover."""
    if st.totals is None:
        return {}
    st.totals_stored_at = st.count
    return st.totals.fields()


def _write_totals(states: list[TraceState]) -> None:
    """Update the totals of traces whose events went on after their row was written (a trace
    whose events span chunks). Most traces end within the chunk that starts them, and their
    row is inserted with its totals: this touches only the others."""
    rows = []
    for st in states:
        if st.totals is not None and st.totals_stored_at != st.count:
            rows.append(Trace(pk=st.pk, **_totals_now(st)))
    if rows:
        Trace.objects.bulk_update(rows, list(TOTAL_COLUMNS), batch_size=500)


class ChunkedStore:
    """Receives rows from the collector in file order and writes them chunk by chunk."""

    def __init__(
        self,
        upload: Upload,
        *,
        chunk_events: int,
        on_conflict: Callable[[TraceState, int], None],
        on_chunk: Callable[[], None],
        run_source_of: Callable[[str], str] = lambda _tid: "",
    ) -> None:
        self.upload = upload
        self.run_source_of = run_source_of
        self.chunk_events = chunk_events
        self.on_conflict = on_conflict
        self.on_chunk = on_chunk
        self.pg = connection.vendor == "postgresql"
        self.pool: list[int] = []
        self.new: list[TraceState] = []  # traces first written in this chunk
        self.rows_in_chunk = 0
        self.buf = bytearray()
        self.sqlite_rows: list[tuple] = []
        self._atomic: transaction.Atomic | None = None
        self._copy_cm = None
        self._copy = None
        self._cursor = None

    # -- chunk lifecycle ------------------------------------------------------------------
    def _open(self) -> None:
        if self.pg and not self.pool:
            with connection.cursor() as cur:
                cur.execute(
                    "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                    [Trace._meta.db_table, _ID_BLOCK],
                )
                self.pool = [r[0] for r in cur.fetchall()][::-1]
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        if self.pg:
            self._cursor = connection.cursor()
            self._copy_cm = self._cursor.copy(
                f"COPY {Event._meta.db_table} ({', '.join(_EVENT_COLUMNS)}) FROM STDIN"
            )
            # COPY talks to psycopg directly; wrap_database_errors turns its errors into
            # Django's (OperationalError on a lost connection), which callers know how to retry.
            with connection.wrap_database_errors:
                self._copy = self._copy_cm.__enter__()
        else:
            # SQLite holds the write lock for the whole transaction, so ids after the current
            # maximum are ours alone.
            top = Trace.objects.order_by("-id").values_list("id", flat=True).first() or 0
            self.pool = list(range(top + _ID_BLOCK, top, -1))

    def write(self, row: Row) -> None:
        st = row[0]
        if self._atomic is None:
            self._open()
        if st.pk is None:
            if not self.pool:
                self.close_chunk()
                self._open()
            st.pk = self.pool.pop()
            self.new.append(st)
        if self.pg:
            self.buf += _copy_line(st.pk, row)
            if len(self.buf) >= _COPY_FLUSH_BYTES:
                with connection.wrap_database_errors:
                    self._copy.write(self.buf)  # type: ignore[union-attr]
                self.buf = bytearray()
        else:
            _s, seq, etype, turn, role, name, call_id, status, line, payload = row
            self.sqlite_rows.append(
                (
                    st.pk,
                    seq,
                    line,
                    turn,
                    etype,
                    role,
                    name,
                    call_id,
                    status,
                    payload.decode("utf-8"),
                )
            )
        self.rows_in_chunk += 1
        if self.rows_in_chunk >= self.chunk_events:
            self.close_chunk()

    def close_chunk(self) -> None:
        if self._atomic is None:
            return
        try:
            self._finish_event_rows()
            self._write_trace_rows()
        except BaseException as exc:
            atomic, self._atomic = self._atomic, None
            atomic.__exit__(type(exc), exc, exc.__traceback__)
            raise
        atomic, self._atomic = self._atomic, None
        atomic.__exit__(None, None, None)
        self.new, self.rows_in_chunk = [], 0
        self.on_chunk()

    def _finish_event_rows(self) -> None:
        if self.pg:
            with connection.wrap_database_errors:
                if self.buf:
                    self._copy.write(self.buf)  # type: ignore[union-attr]
                    self.buf = bytearray()
                self._copy_cm.__exit__(None, None, None)  # type: ignore[union-attr]
            self._cursor.close()  # type: ignore[union-attr]
            self._copy = self._copy_cm = self._cursor = None
        elif self.sqlite_rows:
            sql = (
                f"INSERT INTO {Event._meta.db_table} ({', '.join(_EVENT_COLUMNS)}) "
                f"VALUES ({', '.join(['%s'] * len(_EVENT_COLUMNS))})"
            )
            with connection.cursor() as cur:
                cur.executemany(sql, self.sqlite_rows)
            self.sqlite_rows = []

    def _write_trace_rows(self) -> None:
        """Insert the Trace rows of traces first seen in this chunk (those still accepted), and
        drop the event rows of traces that cannot be stored."""
        fresh = [st for st in self.new if not st.rejected]
        taken = existing_trace_ids(self.upload.project_id, [st.trace_id for st in fresh])
        for st in fresh:
            if st.trace_id in taken:
                self.on_conflict(st, taken[st.trace_id])
        while True:
            fresh = [st for st in self.new if not st.rejected]
            try:
                with transaction.atomic():  # a savepoint: a lost race leaves the chunk usable
                    Trace.objects.bulk_create([self._trace(st) for st in fresh])
                break
            except IntegrityError:
                # Another upload stored one of these ids after our check.
                taken = existing_trace_ids(self.upload.project_id, [st.trace_id for st in fresh])
                if not taken:
                    raise
                for st in fresh:
                    if st.trace_id in taken:
                        self.on_conflict(st, taken[st.trace_id])
        for st in fresh:
            st.row_written = True
        dropped = [st.pk for st in self.new if st.rejected]
        if dropped:
            Event.objects.filter(trace_id__in=dropped).delete()

    def _trace(self, st: TraceState) -> Trace:
        return Trace(
            pk=st.pk,
            project_id=self.upload.project_id,
            upload=self.upload,
            external_id=st.trace_id,
            run_source=self.run_source_of(st.trace_id),
            **trace_fields(st.header, self.upload),
            **_totals_now(st),
        )

    # -- the end ------------------------------------------------------------------------
    def finish(self, accepted: list[TraceState], rejected: list[TraceState]) -> None:
        """After the last line: remove traces rejected after they were written, fill in headers
        that came late, and count events per trace."""
        self.close_chunk()
        with transaction.atomic():
            gone = [st.pk for st in rejected if st.row_written]
            for start in range(0, len(gone), 1000):
                part = gone[start : start + 1000]
                Event.objects.filter(trace_id__in=part).delete()
                Trace.objects.filter(pk__in=part).delete()
            late = [st for st in accepted if st.header_late]
            for st in late:
                Trace.objects.filter(pk=st.pk).update(**trace_fields(st.header, self.upload))
            _write_totals(accepted)
            with connection.cursor() as cur:
                cur.execute(
                    f"UPDATE {Trace._meta.db_table} SET event_count = ("
                    f" SELECT count(*) FROM {Event._meta.db_table} e"
                    f" WHERE e.trace_id = {Trace._meta.db_table}.id)"
                    f" WHERE upload_id = %s",
                    [self.upload.pk],
                )

    def abort(self) -> None:
        """Roll back an open chunk (the caller is failing the upload)."""
        if self._atomic is None:
            return
        if self._copy_cm is not None:
            try:
                self._copy_cm.__exit__(RuntimeError, RuntimeError("aborted"), None)
            except Exception:  # noqa: BLE001 — the COPY is being abandoned anyway
                pass
            self._copy = self._copy_cm = None
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
        atomic, self._atomic = self._atomic, None
        err = RuntimeError("ingest aborted")
        try:
            atomic.__exit__(RuntimeError, err, None)
        except RuntimeError:
            pass
