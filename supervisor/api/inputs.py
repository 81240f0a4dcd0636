"""Strings the API takes in (path, query, body): text that can be stored and queried.
PostgreSQL refuses NUL and lone surrogates; such a value is a 400 naming the field,
not a 500 from the database."""

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from supervisor.core.contract.events import unstorable


def _storable(value: str) -> str:
    problem = unstorable(value)
    if problem:
        raise ValueError(problem)
    return value


Text = Annotated[str, AfterValidator(_storable)]
# Kept in a column of 500 characters: ids of runs, tasks and threads.
Id = Annotated[str, Field(max_length=500), AfterValidator(_storable)]


def _moment(value):
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 time (a string), like 2026-11-05T23:00:00Z")
    try:
        moment = datetime.fromisoformat(value)
        # In UTC: PostgreSQL takes offsets up to 15:59 only, RFC 3339 up to 23:59.
        return moment if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"{value!r} is not an RFC 3339 time, like 2026-11-05T23:00:00Z") from None


# A time in a JSON body: a string only (not a number of seconds); a missing offset is
# refused where the time is used, with its own message.
Moment = Annotated[datetime, BeforeValidator(_moment)]
# Bodies take the JSON types their document shows: no "yes" for true, no "3" for 3.
STRICT = ConfigDict(strict=True)
