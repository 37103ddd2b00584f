"""API errors are JSON with a `detail` message, never an HTML page or a traceback."""

from __future__ import annotations

import logging

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from traces.services import UploadRejected

log = logging.getLogger(__name__)


def exception_handler(exc, context):  # type: ignore[no-untyped-def]
    if isinstance(exc, UploadRejected):
        return Response({"detail": str(exc)}, status=exc.status)
    response = drf_exception_handler(exc, context)
    if response is None:
        log.exception("unhandled API error", exc_info=exc)
        return Response({"detail": "internal error; it has been logged"}, status=500)
    return response
