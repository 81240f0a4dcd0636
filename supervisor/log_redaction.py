"""Log lines without secrets: what `redact` removes from messages (tokens, keys,
passwords in URLs) and the signed part of alert links, whose path Django's request
logger writes for every 4xx answer and the web server's access log for every request.
Set on the handlers, so every logger's lines pass; `web_server` passes the access log."""

from __future__ import annotations

import logging
import re

from supervisor.notify.redact import MARK, redact

_ALERT_LINK = re.compile(r"(/alerts/ack/)[^/\s\"'?]+")


def redact_line(line: str) -> str:
    return _ALERT_LINK.sub(rf"\g<1>{MARK}", redact(line))


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_line(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
