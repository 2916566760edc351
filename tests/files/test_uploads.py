"""The upload handler: an uploaded file streams to a temporary file (never held in memory) and an
upload past APTIX_UPLOAD_MAX_BYTES stops at the limit, the request saying why (413 naming it)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.test import RequestFactory

from files.services import file_upload
from files.uploads import upload_refusal
from tests.helpers.files import csv_plain, uploaded

pytestmark = pytest.mark.django_db


def test_the_handler_is_the_only_one_installed(settings):
    assert settings.FILE_UPLOAD_HANDLERS == ["files.uploads.LimitedUploadHandler"]


def test_a_small_upload_streams_to_a_temporary_file_and_ingests_from_it(alice):
    request = RequestFactory().post("/", {"file": uploaded("sales.csv", csv_plain())})
    received = request.FILES["file"]
    assert isinstance(received, TemporaryUploadedFile)  # on disk, not in memory, however small
    assert upload_refusal(request) is None
    upload = file_upload(owner=alice, uploaded=received)
    assert upload.tables[0]["rows"] == 6 and upload.size == len(csv_plain())


def test_an_upload_past_the_limit_stops_there(settings):
    settings.APTIX_UPLOAD_MAX_BYTES = 200_000
    request = RequestFactory().post("/", {"file": uploaded("big.csv", b"a,b\n" + b"1,2\n" * 60_000)})
    assert "file" not in request.FILES
    refusal = upload_refusal(request)
    assert refusal is not None and refusal.status == 413 and "195 KB" in refusal.message


def test_a_file_past_the_limit_inside_a_small_enough_body_stops_while_streaming(settings):
    settings.APTIX_UPLOAD_MAX_BYTES = 200_000
    # Two files, each under the body's envelope allowance but the second past the per-file limit.
    request = RequestFactory().post(
        "/", {"a": uploaded("a.csv", b"x\n" * 100), "file": uploaded("b.csv", b"y\n" * 120_000)}
    )
    assert "file" not in request.FILES
    assert upload_refusal(request).status == 413
