"""Keep a Celery worker alive when Redis drops with a task in flight.

The fault, in the installed celery 5.7.0 / kombu 5.7.0 (the newest on the index; no release
fixes it): on a lost connection the consumer's `on_connection_error_after_connected` first calls
`connection.collect()`, which detaches the transport from its connection (`transport.client =
None`), and then `connection.close()`. Closing the Redis channel restores unacknowledged messages
(acks_late) and the acknowledgement of a task that finished during the outage runs later; both
build a Redis client from `self.connection.client`, now None, and raise
`AttributeError: 'NoneType' object has no attribute 'hostname'`. kombu's cleanup only swallows
*connection* errors (`ignore_errors`, `ack_log_error`), so the AttributeError escapes, the worker
logs "Unrecoverable error" and exits for good.

The fix turns that one case into what it is, a connection error: a channel whose transport has
lost its connection raises `redis.exceptions.ConnectionError`, which kombu's cleanup already
handles, and the consumer goes on to reconnect. The unacknowledged message stays in Redis'
unacked set (restored after `visibility_timeout`) or, if Redis lost its data, the sweep
(`auditor.tasks.resume_stale_work`) takes the job over; jobs are claimed exactly once, so a
redelivery is harmless. tests/ingest/test_broker_loss.py fails without this.
"""

from __future__ import annotations

from typing import Any

_PATCHED = "_ta_detached_connection_is_a_connection_error"


def install() -> None:
    """Patch kombu's Redis channel once per process (idempotent)."""
    import redis
    from kombu.transport import redis as kombu_redis

    channel = kombu_redis.Channel
    if getattr(channel, _PATCHED, False):
        return
    original = channel._connparams

    def _connparams(self: Any, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError(
                "the broker connection was closed after a connection loss"
            )
        return original(self, asynchronous=asynchronous)

    channel._connparams = _connparams
    setattr(channel, _PATCHED, True)
