"""Log lines without secrets: what `redact` removes from messages (tokens, keys,
passwords in URLs) and the signed part of alert links, whose path Django's request
logger writes for every 4xx answer. Set on the handlers, so every logger's lines pass."""

from __future__ import annotations

import logging
import re

from supervisor.notify.redact import MARK, redact

_ALERT_LINK = re.compile(r"(/alerts/ack/)[^/\s\"']+")


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = _ALERT_LINK.sub(rf"\g<1>{MARK}", redact(message))
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
