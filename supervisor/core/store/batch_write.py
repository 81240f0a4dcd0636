"""Writing many rows in few statements: ingest's hot path.

`update_rows` turns "these rows changed these columns" into one
`UPDATE … FROM (VALUES …)` per set of columns, instead of one UPDATE per row (a batch
of 500 events changes a few hundred rows, and the round trips were most of its cost).
`copy_rows` appends rows with PostgreSQL's COPY, skipping the ORM's per-value
preparation; elsewhere it is `bulk_create`. `insert_rows` and `set_rows` take plain
values instead of model instances: appended rows (COPY, or executemany), and rows
written whole by their natural key (one `INSERT … ON CONFLICT … DO UPDATE` per chunk).
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection

CHUNK = 500  # rows per statement: well inside SQLite's and PostgreSQL's parameter limits
# SQLite takes UPDATE … FROM since 3.33; older ones get one UPDATE per row.
SQLITE_UPDATE_FROM = sqlite3.sqlite_version_info >= (3, 33, 0)
# RETURNING since 3.35; older ones read the ids back with a SELECT.
SQLITE_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)


def update_rows(model, changes: Iterable[tuple[Any, dict[str, Any]]]) -> int:
    """Apply `(pk, {attname: new value})` pairs; returns the number of statements."""
    groups: dict[tuple[str, ...], list[tuple[Any, dict]]] = defaultdict(list)
    for pk, changed in changes:
        groups[tuple(sorted(changed))].append((pk, changed))
    statements = 0
    for columns, members in groups.items():
        for start in range(0, len(members), CHUNK):
            _update_chunk(model, columns, members[start : start + CHUNK])
            statements += 1
    return statements


def _update_chunk(model, columns: Sequence[str], members: list[tuple[Any, dict]]) -> None:
    meta = model._meta
    fields = [meta.get_field(_field_name(meta, name)) for name in columns]
    if connection.vendor == "sqlite" and not SQLITE_UPDATE_FROM:
        for pk, changed in members:
            model.objects.filter(pk=pk).update(**{f.name: changed[f.attname] for f in fields})
        return
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    pk_field = meta.pk
    if connection.vendor == "postgresql":
        _update_chunk_by_arrays(table, pk_field, fields, members)
        return
    row_sql = "(" + ", ".join(["%s"] * (1 + len(fields))) + ")"
    params: list[Any] = []
    for pk, changed in members:
        params.append(pk_field.get_db_prep_value(pk, connection))
        params.extend(f.get_db_prep_save(changed[f.attname], connection) for f in fields)
    assignments = ", ".join(
        f"{quote(f.column)} = v.column{index}" for index, f in enumerate(fields, start=2)
    )
    sql = (
        f"UPDATE {table} SET {assignments} "
        f"FROM (VALUES {', '.join([row_sql] * len(members))}) AS v "
        f"WHERE {table}.{quote(pk_field.column)} = v.column1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _update_chunk_by_arrays(table: str, pk_field, fields: list, members: list) -> None:
    """PostgreSQL: one array per column, so the statement is the same whatever the number
    of rows (psycopg spent longer splitting and quoting a VALUES list of 500 rows than
    PostgreSQL took to run it). JSON goes as text, cast on the way in."""
    quote = connection.ops.quote_name
    columns = [pk_field, *fields]
    names = [f"c{index}" for index in range(len(columns))]

    def array_type(field) -> str:
        return "text" if _is_json(field) else field.cast_db_type(connection)

    def value(field, raw):
        if _is_json(field):
            return None if raw is None else json.dumps(raw, cls=field.encoder)
        return field.get_db_prep_save(raw, connection)

    arrays = [[value(pk_field, pk) for pk, _ in members]]
    arrays += [[value(f, changed[f.attname]) for _, changed in members] for f in fields]
    assignments = ", ".join(
        f"{quote(f.column)} = v.{name}" + ("::jsonb" if _is_json(f) else "")
        for f, name in zip(fields, names[1:], strict=True)
    )
    slots = ", ".join(f"%s::{array_type(f)}[]" for f in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {assignments} FROM unnest({slots}) AS v({', '.join(names)}) "
            f"WHERE {table}.{quote(pk_field.column)} = v.c0",
            arrays,
        )


def _is_json(field) -> bool:
    return field.get_internal_type() == "JSONField"


def _field_name(meta, attname: str) -> str:
    for field in meta.concrete_fields:
        if field.attname == attname:
            return field.name
    raise ValueError(f"{meta.label} has no column {attname!r}")


def _adapters(model, columns: Sequence[str]) -> list:
    """Per column, what turns a Python value into what the driver takes: nothing but
    SQLite's datetimes (stored as naive UTC text, as the ORM stores them)."""
    if connection.vendor != "sqlite":
        return [None] * len(columns)
    kinds = {f.attname: f.get_internal_type() for f in model._meta.concrete_fields}
    adapt = connection.ops.adapt_datetimefield_value
    if connection.timezone is UTC:
        adapt = _utc_text  # what the ORM writes, without its settings look-ups per value
    return [adapt if kinds[c] == "DateTimeField" else None for c in columns]


def _utc_text(value: datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return str(value)


def _prepared(rows: Iterable[Sequence[Any]], adapters: list) -> list[list[Any]]:
    if not any(adapters):
        return [list(row) for row in rows]
    return [
        [a(v) if a and v is not None else v for a, v in zip(adapters, row, strict=True)]
        for row in rows
    ]


def insert_rows(model, columns: Sequence[str], rows: list[Sequence[Any]]) -> None:
    """Append rows given as values in `columns` order (attnames; JSON already as text):
    COPY on PostgreSQL, one executemany elsewhere."""
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    names = ", ".join(quote(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        slots = ", ".join(["%s"] * len(columns))
        cursor.executemany(
            f"INSERT INTO {table} ({names}) VALUES ({slots})",
            _prepared(rows, _adapters(model, columns)),
        )


def set_rows(
    model, key: str, columns: Sequence[str], rows: list[Sequence[Any]], *, returning: bool = True
) -> dict[str, Any]:
    """Insert rows, or overwrite `columns` of those that exist, by (namespace_id, key):
    one `INSERT … ON CONFLICT … DO UPDATE` per chunk. `columns` hold namespace_id and
    key. Returns the row ids by key (when `returning`)."""
    if not rows:
        return {}
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    names = ", ".join(quote(c) for c in columns)
    assignments = ", ".join(
        f"{quote(c)} = excluded.{quote(c)}" for c in columns if c not in {"namespace_id", key}
    )
    tail = f" RETURNING {quote(key)}, {quote('id')}" if returning else ""
    conflict = f"ON CONFLICT ({quote('namespace_id')}, {quote(key)}) DO UPDATE SET {assignments}"
    ids: dict[str, Any] = {}
    if connection.vendor == "postgresql":
        # One array per column: a short statement, the same for every batch, which
        # psycopg and PostgreSQL parse once, whatever the number of rows.
        fields = {f.attname: f for f in model._meta.concrete_fields}
        arrays = ", ".join(f"%s::{fields[c].cast_db_type(connection)}[]" for c in columns)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({names}) SELECT * FROM unnest({arrays}) {conflict}{tail}",
                [list(values) for values in zip(*rows, strict=True)],
            )
            if returning:
                ids.update(cursor.fetchall())
        return ids
    if returning and not SQLITE_RETURNING:
        set_rows(model, key, columns, rows, returning=False)
        at = {c: i for i, c in enumerate(columns)}
        found = model.objects.filter(
            namespace_id=rows[0][at["namespace_id"]], **{f"{key}__in": [r[at[key]] for r in rows]}
        )
        return dict(found.values_list(key, "id"))
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    adapters = _adapters(model, columns)
    most = connection.features.max_query_params or 30_000  # 999 before SQLite 3.32
    per_chunk = max(1, min(CHUNK, most // len(columns)))
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_chunk):
            chunk = _prepared(rows[start : start + per_chunk], adapters)
            cursor.execute(
                f"INSERT INTO {table} ({names}) VALUES {', '.join([row_sql] * len(chunk))} "
                + conflict
                + tail,
                [value for row in chunk for value in row],
            )
            if returning:
                ids.update(cursor.fetchall())
    return ids


def copy_rows(model, rows: list) -> None:
    """Insert new rows (ids are not read back): COPY on PostgreSQL, bulk_create elsewhere."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create(rows)
        return
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    statement = f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"
    stamped = [
        f for f in fields if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
    ]
    for row in rows:
        # Foreign keys from instances saved since, auto_now_add: what bulk_create
        # would have filled in.
        row._prepare_related_fields_for_save(operation_name="bulk_create")
        for field in stamped:
            field.pre_save(row, add=True)
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([_copy_value(f, getattr(row, f.attname)) for f in fields])


def _copy_value(field, value):
    if value is not None and field.get_internal_type() == "JSONField":
        # COPY's text format takes a JSON document as its text.
        return json.dumps(value, cls=field.encoder)
    return value
