"""An answer the client caused (403, 400, 404) is one log line, not a traceback.

Django logs a PermissionDenied (403) and a bad request (400) with the exception's
traceback attached, the same as a server error; in `make run`'s log an ordinary 403
came out as fourteen lines (issue 19, point 8). The line keeps the exception's own words
("this page is for admins"); a 5xx keeps its traceback. Set on the handlers, so it sees
django.request and the django.security.* loggers alike.
"""

from __future__ import annotations

import logging


class OneLineForClientErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if record.exc_info and isinstance(status, int) and 400 <= status < 500:
            exception = record.exc_info[1]
            words = str(exception) if exception is not None else ""
            record.msg, record.args = record.getMessage(), ()
            if words and words not in record.msg:
                record.msg = f"{record.msg} ({words})"
            record.exc_info, record.exc_text = None, None
        return True
