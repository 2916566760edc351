"""A 58 MB file was uploaded whole before the 50 MB refusal, as Daphne reads a
body to the end before the application sees the request. Served by `manage.py aptix_serve` (a real
subprocess), a body over the limit is now answered 413 while it is still arriving: at its headers
when it declares its length, as soon as the limit is passed when it is chunked."""

from __future__ import annotations

import contextlib
import json
import select
import socket

import pytest

from tests.browser.live import LiveServer

pytestmark = pytest.mark.slow

LIMIT = 1 << 20  # APTIX_UPLOAD_MAX_BYTES of the server: 1 MB
DECLARED = 58 << 20
MESSAGE = "The file is larger than the upload limit of 1 MB."


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    """One server for the module: its tests send bodies only, and write nothing."""
    live = LiveServer(var_dir=tmp_path_factory.mktemp("live"), env={"APTIX_UPLOAD_MAX_BYTES": str(LIMIT)})
    live.start()
    try:
        yield live
    finally:
        live.stop()


def head(server: LiveServer, length: str) -> bytes:
    return (
        f"POST /files/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: multipart/form-data; boundary=b\r\n{length}\r\n\r\n"
    ).encode()


def answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def assert_refused(response: bytes) -> None:
    status, _, rest = response.partition(b"\r\n")
    assert status == b"HTTP/1.1 413 Content Too Large", response[:200]
    body = rest.partition(b"\r\n\r\n")[2]
    assert json.loads(body) == {"error": {"message": MESSAGE, "field": "file"}}


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head(server, f"Content-Length: {DECLARED}"))  # not a byte of the body
        assert_refused(answer(sock))


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server):
    piece = b"x" * (256 << 10)
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    sent, response = 0, b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head(server, "Transfer-Encoding: chunked"))
        sock.setblocking(False)
        # Send on until the answer comes (the socket readable): it must come long before the end.
        while sent < DECLARED:
            readable, writable, _ = select.select([sock], [sock], [], 10)
            if readable:
                break
            assert writable, "the server neither read on nor answered"
            try:
                sent += sock.send(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        sock.setblocking(True)
        with contextlib.suppress(ConnectionResetError):  # closed with our last chunks unread
            response = answer(sock)
    assert_refused(response)
    assert sent < DECLARED // 4  # refused after about the limit (and what the socket buffers held)


def test_a_body_under_the_limit_reaches_the_application(server):
    body = b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n--b--\r\n'
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head(server, f"Content-Length: {len(body)}\r\nConnection: close") + body)
        response = answer(sock)
    # Django answers it (CSRF: no token), not the early refusal.
    assert response.startswith(b"HTTP/1.1 403 "), response[:200]
