"""Which database errors a retry cures, and what the others say.

A retry cures what comes and goes: the server out of reach or restarting, a pool with
no connection to give in time (no SQLSTATE: nothing was refused), a deadlock or a
serialization conflict (class 40), a lock or a resource not to be had just now (55P03,
class 53), a shutdown or a cancel (class 57). Anything else the server refused (a value
past a column's length, class 22; an index row past the btree limit, 54000; a
constraint, 23) is refused again however often the same write is sent: telling its
sender to retry would block it for ever. psycopg files class 54 under OperationalError,
so the exception's class alone does not tell.
"""

from __future__ import annotations

import re
import sqlite3
from functools import cache

from django.apps import apps
from django.db import DatabaseError, InterfaceError, OperationalError

CURABLE_CLASSES = {"08", "40", "53", "57"}
CURABLE_CODES = {"55P03"}  # lock_not_available
INDEX_NAMED = re.compile(r'for index "([^"]+)"')


def sqlstate(exc: BaseException) -> str | None:
    """The server's SQLSTATE, on psycopg's error or on Django's around it."""
    for error in (exc, exc.__cause__):
        code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        if code:
            return code
    return None


def curable(exc: BaseException) -> bool:
    """Whether running the same work again later can succeed (`exc` a database error).
    A refused value, constraint or statement (DataError, IntegrityError...) never is."""
    if not isinstance(exc, (OperationalError, InterfaceError, *driver_errors())):
        return False
    code = sqlstate(exc)
    if code is None:
        return True  # the connection, the pool, SQLite's lock: nothing was refused
    return code[:2] in CURABLE_CLASSES or code in CURABLE_CODES


@cache
def driver_errors() -> tuple[type[Exception], ...]:
    # Raw driver cursors (COPY, say) raise the driver's own classes, not Django's.
    found: list[type[Exception]] = [sqlite3.OperationalError, sqlite3.InterfaceError]
    try:
        import psycopg
    except ImportError:  # SQLite only
        return tuple(found)
    return (*found, psycopg.OperationalError, psycopg.InterfaceError)


def refused_for_good(exc: BaseException) -> bool:
    """A database error that no retry cures: the data itself is refused."""
    return isinstance(exc, DatabaseError) and not curable(exc)


@cache
def _indexed_fields() -> dict[str, str]:
    """Each index and constraint of the project's models by name: `Model (field, ...)`."""
    named = {}
    for model in apps.get_models():
        if not model.__module__.startswith("supervisor."):
            continue
        for item in [*model._meta.indexes, *model._meta.constraints]:
            fields = getattr(item, "fields", ())
            named[item.name] = f"{model.__name__} ({', '.join(fields)})"
    return named


def refusal(exc: BaseException) -> str:
    """What storage refused, one line, naming the index or constraint and its fields
    when the server names one."""
    message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    name = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
    if name is None and (found := INDEX_NAMED.search(message)):
        name = found.group(1)
    fields = _indexed_fields().get(name or "")
    return f"storage cannot hold it: {message}" + (f" (index of {fields})" if fields else "")
