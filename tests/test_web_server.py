"""What the web server as deployed (the Procfile's Daphne command line, in its own
process) answers a request too large to read: a URL over 16 KiB is 414, headers over
their limits are 431, each with a sentence (JSON under /api/), never a dropped
connection or a bare 400. A URL just under the limit reaches the application."""

import json
import socket

import pytest

from tests.test_web_server_log_ins import Server

pytestmark = pytest.mark.django_db(transaction=True)


def exchange(port: int, head: bytes) -> tuple[str, dict, bytes]:
    """Send `head` (a request line and headers, no body); the status line, the headers
    and the body of the answer, read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status, _, rest = answer.partition(b"\r\n")
    fields, _, body = rest.partition(b"\r\n\r\n")
    headers = dict(line.decode().split(": ", 1) for line in fields.split(b"\r\n") if line)
    return status.decode(), {k.lower(): v for k, v in headers.items()}, body


def request(target: str, *headers: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.fixture(scope="module")
def server(django_db_blocker):
    with django_db_blocker.unblock():
        running = Server("Procfile", "")
    yield running
    running.stop()


def test_an_overlong_url_is_414(server):
    status, headers, body = exchange(server.port, request("/tasks/?q=" + "a" * 20_000))
    assert status == "HTTP/1.1 414 URI Too Long"
    assert headers["content-type"].startswith("text/plain")
    assert b"16384 bytes" in body


def test_an_overlong_api_url_is_a_json_414(server):
    status, headers, body = exchange(server.port, request("/api/v1/tasks?q=" + "a" * 20_000))
    assert status == "HTTP/1.1 414 URI Too Long"
    assert headers["content-type"] == "application/json"
    assert "16384 bytes" in json.loads(body)["error"]


def test_a_url_under_the_limit_reaches_the_application(server):
    status, headers, _ = exchange(server.port, request("/api/v1/tasks?q=" + "a" * 16_000))
    assert status == "HTTP/1.1 401 Unauthorized"  # the API's answer: no token
    assert headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    "headers",
    [["X-Long: " + "b" * 20_000], [f"X-Many-{n}: " + "c" * 1000 for n in range(40)]],
    ids=["one header over 16 KiB", "headers over 32 KiB together"],
)
def test_headers_over_their_limit_are_431(server, headers):
    status, answer_headers, body = exchange(server.port, request("/api/v1/tasks", *headers))
    assert status == "HTTP/1.1 431 Request Header Fields Too Large"
    assert "header" in json.loads(body)["error"]
