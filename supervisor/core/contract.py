"""The event schema of docs/event-contract.md §2–3, as pydantic models.

`parse_event(raw)` returns an `Event` or raises `EventError` with a message that
names the field and the problem; unknown fields inside `data` are ignored.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")


def _timestamp(value: Any) -> datetime:
    if not isinstance(value, str) or not RFC3339.match(value):
        raise ValueError("must be an RFC 3339 timestamp with an offset, like 2026-11-05T22:40:00Z")
    text = value.upper().replace(" ", "T").replace("Z", "+00:00")
    # Python keeps microseconds only; finer digits are cut, not rounded.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError as exc:
        raise ValueError(f"is not a real time: {exc}") from None


Timestamp = Annotated[datetime, BeforeValidator(_timestamp)]
Id = Annotated[StrictStr, Field(min_length=1, max_length=500)]
Text = StrictStr | None

RunStatus = Literal["completed", "failed", "interrupted", "cancelled"]
ReportStatus = Literal["running", "waiting", "completed", "failed", "cancelled", "interrupted"]
WorkState = Literal["working", "waiting_for_children", "result_available"]


class Data(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ThreadSeen(Data):
    thread: Id
    title: Text = None
    parent_thread: Id | None = None
    provider: Text = None
    model: Text = None


class TaskDelegated(Data):
    task: Id
    parent_thread: Id
    child_thread: Id | None = None
    title: StrictStr
    # A compatible extension: followers of orchestrators that do not store the mode (T3)
    # leave it out rather than guess; no rule reads it.
    mode: Literal["async", "wait"] | None = None
    prompt: Text = None
    client_request_id: Text = None
    parent_run: Id | None = None
    target_env: Text = None
    requested_at: Timestamp | None = None
    follow_up_of: Id | None = None


class TaskReported(Data):
    task: Id
    status: ReportStatus
    work_state: WorkState | None = None
    summary: Text = None
    result_run: Id | None = None
    error: Text = None
    pending_child_runs: StrictBool | None = None


class Trigger(Data):
    kind: Literal["delegation", "background", "wake", "restart", "message", "scheduled", "other"]
    task: Id | None = None
    item: Id | None = None
    wake: Id | None = None
    run: Id | None = None

    @model_validator(mode="after")
    def _reference(self):
        needed = TRIGGER_REFERENCE.get(self.kind)
        if needed and getattr(self, needed) is None:
            raise ValueError(f"a {self.kind!r} trigger needs {needed!r}")
        return self

    @property
    def reference(self) -> str | None:
        needed = TRIGGER_REFERENCE.get(self.kind)
        return getattr(self, needed) if needed else None


TRIGGER_REFERENCE = {"delegation": "task", "background": "item", "wake": "wake", "restart": "run"}


class RunRequested(Data):
    thread: Id
    run: Id
    ordinal: Annotated[StrictInt, Field(ge=1)]
    trigger: Trigger


class RunStarted(Data):
    thread: Id
    run: Id


class RunActivity(Data):
    thread: Id
    run: Id
    note: Text = None


class RunFinished(Data):
    thread: Id
    run: Id
    status: RunStatus
    summary: StrictStr
    error: Text = None


class BackgroundStarted(Data):
    thread: Id
    item: Id
    kind: Literal["command", "monitor", "subagent", "other"]
    run: Id | None = None
    label: Text = None
    awaited: StrictBool | None = None


class BackgroundFinished(Data):
    thread: Id
    item: Id
    status: Literal["completed", "failed", "cancelled"] | None = None


class WakeSource(Data):
    kind: Literal["task", "background", "message", "scheduled", "manual"]
    task: Id | None = None
    thread: Id | None = None
    item: Id | None = None

    @model_validator(mode="after")
    def _reference(self):
        if self.kind in ("task", "manual") and self.task is None:
            raise ValueError(f"a {self.kind!r} source needs 'task'")
        if self.kind == "background" and self.item is None:
            raise ValueError("a 'background' source needs 'item'")
        return self


class WakeQueued(Data):
    wake: Id
    thread: Id
    source: WakeSource
    summary: Text = None
    outcome: Literal["completed", "failed", "cancelled", "updated"] | None = None


class WakeDelivered(Data):
    wake: Id
    run: Id | None = None


class ToolRejected(Data):
    thread: Id
    tool: StrictStr
    code: StrictStr
    message: StrictStr
    caller: Literal["root", "native_subagent", "self_started_turn"] | None = None


DATA_BY_TYPE: dict[str, type[Data]] = {
    "thread.seen": ThreadSeen,
    "task.delegated": TaskDelegated,
    "task.reported": TaskReported,
    "run.requested": RunRequested,
    "run.started": RunStarted,
    "run.activity": RunActivity,
    "run.finished": RunFinished,
    "background.started": BackgroundStarted,
    "background.finished": BackgroundFinished,
    "wake.queued": WakeQueued,
    "wake.delivered": WakeDelivered,
    "tool.rejected": ToolRejected,
}


class Envelope(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    type: StrictStr
    at: Timestamp
    env: Annotated[StrictStr, Field(min_length=1, max_length=200)] = "default"
    data: dict


class Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    at: datetime
    env: str
    data: Data


class EventError(ValueError):
    """An event that breaks the contract; the message says which field and why."""


def _describe(error: ValidationError, prefix: str = "") -> str:
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "event"
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{prefix}{where}: {message}")
    return "; ".join(parts)


def parse_event(raw: Any) -> Event:
    if not isinstance(raw, dict):
        raise EventError(f"an event must be a JSON object, not {type(raw).__name__}")
    try:
        envelope = Envelope.model_validate(raw)
    except ValidationError as exc:
        raise EventError(_describe(exc)) from None
    model = DATA_BY_TYPE.get(envelope.type)
    if model is None:
        raise EventError(
            f"type: unknown event type {envelope.type!r}; expected one of "
            + ", ".join(sorted(DATA_BY_TYPE))
        )
    try:
        data = model.model_validate(envelope.data)
    except ValidationError as exc:
        raise EventError(_describe(exc, "data.")) from None
    return Event(id=envelope.id, type=envelope.type, at=envelope.at, env=envelope.env, data=data)


def event_id_of(raw: Any) -> str | None:
    """The id of a raw event if it has a usable one, for rejection reports."""
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]:
        return raw["id"][:200]
    return None
