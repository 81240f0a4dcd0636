"""The log handlers drop secrets from every line, whichever logger wrote it."""

import io
import logging
import logging.config
import sys

from django.conf import settings

from supervisor.core.access.sources import TOKEN_PREFIX


def _line(logger_name: str, message: str, *args) -> str:
    config = {**settings.LOGGING, "disable_existing_loggers": False}
    logging.config.dictConfig(config)
    handler = logging.getLogger().handlers[0]
    stream = io.StringIO()
    handler.setStream(stream)
    try:
        logging.getLogger(logger_name).warning(message, *args)
    finally:
        handler.setStream(sys.stderr)
    return stream.getvalue()


def test_a_signed_alert_link_in_a_request_log_is_cut():
    line = _line("django.request", "Bad Request: %s", "/alerts/ack/eyJmbGFnIjo0Mn0:1tXyZ:abc/")
    assert "eyJmbGFnIjo0Mn0" not in line
    assert "Bad Request: /alerts/ack/[redacted]/" in line


def test_a_source_token_and_a_url_password_are_cut():
    token = TOKEN_PREFIX + "Zx8-kk_3" * 5
    line = _line("supervisor.test", "sent with %s to %s", token, "redis://u:hunter22@h:6379/0")
    assert token not in line and "hunter22" not in line
    assert "sent with [redacted] to redis://u:[redacted]@h:6379/0" in line


def test_a_plain_line_is_left_as_it_is():
    assert _line("supervisor.test", "task %s finished", "task:1").strip() == "task task:1 finished"
