"""The event schema of docs/event-contract.md §2–3, as pydantic models.

`parse_event(raw)` returns an `Event` or raises `EventError` with a message that
names the field and the problem; unknown fields inside `data` are ignored, but they are
stored too, so every string of an event must be storable text (no NUL, no lone
surrogate: PostgreSQL's text and jsonb refuse them) and its nesting bounded.
"""

from __future__ import annotations

import json
import math
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
from pydantic.json_schema import models_json_schema

from supervisor.core import clock
from supervisor.core.contract.times import outside_window

# Strings that PostgreSQL text and jsonb cannot hold: NUL, and halves of surrogate pairs
# (what a JSON `\ud800` escape decodes to; it is no Unicode character).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MAX_DEPTH = 64
# The offset's hours and minutes are bounded here: Python's parser takes "+05:60" as +06:00.
# RFC 3339 bounds no fraction, so any number of digits is a time (those past
# microseconds are cut below).
RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)


def parse_timestamp(value: Any) -> datetime:
    """An RFC 3339 timestamp with an offset as an aware UTC datetime; ValueError says why
    `value` is not one (a real time, that is: not 2026-02-30, not past 9999 in UTC)."""
    if not isinstance(value, str) or not RFC3339.match(value):
        raise ValueError("must be an RFC 3339 timestamp with an offset, like 2026-11-05T22:40:00Z")
    text = value.upper().replace(" ", "T").replace("Z", "+00:00")
    # Python keeps microseconds only; finer digits are cut, not rounded.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"is not a real time: {exc}") from None


Timestamp = Annotated[datetime, BeforeValidator(parse_timestamp)]
Id = Annotated[StrictStr, Field(min_length=1, max_length=500)]
Text = StrictStr | None
# Values kept in columns of a bounded length (supervisor/core/models/).
Name = Annotated[StrictStr, Field(max_length=200)]
# A compatible extension (issue 31), on `run.finished` and `task.reported`: the
# orchestrator's class of the failure (T3's: provider_error, transport_error,
# permission_error, validation_error, unknown, usage_limit). Any name is taken, so a
# newer build's class is stored as sent; only `usage_limit` is read (account_limit).
FailureClass = Annotated[StrictStr, Field(min_length=1, max_length=40)]

RunStatus = Literal["completed", "failed", "interrupted", "cancelled"]
ReportStatus = Literal["running", "waiting", "completed", "failed", "cancelled", "interrupted"]
WorkState = Literal["working", "waiting_for_children", "result_available"]


class Data(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ThreadSeen(Data):
    thread: Id
    title: Text = None
    parent_thread: Id | None = None
    provider: Name | None = None
    model: Name | None = None


class TaskDelegated(Data):
    task: Id
    parent_thread: Id
    child_thread: Id | None = None
    title: StrictStr
    # A compatible extension: followers of orchestrators that do not store the mode (T3)
    # leave it out rather than guess; no rule reads it.
    mode: Literal["async", "wait"] | None = None
    prompt: Text = None
    client_request_id: Annotated[StrictStr, Field(max_length=500)] | None = None
    parent_run: Id | None = None
    target_env: Name | None = None
    requested_at: Timestamp | None = None
    follow_up_of: Id | None = None


DeliveryRecord = Literal["pending", "claimed", "delivered", "acknowledged", "disposed"]


class TaskReported(Data):
    task: Id
    status: ReportStatus
    work_state: WorkState | None = None
    summary: Text = None
    result_run: Id | None = None
    error: Text = None
    pending_child_runs: StrictBool | None = None
    # A compatible extension (issue 18): "wake" says the orchestrator hands T's result to
    # the parent only by a wake (a read or a tool call's return told as one), so that a
    # terminal report no wake follows is a result that never reached the parent.
    delivery: Literal["wake"] | None = None
    # A compatible extension (issue 28), as on `run.finished`: "restart" says the
    # orchestrator's own restart recovery (or its stop) ended the task; nobody cancelled it.
    cause: Literal["restart"] | None = None
    # Compatible extensions (issue 28), evidence only: the orchestrator's own record of
    # the result's delivery when it keeps one (T3's `completionDelivery` state), and how
    # many deliveries the delegating run's cohort had settled by then (T3 reserves no
    # more after two, T3 #12285).
    delivery_record: DeliveryRecord | None = None
    settled_deliveries: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)] | None = None
    failure_class: FailureClass | None = None


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
    ordinal: Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]
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
    # A compatible extension (issue 18): "restart" says the orchestrator's own restart
    # recovery cut the run; nobody stopped it and nothing will resume it.
    cause: Literal["restart"] | None = None
    failure_class: FailureClass | None = None


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
    tool: Name
    code: Name
    message: StrictStr
    caller: Literal["root", "native_subagent", "self_started_turn"] | None = None


class TaskRequested(Data):
    """A compatible extension (issue 31): a parent asked to delegate a task and no child
    exists yet; the `task.delegated` with the same `client_request_id` says one does."""

    parent_thread: Id
    client_request_id: Id
    parent_run: Id | None = None
    title: Text = None


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
    "task.requested": TaskRequested,
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


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a JSON value")


def read_json(text: str) -> Any:
    """json.loads without NaN and Infinity, which JSON does not have; ValueError says why
    the text cannot be read (a syntax error, a number too long, nesting too deep)."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise ValueError("it nests too deeply to be read") from None


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored, or None when it can."""
    found = UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains U+0000 (NUL), which cannot be stored"
    return f"contains a lone surrogate U+{ord(found.group()):04X}, which is not Unicode text"


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates written as JSON escapes (\\u0000), so it can be
    stored; inside a JSON string the escape reads back as the same character."""
    return UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _fine(value: Any, depth: int) -> bool:
    """_check_storable's question without its messages: the common case, answered
    without building a field path per key."""
    if depth > MAX_DEPTH:
        return False
    kind = type(value)
    if kind is str:
        return UNSTORABLE.search(value) is None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or UNSTORABLE.search(key) or not _fine(item, depth + 1):
                return False
        return True
    if kind is list:
        return all(_fine(item, depth + 1) for item in value)
    if kind is float:
        return math.isfinite(value)
    return kind in (int, bool) or value is None


def _check_storable(raw: Any) -> None:
    """Every string (keys too) storable, every number finite, nesting bounded."""
    if _fine(raw, 0):
        return
    # Something is wrong (or unusual: a subclass of str, say): find what, and where.
    pending = [(raw, "", 0)]
    while pending:
        value, where, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise EventError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            problem = unstorable(value)
            if problem:
                raise EventError(f"{where or 'event'}: {problem}")
        elif isinstance(value, float) and not math.isfinite(value):
            raise EventError(f"{where}: {value} is not a JSON number")
        elif isinstance(value, dict):
            for key, item in value.items():
                name = storable(repr(key)[1:-1]) if isinstance(key, str) else repr(key)
                problem = unstorable(key) if isinstance(key, str) else "is not a string"
                if problem:
                    raise EventError(f"{where or 'event'}: the key '{name}' {problem}")
                pending.append((item, f"{where}.{name}" if where else name, depth + 1))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                pending.append((item, f"{where}.{index}", depth + 1))


def parse_event(raw: Any, now: datetime | None = None) -> Event:
    """The event of `raw`; its times must lie in the window (times.py) around `now`,
    the supervisor's clock unless given."""
    if not isinstance(raw, dict):
        raise EventError(f"an event must be a JSON object, not {type(raw).__name__}")
    _check_storable(raw)
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
    _check_window(envelope.at, data, clock.now() if now is None else now)
    return Event(id=envelope.id, type=envelope.type, at=envelope.at, env=envelope.env, data=data)


def _check_window(at: datetime, data: Data, now: datetime) -> None:
    """Every time of the event inside the window: a time outside it would be judged
    against the supervisor's clock as nonsense (a wake late in the year 9999)."""
    times = {"at": at, "data.requested_at": getattr(data, "requested_at", None)}
    problems = [
        f"{where}: {problem}"
        for where, when in times.items()
        if when is not None and (problem := outside_window(when, now))
    ]
    if problems:
        raise EventError("; ".join(problems))


def event_id_of(raw: Any) -> str | None:
    """The id of a raw event if it has a usable one, for rejection reports: storable and
    at most 200 characters (a dead letter's column), escapes counted and never cut."""
    if not (isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]):
        return None
    shown = ""
    for char in raw["id"][:200]:
        escaped = storable(char)  # six characters for a NUL or a lone surrogate
        if len(shown) + len(escaped) > 200:
            break
        shown += escaped
    return shown


def event_json_schemas(ref_template: str = "#/components/schemas/{model}") -> dict[str, Any]:
    """The envelope and each type's `data` as JSON Schema, for the OpenAPI document:
    `Event` is one of the types, each with its own `data` schema."""
    _, top = models_json_schema(
        [(model, "validation") for model in DATA_BY_TYPE.values()], ref_template=ref_template
    )
    schemas = top["$defs"]
    envelope = Envelope.model_json_schema()["properties"]
    variants = []
    for name, model in DATA_BY_TYPE.items():
        variants.append(
            {
                "type": "object",
                "required": ["id", "type", "at", "data"],
                "properties": {
                    "id": envelope["id"],
                    "type": {"type": "string", "enum": [name]},
                    "at": {"type": "string", "format": "date-time"},
                    "env": envelope["env"],
                    "data": {"$ref": ref_template.format(model=model.__name__)},
                },
            }
        )
    schemas["Event"] = {"oneOf": variants, "description": "docs/event-contract.md §2–3"}
    return schemas
