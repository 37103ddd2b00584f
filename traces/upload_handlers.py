"""Stops a multipart upload at the size limit while it streams in."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload

TOO_LARGE = "upload_too_large"


class SizeLimitUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: passes chunks on until the file passes
    TA_MAX_UPLOAD_BYTES, then stops reading the body (connection_reset: the rest is not
    drained) and marks the request, so the view answers 413 rather than "choose a file"."""

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        if start + len(raw_data) > settings.TA_MAX_UPLOAD_BYTES:
            if self.request is not None:
                setattr(self.request, TOO_LARGE, True)
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler builds the file


def upload_too_large(request: object) -> bool:
    return bool(getattr(request, TOO_LARGE, False))
