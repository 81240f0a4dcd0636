"""The connector port: what every connector offers (send a message to a thread, stop a
thread's running work, and say which of these it can do), and the registry that the
connectors fill from their app's `ready` (core acts through it and imports none of them).

A connector is bound to a source (`Source.connector` names it, `Source.connector_settings`
configures it) and acts for that source's tasks. It is called by a worker with an
`Outgoing` that carries the action's idempotency key: the same key sent twice must be
taken once by the orchestrator (or the receiver), since a worker killed after sending
and before recording success sends again.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import quote


@dataclass(frozen=True)
class Capabilities:
    message: bool  # can send a message to a thread (continue, deliver)
    stop: bool  # can stop a thread's running work (cancel)
    stop_needs_run: bool = False  # stopping names a run: without a running one, no cancel

    def allows(self, kind: str) -> bool:
        return self.stop if kind == "cancel" else self.message


@dataclass(frozen=True)
class Outgoing:
    """One action as the orchestrator should see it."""

    action_id: int
    kind: str  # cancel | continue | deliver
    idempotency_key: str  # as sent (`sent_key`): the namespace's, not the bare key asked for
    namespace: str
    task_id: str
    task_title: str
    thread_id: str  # the target: the parent for deliver, the child for continue and cancel
    run_id: str | None  # deliver: the run whose result is sent; cancel: the run to stop
    text: str | None  # the exact message (deliver and continue); None for cancel
    actor: str  # user:NAME | source:NAME
    reason: str | None = None
    queued_runs: tuple[str, ...] = ()  # cancel: the target's runs requested, not started

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {"queued_runs": list(self.queued_runs), "wake": self.wake}

    @property
    def wake(self) -> str | None:
        """The manual wake Supervisor records a confirmed deliver or continue as: an
        orchestrator names it in the run it starts for the action (trigger `wake`), so
        that a continue's run is owned by the task (contract §4, rule 5)."""
        return action_wake(self.kind, self.action_id, self.idempotency_key)

    @property
    def delivery_wake(self) -> str:
        """deliver: the wake Supervisor records the confirmed delivery as (contract §4).
        An orchestrator that reports the wake it queued for the delivery names it so,
        and the two make one wake, not two."""
        return delivery_wake(self.action_id)


def sent_key(namespace_id: int, key: str) -> str:
    """The key an action is sent with (header, body, T3's command ids, a continue's
    wake): the key asked for behind its namespace's mark, so that one key asked in two
    namespaces reaches a shared receiver as two keys, and no key asked in one namespace
    is ever another's. Printable ASCII, at most 200 characters: a key too long for the
    mark is hashed (as unique, and the same for the same key)."""
    mark = f"ns{namespace_id}."
    if len(mark) + len(key) <= SENT_KEY_LIMIT:
        return mark + key
    return f"{mark}sha256:{hashlib.sha256(key.encode()).hexdigest()}"


SENT_KEY_LIMIT = 200


def action_wake(kind: str, action_id: int, key: str) -> str | None:
    """The wake Supervisor records a deliver or continue as, from the action's number
    and the key it is sent with; None for a cancel."""
    if kind == "deliver":
        return delivery_wake(action_id)
    if kind == "continue":
        return continue_wake(key)
    return None


def continue_wake(idempotency_key: str) -> str:
    """The id of the manual wake to the child that records a continue. It derives from
    the key sent, not the action's number, so that a connector can name it in what it
    sends (T3's message id) and know it again when it reads the run back;
    percent-encoded, as T3's own derived ids are, and hashed when long."""
    key = quote(idempotency_key, safe="")
    if len(key) > CONTINUE_KEY_LIMIT:
        key = "sha256:" + hashlib.sha256(idempotency_key.encode()).hexdigest()
    return CONTINUE_WAKE_PREFIX + key


CONTINUE_WAKE_PREFIX = "supervisor:continue:"
CONTINUE_KEY_LIMIT = 200
DELIVERY_WAKE_PREFIX = "supervisor:delivery:"
# Wake ids only Supervisor makes: what an orchestrator reports under them must be a
# wake Supervisor sent (own_records.refused_claims).
SUPERVISOR_WAKE_PREFIXES = (CONTINUE_WAKE_PREFIX, DELIVERY_WAKE_PREFIX)


def delivery_wake(action_id: int) -> str:
    """The id of the manual wake that records delivery `action_id` (action numbers are
    the whole installation's: unique across namespaces)."""
    return f"{DELIVERY_WAKE_PREFIX}{action_id}"


@dataclass(frozen=True)
class Receipt:
    """What the orchestrator answered when it took the action."""

    status: str  # "200", "ok", ...
    detail: str = ""  # an excerpt of its answer, for the audit trail
    duplicate: bool = False  # it had taken this idempotency key before
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        kept = {"status": self.status, "detail": self.detail[:2000], "duplicate": self.duplicate}
        # What the connector did beside the action itself, in words, for the audit trail.
        if self.extra.get("notes"):
            kept["notes"] = [str(note)[:500] for note in self.extra["notes"]][:5]
        return kept


class ConnectorError(Exception):
    """The orchestrator did not take the action. `retryable` says whether trying again
    later may help (a timeout, a 503) or not (a refusal, bad settings)."""

    def __init__(self, message: str, *, retryable: bool, detail: str = ""):
        super().__init__(message)
        self.retryable = retryable
        self.detail = detail


# HTTP answers worth trying again later: timeouts, "too early", rate limits, 5xx.
RETRYABLE_STATUSES = frozenset({408, 425, 429})


def retryable_status(status: int) -> bool:
    return status >= 500 or status in RETRYABLE_STATUSES


class SettingsError(ValueError):
    """A connector's settings are wrong; the message names the field and the problem."""


class Connector(ABC):
    name: ClassVar[str]
    label: ClassVar[str]  # for people: "Webhook", "Simulated orchestrator"

    def __init__(self, source, settings: dict[str, Any]):
        self.source = source
        self.settings = self.check_settings(settings)

    @classmethod
    @abstractmethod
    def check_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        """The settings, validated and with defaults; SettingsError when they are wrong."""

    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    @abstractmethod
    def send_message(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        """Send `outgoing.text` to `outgoing.thread_id` (continue, deliver)."""

    @abstractmethod
    def stop_run(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        """Stop the running work of `outgoing.thread_id` (cancel): `run_id` under way,
        and `queued_runs` where the orchestrator can cancel queued work."""

    def queue_on_stop(self, *, timeout: float) -> str | None:
        """Why work queued on a thread may start once its running run is stopped (for a
        cancel's preview), in words; None when a stop holds it or there is no queue.
        Asked before confirming: it must answer within `timeout`, and say so when the
        orchestrator could not be asked."""
        return None

    def check_connection(self, *, timeout: float) -> str:
        """Reach the orchestrator without acting and say what answered (for the source's
        settings page); ConnectorError saying why when it cannot be reached."""
        return f"the {self.label} connector has nothing to reach"

    def token_expires(self) -> datetime | None:
        """When the credential Supervisor acts with stops working, if it says (for the
        source page's warning); None when it does not expire or cannot tell."""
        return None

    def perform(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        if outgoing.kind == "cancel":
            return self.stop_run(outgoing, timeout=timeout)
        return self.send_message(outgoing, timeout=timeout)


# --- the registry -------------------------------------------------------------------

# Filled by each connector app's ready() (supervisor/connectors/apps.py; the tests add
# their in-process simulator): only what is registered is offered to admins.
_registered: dict[str, type[Connector]] = {}


def register(connector: type[Connector]) -> None:
    _registered[connector.name] = connector


def connector_class(name: str) -> type[Connector]:
    if name not in _registered:
        raise SettingsError(
            f"there is no connector {name!r}; choose from {', '.join(sorted(_registered))}"
        )
    return _registered[name]


def connectors() -> dict[str, type[Connector]]:
    return dict(_registered)


def connector_for(source) -> Connector | None:
    """The connector bound to `source`, set up with its settings; None when it has none.
    SettingsError when the bound connector is unknown or its settings are wrong."""
    if not source.connector:
        return None
    try:
        return connector_class(source.connector)(source, source.connector_settings or {})
    except SettingsError as exc:
        raise SettingsError(f"source {source.name!r}: {exc}") from None
