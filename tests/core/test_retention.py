"""Retention: what is past its time goes in bounded batches, what is still needed stays,
and a resent event whose row was pruned changes nothing."""

import threading
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.writers import do_resolve_flag_by_hand
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import (
    Action,
    BackgroundItem,
    Change,
    DeadLetter,
    Flag,
    IngestedEvent,
    Run,
    Task,
    TaskReport,
    TaskRequest,
    Thread,
    Wake,
)
from supervisor.core.retention import prune
from supervisor.jobs.retention import prune_old_rows
from supervisor.live.notes import latest_change_id, notes_after
from supervisor.notify.models import Channel, FlagAlert, Notification, Route
from supervisor.web.audit_views import audit_changes
from tests.support.cast import ADMIN, login_as
from tests.support.factories import make_tasks
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

NOW = datetime(2027, 6, 1, 12, 0, tzinfo=UTC)
DAYS = {"events": 30, "flags": 90, "actions": 90, "notifications": 30, "changes": 365}
MINUTE = timedelta(minutes=1)
STALE = next(p for p in CONTRACT_SCENARIOS if p.name == "seed000-stale-finalize.json")


@pytest.fixture(autouse=True)
def _days(settings):
    settings.SUPERVISOR_RETENTION = dict(DAYS)


def aged(model, pk, **columns):
    model.objects.filter(pk=pk).update(**columns)


def edge(kind: str) -> tuple[datetime, datetime]:
    """(just inside, just outside) the retention of `kind` at NOW."""
    cutoff = NOW - timedelta(days=DAYS[kind])
    return cutoff + MINUTE, cutoff - MINUTE


@pytest.fixture
def task(source):
    make_tasks(source, 1)
    IngestedEvent.objects.update(received_at=NOW)  # fresh: not part of what is counted
    return Task.objects.get(task_id="task:t0")


@pytest.fixture
def channel(db):
    channel = Channel.objects.create(name="ops", kind="apprise", target="json://127.0.0.1:9/x")
    Route.objects.create(channel=channel, group_window=30)
    return channel


def new_event(source, event_id: str, received_at: datetime) -> IngestedEvent:
    event = IngestedEvent.objects.create(
        source=source, event_id=event_id, type="thread.seen", at=NOW, env="default", data={}
    )
    aged(IngestedEvent, event.pk, received_at=received_at)
    return event


def new_flag(task, state: str, *, resolved_at=None, suppressed=False, kind="stale_result"):
    return Flag.objects.create(
        namespace_id=task.namespace_id,
        subject_type="task",
        subject_id=task.task_id,
        task=task,
        kind=kind,
        state=state,
        opened_at=NOW - timedelta(days=400),
        resolved_at=resolved_at,
        suppressed=suppressed,
    )


def new_action(task, key: str, kind: str, state: str, finished_at=None) -> Action:
    return Action.objects.create(
        task=task,
        namespace_id=task.namespace_id,
        kind=kind,
        run_id=f"run:{key}",
        idempotency_key=key,
        state=state,
        created_at=NOW - timedelta(days=400),
        finished_at=finished_at,
    )


def new_notification(channel, key: str, state: str, sent_at=None) -> Notification:
    return Notification.objects.create(
        key=key,
        channel=channel,
        kind=Notification.OPENED,
        subject="s",
        body="b",
        state=state,
        created_at=NOW - timedelta(days=400),
        sent_at=sent_at,
    )


def new_change(at: datetime) -> Change:
    change = Change.objects.create(kind="task.updated", subject_type="task", subject_id="x")
    aged(Change, change.pk, at=at)
    return change


def test_each_kind_is_kept_just_inside_its_retention_and_pruned_just_outside(source, task, channel):
    inside, outside = edge("events")
    kept_event, old_event = new_event(source, "in", inside), new_event(source, "out", outside)
    kept_letter = DeadLetter.objects.create(source=source, body="{}", error="e")
    old_letter = DeadLetter.objects.create(source=source, body="{}", error="e")
    aged(DeadLetter, kept_letter.pk, replayed_at=inside)
    aged(DeadLetter, old_letter.pk, replayed_at=outside)
    inside, outside = edge("flags")
    kept_flag = new_flag(task, Flag.RESOLVED, resolved_at=inside)
    old_flag = new_flag(task, Flag.RESOLVED, resolved_at=outside)
    inside, outside = edge("actions")
    kept_actions = [
        new_action(task, "a-in", "cancel", Action.SUCCEEDED, inside),
        new_action(task, "b-in", "continue", Action.FAILED, inside),
    ]
    old_actions = [
        new_action(task, "a-out", "cancel", Action.SUCCEEDED, outside),
        new_action(task, "b-out", "continue", Action.FAILED, outside),
        new_action(task, "c-out", "deliver", Action.FAILED, outside),
    ]
    inside, outside = edge("notifications")
    kept_note = new_notification(channel, "n-in", Notification.SENT, inside)
    old_note = new_notification(channel, "n-out", Notification.SENT, outside)
    inside, outside = edge("changes")
    kept_change, old_change = new_change(inside), new_change(outside)

    counts = prune(NOW)

    assert counts == {
        "events": 1,
        "dead_letters": 1,
        "flags": 1,
        "actions": 3,
        "notifications": 1,
        "changes": 1,
        "flag_alerts": 0,
    }
    kept = [kept_event, kept_letter, kept_flag, *kept_actions, kept_note, kept_change]
    gone = [old_event, old_letter, old_flag, *old_actions, old_note, old_change]
    assert all(type(row).objects.filter(pk=row.pk).exists() for row in kept)
    assert not any(type(row).objects.filter(pk=row.pk).exists() for row in gone)


def test_what_is_still_needed_is_never_pruned_whatever_its_age(source, task, channel):
    ancient = NOW - timedelta(days=4000)
    letter = DeadLetter.objects.create(source=source, body="{", error="not JSON")
    aged(DeadLetter, letter.pk, received_at=ancient)  # never replayed: still to fix
    still_needed = [
        letter,
        new_flag(task, Flag.OPEN, kind="stuck"),
        # Resolved by hand while its condition held: reconcile reads it to stay closed.
        new_flag(task, Flag.RESOLVED, resolved_at=ancient, suppressed=True),
        new_action(task, "queued", "cancel", Action.QUEUED),
        new_action(task, "sending", "continue", Action.SENDING),
        # The only record that this run was delivered: a second delivery stays refused.
        new_action(task, "delivered", "deliver", Action.SUCCEEDED, ancient),
        new_notification(channel, "pending", Notification.PENDING),
        new_notification(channel, "sending", Notification.SENDING),
        new_notification(channel, "failing", Notification.FAILING),
    ]

    counts = prune(NOW + timedelta(days=4000))

    assert all(type(row).objects.filter(pk=row.pk).exists() for row in still_needed)
    assert counts["dead_letters"] == counts["flags"] == counts["actions"] == 0
    assert counts["notifications"] == 0


def test_a_pruned_flag_takes_its_alerts_with_it(task, channel):
    route = Route.objects.get(channel=channel)
    old = new_flag(task, Flag.RESOLVED, resolved_at=NOW - timedelta(days=91))
    kept = new_flag(task, Flag.RESOLVED, resolved_at=NOW - timedelta(days=89))
    for flag in (old, kept):
        FlagAlert.objects.create(flag=flag, route=route, state=FlagAlert.CLOSED, due_at=NOW)

    assert prune(NOW, dry_run=True)["flag_alerts"] == 1
    counts = prune(NOW)

    assert (counts["flags"], counts["flag_alerts"]) == (1, 1)
    assert list(FlagAlert.objects.values_list("flag_id", flat=True)) == [kept.pk]


def test_more_rows_than_one_batch_go_in_several_bounded_statements(source):
    outside = edge("events")[1]
    for n in range(12):
        new_event(source, f"e{n}", outside)

    with CaptureQueriesContext(connection) as queries:
        counts = prune(NOW, batch=5)

    assert counts["events"] == 12 and not IngestedEvent.objects.exists()
    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 3  # 5 + 5 + 2; each names its rows
    assert all("core_ingestedevent" in sql and "IN" in sql for sql in deletes)


def test_zero_days_keeps_a_kind_forever(settings, source, task):
    settings.SUPERVISOR_RETENTION = {**DAYS, "events": 0, "flags": 0}
    ancient = NOW - timedelta(days=4000)
    event = new_event(source, "old", ancient)
    flag = new_flag(task, Flag.RESOLVED, resolved_at=ancient)

    counts = prune(NOW)

    assert counts["events"] == counts["flags"] == 0
    assert IngestedEvent.objects.filter(pk=event.pk).exists()
    assert Flag.objects.filter(pk=flag.pk).exists()


def test_the_command_dry_run_counts_and_deletes_nothing_then_the_run_prunes(source, settings):
    # The command prunes at the real now: age the rows from it.
    outside = timezone.now() - timedelta(days=31)
    for n in range(3):
        new_event(source, f"e{n}", outside)
    changes = Change.objects.count()

    out = StringIO()
    call_command("prune", "--dry-run", stdout=out)
    assert "events: would prune 3" in out.getvalue()
    assert "days kept: events 30, flags 90" in out.getvalue()
    assert IngestedEvent.objects.count() == 3 and Change.objects.count() == changes

    out = StringIO()
    call_command("prune", stdout=out)
    assert "events: pruned 3" in out.getvalue()
    assert not IngestedEvent.objects.exists()


def test_a_prune_is_recorded_for_the_audit_page_and_a_second_one_finds_nothing(source, client):
    new_event(source, "old", edge("events")[1])

    assert prune(NOW)["events"] == 1
    assert set(prune(NOW).values()) == {0}

    (change,) = Change.objects.filter(kind="retention.pruned")  # none for the empty run
    assert change.payload["counts"]["events"] == 1 and change.subject_id == "events 1"
    assert change.payload["days"] == DAYS
    assert change in audit_changes("admin")
    login_as(client, ADMIN)
    page = client.get(reverse("web:audit"), {"kind": "admin"}).content.decode()
    assert "Pruned what was past its retention:" in page and "events 1" in page


def test_the_beat_schedule_runs_the_prune_task_hourly_and_the_task_prunes(source, settings):
    entry = settings.CELERY_BEAT_SCHEDULE["prune"]
    assert entry["task"] == "supervisor.prune" == prune_old_rows.name
    assert entry["schedule"] == 3600
    new_event(source, "old", timezone.now() - timedelta(days=31))

    result = prune_old_rows.apply()

    assert result.successful() and result.result["events"] == 1
    assert not IngestedEvent.objects.exists()


def test_negative_days_are_a_configuration_error(settings):
    from supervisor.checks import check_supervisor_settings

    settings.SUPERVISOR_RETENTION = {**DAYS, "flags": -1}
    problems = check_supervisor_settings(None)
    assert [p.id for p in problems if "retention of flags" in p.msg] == ["supervisor.E005"]


def test_live_pages_resume_after_the_oldest_changes_are_gone(db):
    old = [new_change(NOW - timedelta(days=400)) for _ in range(3)]
    kept = [new_change(NOW - timedelta(days=1)) for _ in range(2)]
    latest = latest_change_id()

    prune(NOW)

    # A page that last saw a pruned change (or nothing) gets every change kept after it.
    for after in (0, old[0].pk):
        assert [n["id"] for n in notes_after(after)][:2] == [c.pk for c in kept]
    assert latest_change_id() >= latest
    # Ids are never handed out again (PostgreSQL sequences, SQLite AUTOINCREMENT).
    assert new_change(NOW).pk > latest


@pytest.mark.django_db(transaction=True)
def test_two_prunes_at_once_share_the_work_and_count_each_row_once(source):
    outside = edge("events")[1]
    IngestedEvent.objects.bulk_create(
        IngestedEvent(source=source, event_id=f"e{n}", type="thread.seen", at=NOW, env="x", data={})
        for n in range(2000)
    )
    IngestedEvent.objects.update(received_at=outside)
    start = threading.Barrier(2)
    results, errors = [], []

    def run():
        try:
            start.wait()
            results.append(prune(NOW, batch=100)["events"])
        except Exception as exc:  # the test reports it, not the thread
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=run) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)

    assert not errors
    assert sum(results) == 2000 and not IngestedEvent.objects.exists()


def mirror_rows() -> dict:
    """The mirror as rows, with the detection bookkeeping a new event moves left out."""
    skip = {"last_event_at", "evaluated_at", "next_check_at"}
    return {
        model.__name__: sorted(
            tuple(sorted((k, str(v)) for k, v in row.items() if k not in skip))
            for row in model.objects.values()
        )
        for model in (Task, TaskReport, Thread, Run, BackgroundItem, Wake)
    }


def flag_rows() -> list:
    return sorted(Flag.objects.values_list("pk", "kind", "subject_id", "state", "suppressed"))


def test_resending_pruned_events_changes_nothing_and_reopens_no_flag(source, user):
    """Seed 000 to its end, one flag resolved by hand, then everything past retention
    pruned and the whole scenario sent again (a T3 re-import does exactly this)."""
    scenario = load_scenario(STALE)
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    first = apply_events(source, scenario["events"])
    evaluate(source.namespace_id, until)
    flag = Flag.objects.filter(state=Flag.OPEN).order_by("pk").first()
    do_resolve_flag_by_hand(flag, until, reason="seen to", by=user, actor="user:op")
    mirror, flags = mirror_rows(), flag_rows()
    source.refresh_from_db()
    accepted = source.events_accepted
    later = max(timezone.now(), until) + timedelta(days=400)

    counts = prune(later)

    assert counts["events"] == first.accepted and not IngestedEvent.objects.exists()
    assert counts["flags"] == 0  # the hand-resolved one is suppressed; the rest are open
    reports = sum(e["type"] == "task.reported" for e in scenario["events"])
    assert reports > 0

    again = apply_events(source, scenario["events"])
    evaluate(source.namespace_id, until + MINUTE)

    # Reports keep their event ids: still duplicates. The rest are taken again and tie
    # with the description they made the first time: nothing moves.
    assert (again.accepted, again.duplicates) == (first.accepted - reports, reports)
    assert mirror_rows() == mirror
    assert flag_rows() == flags
    source.refresh_from_db()
    assert source.events_accepted == accepted + again.accepted


def test_a_pruned_resolved_flag_is_not_reopened_by_its_events_sent_again(source):
    """An orphan wake, flagged, then resolved when its task arrives; both events and
    the flag pruned; both events again: the condition does not hold, nothing opens."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)  # in the past: times ahead of the clock are refused
    stamp = lambda s: (t0 + timedelta(seconds=s)).isoformat()  # noqa: E731
    wake = {
        "id": "w1",
        "type": "wake.queued",
        "at": stamp(0),
        "data": {
            "wake": "w:1",
            "thread": "thread:lead",
            "source": {"kind": "task", "task": "task:late", "thread": "thread:child"},
            "summary": "done",
        },
    }
    delegated = {
        "id": "d1",
        "type": "task.delegated",
        "at": stamp(-10),
        "data": {
            "task": "task:late",
            "parent_thread": "thread:lead",
            "child_thread": "thread:child",
            "title": "Late",
            "mode": "async",
        },
    }
    apply_events(source, [wake])
    evaluate(source.namespace_id, t0 + timedelta(seconds=120))
    assert list(Flag.objects.values_list("kind", "state")) == [("orphan_wake", "open")]
    apply_events(source, [delegated])
    evaluate(source.namespace_id, t0 + timedelta(seconds=180))
    assert list(Flag.objects.values_list("state", flat=True)) == ["resolved"]

    counts = prune(max(timezone.now(), t0) + timedelta(days=400))
    assert (counts["events"], counts["flags"]) == (2, 1) and not Flag.objects.exists()

    for batch in ([wake, delegated], [wake], [delegated]):
        assert apply_events(source, batch).rejected == []
    evaluate(source.namespace_id, t0 + timedelta(seconds=200))  # before late_wake, stuck
    assert list(Flag.objects.values_list("kind", "state", "evidence")) == []


def test_a_pruned_task_request_sent_again_is_still_a_duplicate(source):
    # Requests are kept per event, as reports are; past the events' retention
    # a resend is still a duplicate and no second row or flag comes of it.
    request = {
        "id": "q1",
        "type": "task.requested",
        "at": datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
        "data": {"parent_thread": "thread:lead", "client_request_id": "req-1"},
    }
    assert apply_events(source, [request]).accepted == 1
    prune(max(timezone.now(), NOW) + timedelta(days=400))
    assert not IngestedEvent.objects.exists()
    again = apply_events(source, [request])
    assert (again.accepted, again.duplicates) == (0, 1)
    assert TaskRequest.objects.count() == 1
