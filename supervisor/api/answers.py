"""Documented answer shapes: the error answer of every operation, `{"error": "..."}`, and
the answer of POST /events; the OpenAPI document lists each status an operation gives."""

from typing import Any

from ninja import Schema


class Error(Schema):
    error: str
    # Only on 400s from request validation: where and what, one entry per problem.
    details: list[dict[str, Any]] | None = None


def errors(*statuses: int) -> dict[int, type[Error]]:
    """`response=` entries for these error statuses, plus those every operation may give:
    400 (request validation), 401 (no valid token), 403 (a scope or role missing)."""
    return {status: Error for status in sorted({400, 401, 403, *statuses})}


class Rejection(Schema):
    index: int
    id: str | None
    error: str


class IngestAnswer(Schema):
    """POST /events' 200 (contract §1); its errors are per event, not per request."""

    accepted: int
    duplicates: int
    rejected: list[Rejection]
