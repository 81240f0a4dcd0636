"""T3 Code's state database, read-only: which tables and columns this build has, the
event log's rows after a position, the projections' current rows, and patience while
the file is locked.

The file is T3's, not ours: it is opened with `mode=ro` (and `query_only`) and never
written. Builds and forks differ, so the schema is detected by tables and columns, not
by migration numbers; an unknown column is counted, a missing optional one reads NULL.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

log = logging.getLogger(__name__)

T = TypeVar("T")

# The event log: T3's own table first; a legacy copy only when the own table is absent
# (it may hold copies of the same events: never read both).
EVENT_TABLES = ("orchestration_events", "orchestration_v2_events")

# Each field the follower reads, and the column names it has had.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "sequence": ("sequence", "seq", "global_sequence"),
    "event_id": ("event_id", "id"),
    "aggregate_kind": ("aggregate_kind",),
    "stream_id": ("stream_id", "aggregate_id", "thread_id"),
    "event_type": ("event_type", "type"),
    "occurred_at": ("occurred_at", "created_at"),
    "payload_json": ("payload_json", "payload"),
    "metadata_json": ("metadata_json", "metadata"),
    "version": ("application_event_version", "event_version"),
    "command_id": ("command_id",),
}
REQUIRED_EVENT_FIELDS = ("sequence", "event_type", "payload_json")
KNOWN_EVENT_COLUMNS = frozenset(
    {name for names in EVENT_FIELDS.values() for name in names}
    | {"stream_version", "command_id", "causation_event_id", "correlation_id", "actor_kind"}
)


def _columns_named(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The projections a first import reads: name -> (table, columns it may have).
PROJECTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "threads": (
        "orchestration_v2_projection_threads",
        _columns_named(
            "thread_id project_id title default_provider provider_instance_id runtime_mode "
            "interaction_mode active_provider_thread_id created_at updated_at archived_at "
            "deleted_at payload_json"
        ),
    ),
    "runs": (
        "orchestration_v2_projection_runs",
        _columns_named(
            "run_id thread_id ordinal provider provider_instance_id provider_thread_id status "
            "requested_at completed_at payload_json"
        ),
    ),
    "subagents": (
        "orchestration_v2_projection_subagents",
        _columns_named(
            "subagent_id thread_id run_id parent_node_id provider driver provider_instance_id "
            "provider_thread_id child_thread_id origin status started_at completed_at "
            "updated_at payload_json"
        ),
    ),
    "provider_threads": (
        "orchestration_v2_projection_provider_threads",
        _columns_named(
            "provider_thread_id thread_id owner_node_id provider driver provider_instance_id "
            "provider_session_id status first_run_ordinal last_run_ordinal updated_at "
            "payload_json"
        ),
    ),
    "messages": (
        "orchestration_v2_projection_messages",
        _columns_named(
            "message_id thread_id run_id node_id role streaming created_at updated_at payload_json"
        ),
    ),
    "turn_items": (
        "orchestration_v2_projection_turn_items",
        _columns_named(
            "turn_item_id thread_id run_id node_id provider_thread_id provider_turn_id "
            "parent_item_id ordinal type status updated_at payload_json"
        ),
    ),
    "context_transfers": (
        "orchestration_v2_projection_context_transfers",
        _columns_named(
            "context_transfer_id source_thread_id target_thread_id target_run_id type status "
            "source_provider target_provider source_provider_instance_id "
            "target_provider_instance_id updated_at payload_json"
        ),
    ),
}


class StateDBError(Exception):
    """The state database cannot be read: missing, not T3's, or unreadable."""


class Busy(StateDBError):
    """The state database stayed locked (or busy) past the retries."""


class Row(NamedTuple):
    """One row of the event log: its payload decoded (None when it is not JSON), its
    metadata as stored (one event type reads it: `decoded` then; a dict passes as is)."""

    sequence: int
    event_id: str | None
    aggregate_kind: str | None
    stream_id: str | None
    event_type: str | None
    occurred_at: str | None
    payload: Any
    metadata: Any
    version: int | None
    command_id: str | None = None  # the command that wrote it (a restart's reconcile, say)


# Startup and shutdown recovery write under these commands (facts §7).
RESTART_COMMAND = "command:runtime-reconcile:"


@dataclass(frozen=True)
class EventLog:
    table: str
    columns: dict[str, str | None]  # field -> column (None: this build has none)

    def select(self) -> str:
        parts = [
            f'"{column}" AS {name}' if column else f"NULL AS {name}"
            for name, column in self.columns.items()
        ]
        return f'SELECT {", ".join(parts)} FROM "{self.table}"'

    @property
    def sequence(self) -> str:
        return f'"{self.columns["sequence"]}"'


@dataclass(frozen=True)
class Schema:
    log: EventLog | None
    projections: dict[str, frozenset[str]]  # name -> its columns, for those present
    unknown_columns: tuple[str, ...] = ()  # "table.column", counted once per detection

    def has(self, projection: str, column: str = "payload_json") -> bool:
        return column in self.projections.get(projection, ())


def detect(conn: sqlite3.Connection) -> Schema:
    """The event log and projections this file has, found by tables and columns."""
    tables = {
        name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    columns = {name: _columns(conn, name) for name in tables}
    unknown: list[str] = []
    log_table = None
    for name in EVENT_TABLES:
        if name not in tables:
            continue
        found = {
            field_name: next((c for c in candidates if c in columns[name]), None)
            for field_name, candidates in EVENT_FIELDS.items()
        }
        if all(found[f] for f in REQUIRED_EVENT_FIELDS):
            log_table = EventLog(name, found)
            unknown += [f"{name}.{c}" for c in sorted(columns[name] - KNOWN_EVENT_COLUMNS)]
            break
    projections = {}
    for key, (table, known) in PROJECTIONS.items():
        if table in tables:
            projections[key] = frozenset(columns[table])
            unknown += [f"{table}.{c}" for c in sorted(columns[table] - known)]
    return Schema(log_table, projections, tuple(unknown))


def _columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    return frozenset(row[1] for row in conn.execute(f'PRAGMA table_info("{table}")'))


def is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


@dataclass(frozen=True)
class Identity:
    """How a file is known again: its inode, and its first event row."""

    inode: int | None
    marker: str  # "<sequence>:<event id>" of the first row, "" while the log is empty


@dataclass
class StateDB:
    """A read-only connection to T3's state database, reopened when the file is replaced.

    Every read retries while SQLite says the file is locked or busy, with backoff from
    `backoff` doubling to 2 s, for `retry_for` seconds in all; then `Busy`.
    """

    path: str
    busy_timeout: float = 0.25
    retry_for: float = 30.0
    backoff: float = 0.05
    sleep: Callable[[float], None] = time.sleep
    retries: int = 0
    _conn: sqlite3.Connection | None = field(default=None, repr=False)
    _inode: int | None = field(default=None, repr=False)
    _schema: Schema | None = field(default=None, repr=False)

    # --- connection -----------------------------------------------------------------

    def open(self) -> sqlite3.Connection:
        if self._conn is None:
            path = Path(self.path).expanduser()
            if not path.is_file():
                raise StateDBError(f"{path}: no such file (is T3's state database elsewhere?)")
            uri = f"file:{quote(str(path.resolve()))}?mode=ro"
            try:
                conn = sqlite3.connect(
                    uri,
                    uri=True,
                    timeout=self.busy_timeout,
                    isolation_level=None,  # transactions only where a snapshot is needed
                    check_same_thread=False,
                )
                conn.execute("PRAGMA query_only = 1")
            except sqlite3.Error as exc:
                raise StateDBError(f"{path}: cannot open read-only: {exc}") from None
            self._conn, self._inode, self._schema = conn, _inode(path), None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._schema = None, None

    def replaced_on_disk(self) -> bool:
        """Another file now sits at the path (a restore, a move): reopen to read it."""
        return self._conn is not None and _inode(Path(self.path).expanduser()) != self._inode

    @property
    def schema(self) -> Schema:
        if self._schema is None:
            schema = self.retry(lambda: detect(self.open()))
            if schema.log is None:
                # T3 creates the file a moment before its migrations commit: a file
                # without the log is detected again next time, never kept as it is.
                raise StateDBError(
                    f"{self.path}: no T3 event log in this file (yet): T3 may still be "
                    "creating it, or it is not T3's state database; nothing read"
                )
            self._schema = schema
        return self._schema

    def retry(self, read: Callable[[], T]) -> T:
        """`read()`, again while the file is locked or busy; Busy when that lasts."""
        delay, deadline = self.backoff, time.monotonic() + self.retry_for
        while True:
            try:
                return read()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise StateDBError(f"{self.path}: {exc}") from None
                if time.monotonic() + delay > deadline:
                    raise Busy(f"{self.path}: still locked after {self.retry_for:.0f} s") from None
                self.retries += 1
                log.info("T3 state database %s is locked; retrying in %.2f s", self.path, delay)
                self.sleep(delay)
                delay = min(delay * 2, 2.0)
            except sqlite3.DatabaseError as exc:
                raise StateDBError(f"{self.path}: {exc}") from None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every read inside sees the same state of the file."""
        conn = self.open()
        self.retry(lambda: conn.execute("BEGIN"))
        try:
            yield
        finally:
            conn.execute("COMMIT")

    # --- the event log --------------------------------------------------------------

    def identity(self) -> Identity:
        def read():
            log_ = self.schema.log
            if log_ is None:
                return ""
            row = (
                self.open()
                .execute(
                    f"SELECT {log_.sequence}, {log_.columns['event_id'] or 'NULL'} "
                    f'FROM "{log_.table}" ORDER BY {log_.sequence} LIMIT 1'
                )
                .fetchone()
            )
            return "" if row is None else f"{row[0]}:{row[1]}"

        self.open()
        return Identity(self._inode, self.retry(read))

    def event_id_at(self, sequence: int) -> str | None:
        """The id of the row at `sequence` ("" when this build has no ids; None: no row)."""
        log_ = self.schema.log
        if log_ is None:
            return None
        column = log_.columns["event_id"]
        row = self.retry(
            lambda: (
                self.open()
                .execute(
                    f'SELECT {f"{column}" if column else "NULL"} FROM "{log_.table}" '
                    f"WHERE {log_.sequence} = ?",
                    (sequence,),
                )
                .fetchone()
            )
        )
        return None if row is None else str(row[0] or "")

    def max_sequence(self) -> int:
        log_ = self.schema.log
        if log_ is None:
            return 0
        (value,) = self.retry(
            lambda: (
                self.open().execute(f'SELECT MAX({log_.sequence}) FROM "{log_.table}"').fetchone()
            )
        )
        return int(value or 0)

    def rows_after(self, position: int, limit: int) -> list[Row]:
        """Up to `limit` rows with a sequence above `position`, in sequence order (gaps are
        normal); every row, old versions' included, so the position passes them too."""
        log_ = self.schema.log
        if log_ is None:
            return []
        query = f"{log_.select()} WHERE {log_.sequence} > ? ORDER BY {log_.sequence} LIMIT ?"
        raw = self.retry(lambda: self.open().execute(query, (position, limit)).fetchall())
        return [
            Row(
                int(r[0]),
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                decoded(r[6]),
                r[7],
                _int(r[8]),
                r[9] if isinstance(r[9], str) else None,
            )
            for r in raw
        ]

    def runs_ended_by_restart(self) -> set[str]:
        """The runs, and the tasks, a restart's recovery (or a stop's) ended: an import
        needs it, projections keep no command."""
        log_ = self.schema.log
        if log_ is None or not log_.columns.get("command_id"):
            return set()
        query = (
            f'SELECT "{log_.columns["payload_json"]}" FROM "{log_.table}" '
            f'WHERE "{log_.columns["command_id"]}" LIKE ? '
            f'AND "{log_.columns["event_type"]}" IN (?, ?)'
        )
        raw = self.retry(
            lambda: (
                self.open()
                .execute(query, (RESTART_COMMAND + "%", "run.updated", "subagent.updated"))
                .fetchall()
            )
        )
        ended = set()
        for (payload,) in raw:
            payload = decoded(payload)
            if isinstance(payload, dict) and isinstance(payload.get("id"), str):
                ended.add(payload["id"])
        return ended

    # --- projections ----------------------------------------------------------------

    def payloads(self, projection: str, where: str = "", order: str = "") -> list[Any]:
        """The decoded payload_json of a projection's rows (empty when it is absent)."""
        if not self.schema.has(projection):
            return []
        table = PROJECTIONS[projection][0]
        query = f'SELECT payload_json FROM "{table}"'
        if where:
            query += f" WHERE {where}"
        if order:
            query += f" ORDER BY {order}"
        rows = self.retry(lambda: self.open().execute(query).fetchall())
        return [decoded(payload) for (payload,) in rows]

    def message(self, message_id: str) -> Any:
        """A message's current payload, or None."""
        if not self.schema.has("messages", "message_id"):
            return None
        table = PROJECTIONS["messages"][0]
        row = self.retry(
            lambda: (
                self.open()
                .execute(f'SELECT payload_json FROM "{table}" WHERE message_id = ?', (message_id,))
                .fetchone()
            )
        )
        return None if row is None else decoded(row[0])

    def last_assistant_text(self, run_id: str) -> str | None:
        """A run's final text: the current text of its last assistant message."""
        cols = self.schema.projections.get("messages", frozenset())
        if not {"run_id", "role", "payload_json"} <= cols:
            return None
        table = PROJECTIONS["messages"][0]
        when = next((c for c in ("updated_at", "created_at") if c in cols), "rowid")
        rows = self.retry(
            lambda: (
                self.open()
                .execute(
                    f'SELECT payload_json FROM "{table}" WHERE run_id = ? AND role = ? '
                    f"ORDER BY {when} DESC",
                    (run_id, "assistant"),
                )
                .fetchall()
            )
        )
        # T3's choice: the latest non-empty text (an empty one only when all are).
        texts = [_message_text(payload) for (payload,) in rows]
        texts = [text for text in texts if text is not None]
        return next((text for text in texts if text.strip()), texts[0] if texts else None)

    def last_assistant_texts(self) -> dict[str, tuple[str, str]]:
        """run id -> (created_at, text) of each run's last assistant message (an import)."""
        cols = self.schema.projections.get("messages", frozenset())
        if not {"run_id", "role", "payload_json", "created_at"} <= cols:
            return {}
        table = PROJECTIONS["messages"][0]
        when = "updated_at" if "updated_at" in cols else "created_at"
        # T3's choice per run: the latest non-empty text. Ordered by (non-empty, time),
        # the last row of each run is the one.
        rows = self.retry(
            lambda: (
                self.open()
                .execute(
                    f'SELECT run_id, {when}, payload_json FROM "{table}" '
                    "WHERE role = 'assistant' AND run_id IS NOT NULL "
                    f"ORDER BY run_id, {when}"
                )
                .fetchall()
            )
        )
        texts: dict[str, tuple[str, str]] = {}
        for run_id, when_at, payload in rows:
            text = _message_text(payload)
            if text is None:
                continue
            last = texts.get(run_id)
            if last is None or text.strip() or not last[1].strip():
                texts[run_id] = (when_at or "", text)
        return texts


def _message_text(payload: Any) -> str | None:
    payload = decoded(payload)
    text = payload.get("text") if isinstance(payload, dict) else None
    return text if isinstance(text, str) else None


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def decoded(text: Any) -> Any:
    """JSON text decoded (a dict or list passes as is); None when it is not JSON."""
    if text is None or isinstance(text, dict | list):
        return text
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
