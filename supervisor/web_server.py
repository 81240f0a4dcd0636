"""The web server: Daphne's own command line (same options), with one change: the
access log's request lines pass the same redaction as every log record, since the path
of an alert link (`/alerts/ack/<signed token>/`) is a credential. Daphne writes that log
to a stream itself, not through Python logging, so the logging filters never see it.

    python -m supervisor.web_server -b 127.0.0.1 -p 8000 supervisor.asgi:application

`--no-access-log` leaves the access log out (`make run` does, unless SUPERVISOR_ACCESS_LOG=1).
"""

from __future__ import annotations

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface
from daphne.server import Server

from supervisor.log_redaction import redact_line


class RedactedAccessLog(AccessLogGenerator):
    def write_entry(self, host, date, request, *args, **kwargs):
        super().write_entry(host, date, redact_line(request), *args, **kwargs)


class RedactingServer(Server):
    """Daphne's server, its access log (when it has one) redacted."""

    def __init__(self, *args, action_logger=None, **kwargs):
        if isinstance(action_logger, AccessLogGenerator):
            action_logger = RedactedAccessLog(action_logger.stream)
        super().__init__(*args, action_logger=action_logger, **kwargs)


class ServerWithoutAccessLog(Server):
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
