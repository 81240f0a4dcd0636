"""A fake T3 Code that writes a state database as T3 does (t3code-facts.md): each change
is one transaction that appends the event row (the whole entity after the change) to
`orchestration_events` and rewrites the entity's row in its projection table.

Tables are made from the definitions in t3code-facts.md, with the columns T3's own
projection store writes. Besides the orchestration-v2 rows it can mix in what a real
file holds: version 1 rows, sequence gaps, dates out of sequence order, event types and
columns the follower does not know, and a legacy `orchestration_v2_events` copy.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

TABLES = """
CREATE TABLE orchestration_events (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id TEXT NOT NULL UNIQUE,
  aggregate_kind TEXT NOT NULL,
  stream_id TEXT NOT NULL,
  stream_version INTEGER NOT NULL,
  event_type TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  command_id TEXT,
  causation_event_id TEXT,
  correlation_id TEXT,
  actor_kind TEXT NOT NULL DEFAULT 'server',
  payload_json TEXT NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  application_event_version INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX idx_orchestration_events_stream ON orchestration_events(stream_id, stream_version);
CREATE TABLE orchestration_v2_projection_threads (
  thread_id TEXT PRIMARY KEY, project_id TEXT, title TEXT, default_provider TEXT,
  provider_instance_id TEXT, runtime_mode TEXT, interaction_mode TEXT,
  active_provider_thread_id TEXT, created_at TEXT, updated_at TEXT, archived_at TEXT,
  deleted_at TEXT, payload_json TEXT NOT NULL
);
CREATE TABLE orchestration_v2_projection_runs (
  run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, ordinal INTEGER NOT NULL, provider TEXT,
  provider_instance_id TEXT, provider_thread_id TEXT, status TEXT NOT NULL,
  requested_at TEXT NOT NULL, completed_at TEXT, payload_json TEXT NOT NULL
);
CREATE TABLE orchestration_v2_projection_subagents (
  subagent_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, run_id TEXT, parent_node_id TEXT,
  provider TEXT, driver TEXT, provider_instance_id TEXT, provider_thread_id TEXT,
  child_thread_id TEXT, origin TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT,
  completed_at TEXT, updated_at TEXT NOT NULL, payload_json TEXT NOT NULL
);
CREATE TABLE orchestration_v2_projection_provider_threads (
  provider_thread_id TEXT PRIMARY KEY, thread_id TEXT, owner_node_id TEXT, provider TEXT,
  driver TEXT, provider_instance_id TEXT, provider_session_id TEXT, status TEXT,
  first_run_ordinal INTEGER, last_run_ordinal INTEGER, updated_at TEXT,
  payload_json TEXT NOT NULL
);
CREATE TABLE orchestration_v2_projection_messages (
  message_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, run_id TEXT, node_id TEXT,
  role TEXT NOT NULL, streaming INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL, payload_json TEXT NOT NULL
);
CREATE INDEX idx_projection_messages_run ON orchestration_v2_projection_messages(run_id);
CREATE TABLE orchestration_v2_projection_context_transfers (
  context_transfer_id TEXT PRIMARY KEY, source_thread_id TEXT, target_thread_id TEXT,
  target_run_id TEXT, type TEXT NOT NULL, status TEXT NOT NULL, source_provider TEXT,
  target_provider TEXT, source_provider_instance_id TEXT, target_provider_instance_id TEXT,
  updated_at TEXT, payload_json TEXT NOT NULL
);
"""

TURN_ITEMS = """
CREATE TABLE IF NOT EXISTS orchestration_v2_projection_turn_items (
  turn_item_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, run_id TEXT, node_id TEXT,
  provider_thread_id TEXT, provider_turn_id TEXT, parent_item_id TEXT, ordinal INTEGER,
  type TEXT NOT NULL, status TEXT NOT NULL, updated_at TEXT, payload_json TEXT NOT NULL
);
"""

LEGACY_COPY = """
CREATE TABLE orchestration_v2_events (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE,
  stream_id TEXT NOT NULL, event_type TEXT NOT NULL, occurred_at TEXT NOT NULL,
  payload_json TEXT NOT NULL, metadata_json TEXT NOT NULL DEFAULT '{}'
);
"""

PROVIDER = "claudeAgent"


def run_id(thread: str, ordinal: int) -> str:
    return f"run:thread:{thread}:ordinal:{ordinal}"


def provider_thread_id(thread: str) -> str:
    return f"provider-thread:{PROVIDER}:{thread}"


class FakeT3:
    """Writes T3's rows. Every write is one transaction and one event row; `after_write`
    (if set) is called after each, so a test can follow between any two rows."""

    # The command id of the rows written next (a restart's recovery, say); None: one each.
    command_id: str | None = None

    def __init__(self, path: str | Path, *, wal: bool = True, legacy_copy: bool = False):
        self.path = Path(path)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=10)
        self.conn.execute(f"PRAGMA journal_mode={'WAL' if wal else 'DELETE'}")
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'orchestration_events'"
        ).fetchone()
        if not exists:
            self.conn.executescript(TABLES + (LEGACY_COPY if legacy_copy else ""))
        self.legacy_copy = legacy_copy
        self.entities: dict[tuple[str, str], dict] = {}
        self.versions: dict[str, int] = {}
        self.counter = self.conn.execute("SELECT COUNT(*) FROM orchestration_events").fetchone()[0]
        self.after_write: Callable[[], None] | None = None
        self.writes = 0

    def close(self) -> None:
        self.conn.close()

    # --- the one write path ---------------------------------------------------------

    def _write(
        self,
        event_type: str,
        stream: str,
        payload: dict,
        at: str,
        *,
        projection: tuple[str, dict] | None,
        run: str | None = None,
        version: int = 2,
        aggregate: str = "thread",
    ) -> None:
        self.counter += 1
        self.versions[stream] = self.versions.get(stream, 0) + 1
        event_id = f"evt-{self.counter:08d}"
        metadata = {
            "runId": run,
            "nodeId": None,
            "driver": PROVIDER,
            "providerInstanceId": PROVIDER,
            "rawEventId": f"raw-{self.counter}",
        }
        payload_json = json.dumps(payload)
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(
            "INSERT INTO orchestration_events (event_id, aggregate_kind, stream_id, "
            "stream_version, event_type, occurred_at, command_id, actor_kind, payload_json, "
            "metadata_json, application_event_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event_id,
                aggregate,
                stream,
                self.versions[stream],
                event_type,
                at,
                self.command_id or f"cmd-{self.counter}",
                "server",
                payload_json,
                json.dumps(metadata),
                version,
            ),
        )
        if self.legacy_copy:
            self.conn.execute(
                "INSERT INTO orchestration_v2_events (event_id, stream_id, event_type, "
                "occurred_at, payload_json) VALUES (?, ?, ?, ?, ?)",
                (event_id, stream, event_type, at, payload_json),
            )
        if projection is not None:
            table, columns = projection
            columns = {**columns, "payload_json": payload_json}
            names = ", ".join(columns)
            marks = ", ".join("?" for _ in columns)
            self.conn.execute(
                f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({marks})",
                tuple(columns.values()),
            )
        self.conn.execute("COMMIT")
        self.writes += 1
        if self.after_write is not None:
            self.after_write()

    def _entity(self, kind: str, entity_id: str) -> dict:
        return self.entities[(kind, entity_id)]

    # --- threads --------------------------------------------------------------------

    def thread(
        self,
        thread_id: str,
        *,
        at: str,
        title: str,
        parent: str | None = None,
        relationship: str | None = None,
        created_at: str | None = None,
    ) -> dict:
        payload = {
            "id": thread_id,
            "projectId": "project-1",
            "title": title,
            "providerInstanceId": PROVIDER,
            "runtimeMode": "full-access",
            "interactionMode": "default",
            "activeProviderThreadId": None,
            # As T3 writes it: the parent link is nested (J contracts, and the kit's rows).
            "lineage": {
                "parentThreadId": parent,
                "relationshipToParent": relationship,
                "rootThreadId": parent or thread_id,
            },
            "createdAt": created_at or at,
            "updatedAt": at,
            "archivedAt": None,
            "deletedAt": None,
        }
        self.entities[("thread", thread_id)] = payload
        self._write(
            "thread.created",
            thread_id,
            payload,
            at,
            projection=(
                "orchestration_v2_projection_threads",
                {
                    "thread_id": thread_id,
                    "project_id": "project-1",
                    "title": title,
                    "default_provider": PROVIDER,
                    "provider_instance_id": PROVIDER,
                    "created_at": payload["createdAt"],
                    "updated_at": at,
                },
            ),
        )
        return payload

    # --- subagents ------------------------------------------------------------------

    def subagent(
        self,
        subagent_id: str,
        *,
        at: str,
        thread: str,
        run: str | None,
        child: str | None = None,
        title: str | None = None,
        prompt: str = "",
        origin: str = "app_owned",
        status: str = "pending",
        **more: Any,
    ) -> dict:
        payload = {
            "id": subagent_id,
            "threadId": thread,
            "runId": run,
            "parentNodeId": f"node:{run}",
            "origin": origin,
            "createdBy": {"kind": "agent"},
            "driver": PROVIDER,
            "providerInstanceId": PROVIDER,
            "providerThreadId": None,
            "childThreadId": child,
            "nativeTaskRef": None,
            "prompt": prompt,
            "title": title,
            "model": None,
            "status": status,
            "result": None,
            "startedAt": at if status not in ("pending", "idle") else None,
            "completedAt": None,
            "updatedAt": at,
            **more,
        }
        self.entities[("subagent", subagent_id)] = payload
        self._write_subagent(payload, at)
        return payload

    def update_subagent(self, subagent_id: str, *, at: str, **changes: Any) -> dict:
        payload = {**self._entity("subagent", subagent_id), **changes, "updatedAt": at}
        if payload["status"] in ("running", "waiting") and payload["startedAt"] is None:
            payload["startedAt"] = at
        if payload["status"] in ("completed", "failed", "cancelled", "interrupted"):
            payload["completedAt"] = payload.get("completedAt") or at
        self.entities[("subagent", subagent_id)] = payload
        self._write_subagent(payload, at)
        return payload

    def _write_subagent(self, p: dict, at: str) -> None:
        self._write(
            "subagent.updated",
            p["threadId"],
            p,
            at,
            run=p["runId"],
            projection=(
                "orchestration_v2_projection_subagents",
                {
                    "subagent_id": p["id"],
                    "thread_id": p["threadId"],
                    "run_id": p["runId"],
                    "parent_node_id": p["parentNodeId"],
                    "provider": PROVIDER,
                    "driver": PROVIDER,
                    "provider_instance_id": PROVIDER,
                    "child_thread_id": p["childThreadId"],
                    "origin": p["origin"],
                    "status": p["status"],
                    "started_at": p["startedAt"],
                    "completed_at": p["completedAt"],
                    "updated_at": p["updatedAt"],
                },
            ),
        )

    # --- runs -----------------------------------------------------------------------

    def run(
        self,
        thread: str,
        ordinal: int,
        *,
        at: str,
        user_message: str | None = None,
        status: str = "queued",
    ) -> str:
        rid = run_id(thread, ordinal)
        payload = {
            "id": rid,
            "threadId": thread,
            "ordinal": ordinal,
            "providerInstanceId": PROVIDER,
            "providerThreadId": provider_thread_id(thread),
            "status": status,
            "requestedAt": at,
            "startedAt": None,
            "completedAt": None,
            "userMessageId": user_message,
        }
        self.entities[("run", rid)] = payload
        self._write_run("run.created", payload, at)
        return rid

    def update_run(self, rid: str, *, at: str, **changes: Any) -> dict:
        payload = {**self._entity("run", rid), **changes}
        if payload["status"] in ("starting", "running") and payload["startedAt"] is None:
            payload["startedAt"] = at
        if payload["status"] in ("completed", "failed", "interrupted", "cancelled"):
            payload["completedAt"] = payload.get("completedAt") or at
        self.entities[("run", rid)] = payload
        self._write_run("run.updated", payload, at)
        return payload

    def _write_run(self, event_type: str, p: dict, at: str) -> None:
        self._write(
            event_type,
            p["threadId"],
            p,
            at,
            run=p["id"],
            projection=(
                "orchestration_v2_projection_runs",
                {
                    "run_id": p["id"],
                    "thread_id": p["threadId"],
                    "ordinal": p["ordinal"],
                    "provider": PROVIDER,
                    "provider_instance_id": PROVIDER,
                    "provider_thread_id": p["providerThreadId"],
                    "status": p["status"],
                    "requested_at": p["requestedAt"],
                    "completed_at": p["completedAt"],
                },
            ),
        )

    # --- messages -------------------------------------------------------------------

    def message(
        self,
        message_id: str,
        *,
        at: str,
        thread: str,
        role: str,
        text: str = "",
        run: str | None = None,
        notification: dict | None = None,
        streaming: bool = False,
        **more: Any,
    ) -> dict:
        payload = {
            "id": message_id,
            "threadId": thread,
            "runId": run,
            "nodeId": None,
            "role": role,
            "text": text,
            "attachments": [],
            "streaming": streaming,
            "createdAt": at,
            "updatedAt": at,
            **({"notification": notification} if notification else {}),
            **more,
        }
        self.entities[("message", message_id)] = payload
        self._write_message(payload, at)
        return payload

    def update_message(self, message_id: str, *, at: str, **changes: Any) -> dict:
        payload = {**self._entity("message", message_id), **changes, "updatedAt": at}
        self.entities[("message", message_id)] = payload
        self._write_message(payload, at)
        return payload

    def _write_message(self, p: dict, at: str) -> None:
        self._write(
            "message.updated",
            p["threadId"],
            p,
            at,
            run=p["runId"],
            projection=(
                "orchestration_v2_projection_messages",
                {
                    "message_id": p["id"],
                    "thread_id": p["threadId"],
                    "run_id": p["runId"],
                    "role": p["role"],
                    "streaming": int(p["streaming"]),
                    "created_at": p["createdAt"],
                    "updated_at": p["updatedAt"],
                },
            ),
        )

    # --- the provider thread's background roster -----------------------------------

    def roster(
        self, thread: str, entries: list[dict], *, at: str, run: str | None = None, status="idle"
    ) -> dict:
        pid = provider_thread_id(thread)
        payload = {
            "id": pid,
            "driver": PROVIDER,
            "providerInstanceId": PROVIDER,
            "providerSessionId": "session-1",
            "appThreadId": thread,
            "ownerNodeId": None,
            "nativeThreadRef": None,
            "nativeConversationHeadRef": None,
            "status": status,
            "firstRunOrdinal": 1,
            "lastRunOrdinal": None,
            "handoffIds": [],
            "forkedFrom": None,
            "pendingBackgroundTasks": entries,
            "createdAt": at,
            "updatedAt": at,
        }
        self.entities[("provider-thread", pid)] = payload
        self._write(
            "provider-thread.updated",
            thread,
            payload,
            at,
            run=run,
            projection=(
                "orchestration_v2_projection_provider_threads",
                {
                    "provider_thread_id": pid,
                    "thread_id": thread,
                    "provider": PROVIDER,
                    "driver": PROVIDER,
                    "provider_instance_id": PROVIDER,
                    "provider_session_id": "session-1",
                    "status": status,
                    "updated_at": at,
                },
            ),
        )
        return payload

    # --- turn items: errors, tool calls --------------------------------------------

    def turn_item(self, item_id: str, *, at: str, thread: str, run: str, type: str, **fields):
        """A turn item as T3 writes it (an `error` with its `failure`, a `dynamic_tool`
        call with `toolName`, `input`, `output`); written again with the same id, it is
        the item's next state. The projection table is made when first needed, so the
        other stories' files stay as they were."""
        before = self.entities.get(("turn-item", item_id), {})
        payload = {
            "id": item_id,
            "threadId": thread,
            "runId": run,
            "nodeId": f"node:{item_id}",
            "parentItemId": None,
            "status": "running",
            "title": None,
            "startedAt": before.get("startedAt", at),
            "completedAt": None,
            "type": type,
            **{k: v for k, v in before.items() if k not in ("updatedAt", "status")},
            **fields,
            "updatedAt": at,
        }
        if payload["status"] != "running":
            payload["completedAt"] = payload["completedAt"] or at
        self.entities[("turn-item", item_id)] = payload
        self.conn.executescript(TURN_ITEMS)
        self._write(
            "turn-item.updated",
            thread,
            payload,
            at,
            run=run,
            projection=(
                "orchestration_v2_projection_turn_items",
                {
                    "turn_item_id": item_id,
                    "thread_id": thread,
                    "run_id": run,
                    "node_id": payload["nodeId"],
                    "type": type,
                    "status": payload["status"],
                    "updated_at": at,
                },
            ),
        )
        return payload

    # --- context transfers ----------------------------------------------------------

    def transfer(
        self,
        transfer_id: str,
        *,
        at: str,
        source_thread: str,
        target_thread: str,
        source_run: str,
        target_run: str | None = None,
        transfer_type: str = "subagent_result",
        status: str = "ready",
    ) -> dict:
        payload = {
            "id": transfer_id,
            "type": transfer_type,
            "status": status,
            "sourceThreadId": source_thread,
            "targetThreadId": target_thread,
            "targetRunId": target_run,
            "sourcePoint": {"threadId": source_thread, "runId": source_run},
            "sourceProviderInstanceId": PROVIDER,
            "targetProviderInstanceId": PROVIDER,
            "createdAt": at,
            "updatedAt": at,
        }
        self.entities[("transfer", transfer_id)] = payload
        # The transfer's event sits in the parent thread's stream.
        self._write(
            "context-transfer.created",
            target_thread,
            payload,
            at,
            projection=(
                "orchestration_v2_projection_context_transfers",
                {
                    "context_transfer_id": transfer_id,
                    "source_thread_id": source_thread,
                    "target_thread_id": target_thread,
                    "target_run_id": target_run,
                    "type": transfer_type,
                    "status": status,
                    "source_provider": PROVIDER,
                    "target_provider": PROVIDER,
                    "updated_at": at,
                },
            ),
        )
        return payload

    # --- what else a real file holds ------------------------------------------------

    def legacy_v1(self, *, at: str, thread: str = "legacy-thread") -> None:
        """An orchestration-v1 row (older builds kept writing them beside v2)."""
        self._write(
            "thread.message-sent",
            thread,
            {"threadId": thread, "text": "from version 1"},
            at,
            projection=None,
            version=1,
        )

    def other_aggregate(self, *, at: str) -> None:
        self._write(
            "project.created",
            "project-1",
            {"id": "project-1"},
            at,
            projection=None,
            aggregate="project",
        )

    def unknown_event(self, *, at: str, thread: str, event_type: str = "thread.teleported"):
        """An event type this follower has never heard of."""
        self._write(event_type, thread, {"id": thread, "whereTo": "elsewhere"}, at, projection=None)

    def ignored_event(self, *, at: str, thread: str, run: str | None = None) -> None:
        """A turn item: known to T3, and output of the run under way."""
        self._write(
            "turn-item.updated",
            thread,
            {
                "id": f"item-{self.counter + 1}",
                "threadId": thread,
                "runId": run,
                "type": "command_execution",
                "status": "running",
                "updatedAt": at,
            },
            at,
            projection=None,
            run=run,
        )

    def gap(self, size: int = 7) -> None:
        """Skip sequence numbers, as a rolled-back transaction or a deletion does."""
        self.conn.execute(
            "UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'orchestration_events'",
            (size,),
        )

    def add_column(self, table: str, column: str) -> None:
        self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT DEFAULT 'x'")
