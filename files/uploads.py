"""The upload handler (settings.FILE_UPLOAD_HANDLERS): every uploaded file streams to a temporary
file, and an upload past APTIX_UPLOAD_MAX_BYTES stops there, so no upload is ever read whole into
memory or stored past the limit. The view asks `upload_refusal(request)` why a file is missing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

from .errors import FileRefused, too_large

# Room for the multipart envelope (boundaries, headers, the other fields) around one file.
ENVELOPE_BYTES = 64 << 10
REFUSAL_ATTRIBUTE = "aptix_upload_refused"


class LimitedUploadHandler(TemporaryFileUploadHandler):
    """Django's temporary-file handler with a size limit per file (and per request body)."""

    def handle_raw_input(
        self, input_data: Any, META: Any, content_length: int, boundary: Any, encoding: str | None = None
    ) -> tuple[QueryDict, MultiValueDict] | None:
        """A body declared larger than one file may be is refused before a byte of it is parsed."""
        if content_length and content_length > settings.APTIX_UPLOAD_MAX_BYTES + ENVELOPE_BYTES:
            self._mark_refused()
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0
        if self.content_length is not None and self.content_length > settings.APTIX_UPLOAD_MAX_BYTES:
            self.file.close()
            self._refuse()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > settings.APTIX_UPLOAD_MAX_BYTES:
            self.file.close()  # the temporary file goes with it
            self._refuse()
        return super().receive_data_chunk(raw_data, start)

    def _mark_refused(self) -> None:
        if self.request is not None:
            setattr(self.request, REFUSAL_ATTRIBUTE, too_large(settings.APTIX_UPLOAD_MAX_BYTES))

    def _refuse(self) -> None:
        self._mark_refused()
        # Stop parsing rather than read the rest of a body nobody will use.
        raise StopUpload(connection_reset=True)


def upload_refusal(request: Any) -> FileRefused | None:
    """Why the request's upload was stopped (413 naming the limit), or None."""
    return getattr(request, REFUSAL_ATTRIBUTE, None)
