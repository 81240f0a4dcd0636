"""The web server: Daphne's own command line (same options), with two changes. The
access log's request lines pass the same redaction as every log record, since the path
of an alert link (`/alerts/ack/<signed token>/`) is a credential. Daphne writes that log
to a stream itself, not through Python logging, so the logging filters never see it.

    python -m supervisor.web_server -b 127.0.0.1 -p 8000 supervisor.asgi:application

`--no-access-log` leaves the access log out (`make run` does, unless SUPERVISOR_ACCESS_LOG=1).

And a request too large to read is answered, not dropped: Twisted closes the connection
without a word on a request line over its line limit, and answers a bare 400 to headers
over theirs. Here a URL over 16 KiB is 414 and headers over their limits are 431, each
with a sentence (JSON under /api/, as every answer there), and the connection closed.
"""

from __future__ import annotations

import json

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface
from daphne.server import Server
from twisted.web import http

from supervisor.log_redaction import redact_line


class RedactedAccessLog(AccessLogGenerator):
    def write_entry(self, host, date, request, *args, **kwargs):
        super().write_entry(host, date, redact_line(request), *args, **kwargs)


REASONS = {414: b"URI Too Long", 431: b"Request Header Fields Too Large"}


class BoundedHTTPChannel(http.HTTPChannel):
    """Twisted's HTTP/1.1 channel, answering requests over its limits."""

    MAX_LENGTH = 16384  # one line: the request line (so its URL), or one header
    totalHeadersSize = 32768  # the request line and all headers: a long URL leaves room
    maxHeaders = 500  # Twisted's own

    def lineReceived(self, line):
        if self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            return self._refuse(431, f"the headers are over {self.totalHeadersSize} bytes")
        return super().lineReceived(line)

    def lineLengthExceeded(self, line):
        if self._receivedHeaderSize == 0:  # nothing counted yet: a request's first line
            return self._refuse(414, f"the URL is over {self.MAX_LENGTH} bytes", line)
        return self._refuse(431, f"a header is over {self.MAX_LENGTH} bytes")

    def headerReceived(self, line):
        if self._receivedHeaderCount >= self.maxHeaders:
            self._refuse(431, f"the request has over {self.maxHeaders} headers")
            return False
        return super().headerReceived(line)

    def _refuse(self, status: int, problem: str, request_line: bytes = b"") -> None:
        # The target: from the line still unread, or as Twisted parsed it.
        target = request_line.split(b" ", 2)[1:2] or [getattr(self, "_path", b"")]
        if target[0].startswith(b"/api/"):
            body, kind = json.dumps({"error": problem}).encode(), b"application/json"
        else:
            body = f"{problem}; Supervisor did not read the request.\n".encode()
            kind = b"text/plain; charset=utf-8"
        self.transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (status, REASONS[status], kind, len(body), body)
        )
        self.loseConnection()


def _bounded_protocol():
    return http._GenericHTTPChannelProtocol(BoundedHTTPChannel())


class BoundedServer(Server):
    """Daphne's server, its HTTP channel BoundedHTTPChannel. Daphne makes its factory
    in run(); the factory's protocol is set as Daphne stores it."""

    @property
    def http_factory(self):
        return self._http_factory

    @http_factory.setter
    def http_factory(self, factory):
        factory.protocol = _bounded_protocol
        self._http_factory = factory


class RedactingServer(BoundedServer):
    """Daphne's server, its access log (when it has one) redacted."""

    def __init__(self, *args, action_logger=None, **kwargs):
        if isinstance(action_logger, AccessLogGenerator):
            action_logger = RedactedAccessLog(action_logger.stream)
        super().__init__(*args, action_logger=action_logger, **kwargs)


class ServerWithoutAccessLog(BoundedServer):
    def __init__(self, *args, action_logger=None, **kwargs):
        super().__init__(*args, action_logger=None, **kwargs)


class WebServer(CommandLineInterface):
    """Daphne's command line, plus `--no-access-log` (`make run` leaves it out: a line
    per request drowns everything else)."""

    server_class = RedactingServer

    def __init__(self):
        super().__init__()
        self.parser.add_argument(
            "--no-access-log", action="store_true", help="Write no access log at all"
        )

    def run(self, args):
        if self.parser.parse_args(args).no_access_log:
            self.server_class = ServerWithoutAccessLog
        super().run(args)


if __name__ == "__main__":
    WebServer.entrypoint()
