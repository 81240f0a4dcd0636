"""Keyset cursors for the API (core/queries/pagination.py): one it did not give out is a 400."""

from ninja.errors import HttpError

from supervisor.core.queries import pagination
from supervisor.core.queries.pagination import encode

__all__ = ["decode", "encode"]


def decode(cursor: str, kinds: tuple) -> list:
    try:
        return pagination.decode(cursor, kinds)
    except pagination.CursorError as exc:
        raise HttpError(400, str(exc)) from None
