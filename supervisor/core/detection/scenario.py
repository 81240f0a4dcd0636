"""Contract §7: replay a scenario into a throw-away store on a virtual clock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.core.management import call_command
from django.db import connections
from django.db.backends.sqlite3.base import DatabaseWrapper
from django.utils import timezone

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import internal_source
from supervisor.core.contract.events import parse_timestamp
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.sweep import sweep
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task, Thread

OWN_SOURCE = "supervisor"  # a scenario's name for Supervisor's own source


class ScenarioError(ValueError):
    pass


@dataclass
class Scenario:
    name: str
    events: list
    settings: dict
    until: datetime | None
    expect: dict | None
    expect_open: dict | None

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        try:
            body = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ScenarioError(f"{path}: cannot read the scenario: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("events"), list):
            raise ScenarioError(f"{path}: a scenario is an object with an 'events' list")
        try:
            until = parse_timestamp(body["until"]) if body.get("until") else None
        except ValueError as exc:
            raise ScenarioError(f"{path}: until {exc}") from None
        return cls(
            name=body.get("name") or Path(path).stem,
            events=body["events"],
            settings=body.get("settings") or {},
            until=until,
            expect=body.get("expect"),
            expect_open=body.get("expect_open"),
        )


class ThrowAwayStore:
    """Point Django's default connection at fresh in-memory SQLite databases, whatever
    database is configured, and put the configured one back afterwards."""

    def __enter__(self):
        self._saved = connections["default"]
        self._template = self._fresh()
        connections["default"] = self._template
        call_command("migrate", verbosity=0, interactive=False)
        return self

    def reset(self) -> None:
        """A fresh copy of the migrated, empty schema."""
        store = self._fresh()
        store.ensure_connection()
        self._template.connection.backup(store.connection)
        current = connections["default"]
        connections["default"] = store
        if current is not self._template:
            current.close()

    def __exit__(self, *exc):
        current = connections["default"]
        connections["default"] = self._saved
        current.close()
        self._template.close()

    @staticmethod
    def _fresh() -> DatabaseWrapper:
        settings = connections.configure_settings(
            {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
        )["default"]
        return DatabaseWrapper(settings, alias="default")


def replay(scenario: Scenario, *, as_service: bool = False) -> dict:
    """Feed the events in file order through the ingest path and run the checks on a
    virtual clock (contract §7); return the result object. Expectations are not read.

    `as_service` runs the checks as the deployed service does (each batch's touched
    subjects, then the beat sweep when the clock moves) instead of judging the whole
    namespace each time: the two must agree, and a test holds them to it.
    """
    source, _ = do_create_source("replay", "replay", "ingest,read", settings=scenario.settings)
    namespace_id = source.namespace_id
    # An extension of §7: an event may name its "source" (a follower of a remote
    # environment, say); each name is a source of its own in the one namespace, but
    # "supervisor", which is Supervisor's own: what it records of the actions it sent
    # (ingest refuses Supervisor's wakes and environment from any other source).
    sources = {None: source, OWN_SOURCE: internal_source(source.namespace)}

    def source_of(raw):
        name = raw.get("source") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name:
            name = None
        if name not in sources:
            sources[name], _ = do_create_source(f"replay:{name}", "replay", "ingest,read")
        return sources[name]

    due: datetime | None = None

    def check(result=None):
        nonlocal due
        if result is None and (due is None or now < due):
            # Only an event or a due time can change a finding: nothing to look at.
            return
        if not as_service:
            due = evaluate(namespace_id, now)
        elif result is None:
            sweep(now, namespace_id)
            due = _earliest_due(namespace_id)
        else:
            evaluate(namespace_id, now, tasks=result.touched_tasks, threads=result.touched_threads)
            due = _earliest_due(namespace_id)

    now: datetime | None = None
    times = [t for t in map(_event_time, scenario.events) if t is not None]
    start = min(times, default=scenario.until) or timezone.now()
    with clock.virtual_clock(start):
        for raw in scenario.events:
            at = _event_time(raw)
            if at is not None and (now is None or at > now):
                now = at
                clock.set_virtual(now)
                check()
            applied = apply_events(source_of(raw), [raw])
            # A repeat or a rejected event changed nothing: the checks would find the same.
            if applied.accepted and now is not None:
                check(applied)
        if scenario.until is not None and (now is None or scenario.until > now):
            now = scenario.until
        if now is not None:
            clock.set_virtual(now)
            check()
    return _result(scenario.name, namespace_id)


def _earliest_due(namespace_id: int) -> datetime | None:
    return min(
        filter(
            None,
            (
                model.objects.filter(namespace_id=namespace_id)
                .order_by("next_check_at")
                .exclude(next_check_at=None)
                .values_list("next_check_at", flat=True)
                .first()
                for model in (Task, Thread)
            ),
        ),
        default=None,
    )


def _event_time(raw) -> datetime | None:
    try:
        return parse_timestamp(raw.get("at"))
    except (ValueError, AttributeError):
        return None


def _result(name: str, namespace_id: int) -> dict:
    raised: dict[tuple[str, str], set[str]] = {}
    open_: dict[tuple[str, str], set[str]] = {}
    for subject_type, subject_id, kind, state in Flag.objects.filter(
        namespace_id=namespace_id, subject_type__in=("task", "thread")
    ).values_list("subject_type", "subject_id", "kind", "state"):
        raised.setdefault((subject_type, subject_id), set()).add(kind)
        if state == Flag.OPEN:
            open_.setdefault((subject_type, subject_id), set()).add(kind)

    def kinds(subject_type, subject_id):
        key = (subject_type, subject_id)
        return sorted(raised.get(key, ())), sorted(open_.get(key, ()))

    tasks = {}
    for task_id, status in (
        Task.objects.filter(namespace_id=namespace_id, known=True)
        .order_by("task_id")
        .values_list("task_id", "status")
    ):
        r, o = kinds("task", task_id)
        tasks[task_id] = {"status": status, "raised": r, "open": o}
    threads = {}
    for thread_id in (
        Thread.objects.filter(namespace_id=namespace_id)
        .order_by("thread_id")
        .values_list("thread_id", flat=True)
    ):
        r, o = kinds("thread", thread_id)
        threads[thread_id] = {"raised": r, "open": o}
    # A flag on a subject the store does not list (an unknown task) still shows.
    for subject_type, subject_id in raised:
        r, o = kinds(subject_type, subject_id)
        if subject_type == "task" and subject_id not in tasks:
            tasks[subject_id] = {"status": None, "raised": r, "open": o}
        if subject_type == "thread" and subject_id not in threads:
            threads[subject_id] = {"raised": r, "open": o}
    return {"scenario": name, "tasks": tasks, "threads": threads}


def differences(scenario: Scenario, result: dict) -> list[str]:
    """Where `result` disagrees with the scenario's `expect` and `expect_open`."""
    problems = []
    for expectation, field in ((scenario.expect, "raised"), (scenario.expect_open, "open")):
        if expectation is None:
            continue
        for group in ("tasks", "threads"):
            expected = expectation.get(group) or {}
            for subject_id in sorted(set(expected) | set(result[group])):
                want = sorted(expected.get(subject_id, []))
                got = result[group].get(subject_id, {}).get(field, [])
                if want != got:
                    problems.append(
                        f"{group[:-1]} {subject_id} {field}: expected {want}, got {got}"
                    )
    return problems
