"""Keyset cursors: opaque tokens holding the sort key of the last row of a page (the
API's and the pages')."""

import base64
import json
from datetime import UTC, datetime


class CursorError(ValueError):
    """A cursor this server did not give out (the API answers 400, a page starts over)."""


def encode(*values) -> str:
    raw = json.dumps([v.isoformat() if isinstance(v, datetime) else v for v in values])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(cursor: str, kinds: tuple) -> list:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
        if not isinstance(values, list) or len(values) != len(kinds):
            raise ValueError
        return [
            None if v is None else _moment(v) if kind is datetime else kind(v)
            for v, kind in zip(values, kinds, strict=True)
        ]
    except (ValueError, TypeError, OverflowError):
        raise CursorError("the cursor is not one this API gave out") from None


def _moment(text: str) -> datetime:
    # Ours are in UTC; another offset (PostgreSQL takes up to 15:59) or none is not ours.
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no offset")
    return moment.astimezone(UTC)
