"""Flags opened and resolved together: each once, each with its change and its alerts,
in the same few statements whatever their number."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import (
    do_open_flag,
    do_open_flags,
    do_resolve_flags,
    do_update_evidences,
)
from supervisor.core.models import Change, Flag
from supervisor.notify.models import FlagAlert, Route
from tests.support.alerts import T0


def _findings(count: int, kind: str = "stale_result") -> list[Finding]:
    return [Finding(kind, "task", f"task:t{n}", {"n": n}) for n in range(count)]


def test_flags_opened_together_each_have_their_change_and_alerts(tasks, two_channels):
    with CaptureQueriesContext(connection) as few:
        opened = do_open_flags(tasks.namespace_id, _findings(20), T0)
    assert len(few) < 20  # not a statement or more per flag
    assert sorted(f.subject_id for f in opened) == sorted(f"task:t{n}" for n in range(20))
    assert all(f.pk and f.task_id for f in opened)  # with their ids and tasks
    stored = Flag.objects.filter(state="open")
    assert {(f.subject_id, f.evidence["n"]) for f in stored} == {
        (f"task:t{n}", n) for n in range(20)
    }
    changes = Change.objects.filter(kind="flag.opened")
    assert sorted(c.payload["flag"] for c in changes) == sorted(f.pk for f in opened)
    # Each flag's alert for each route, all in the window its first opening started.
    alerts = FlagAlert.objects.all()
    assert alerts.count() == 40
    assert {a.due_at for a in alerts} == {T0 + timedelta(seconds=30)}


def test_later_openings_join_the_window_already_open(tasks, two_channels):
    do_open_flags(tasks.namespace_id, _findings(1), T0)
    do_open_flags(tasks.namespace_id, _findings(3)[1:], T0 + timedelta(seconds=10))
    assert {a.due_at for a in FlagAlert.objects.all()} == {T0 + timedelta(seconds=30)}


def test_a_route_gets_only_the_kinds_it_asks_for(tasks, two_channels):
    Route.objects.filter(channel=two_channels[1]).update(kinds=["stuck"])
    do_open_flags(tasks.namespace_id, _findings(2) + _findings(1, "stuck"), T0)
    got = {(a.route.channel_id, a.flag.kind) for a in FlagAlert.objects.select_related("route")}
    first, second = (c.pk for c in two_channels)
    assert got == {(first, "stale_result"), (first, "stuck"), (second, "stuck")}


def test_one_already_open_is_skipped_and_the_others_are_opened(tasks, two_channels):
    # Another worker opened task:t2's flag first: the constraint decides, not hope.
    first = do_open_flag(tasks.namespace_id, _findings(3)[2], T0)
    opened = do_open_flags(tasks.namespace_id, _findings(5), T0 + timedelta(seconds=1))
    assert sorted(f.subject_id for f in opened) == ["task:t0", "task:t1", "task:t3", "task:t4"]
    assert Flag.objects.filter(state="open").count() == 5
    assert Flag.objects.get(subject_id="task:t2").pk == first.pk
    assert Change.objects.filter(kind="flag.opened").count() == 5
    assert FlagAlert.objects.count() == 10  # no alert for a flag that was not opened


def test_flags_resolved_together_each_once_with_their_reasons(tasks):
    opened = do_open_flags(tasks.namespace_id, _findings(4), T0)
    resolutions = [(flag, f"reason {n}" if n % 2 else None) for n, flag in enumerate(opened)]
    later = T0 + timedelta(minutes=1)
    Flag.objects.filter(pk=opened[0].pk).update(state="resolved")  # resolved meanwhile
    resolved = do_resolve_flags(resolutions, later)
    assert [f.pk for f in resolved] == [f.pk for f in opened[1:]]
    assert do_resolve_flags(resolutions, later) == []  # nothing twice
    for n, flag in enumerate(opened[1:], start=1):
        flag.refresh_from_db()
        assert (flag.state, flag.resolved_at) == ("resolved", later)
        assert flag.resolve_reason == (f"reason {n}" if n % 2 else None)
    changes = Change.objects.filter(kind="flag.resolved").order_by("payload__flag")
    assert [(c.payload["flag"], c.payload.get("reason")) for c in changes] == [
        (f.pk, f"reason {n}" if n % 2 else None) for n, f in enumerate(opened[1:], start=1)
    ]


def test_new_evidence_given_together_each_once_and_not_to_a_resolved_flag(tasks):
    opened = do_open_flags(tasks.namespace_id, _findings(4), T0)
    Flag.objects.filter(pk=opened[0].pk).update(state="resolved")  # resolved meanwhile
    evidence = {"events": ["e1"], "text": "it went on", "nested": {"n": [1, 2]}}
    with CaptureQueriesContext(connection) as few:
        do_update_evidences([(flag, {**evidence, "n": n}) for n, flag in enumerate(opened)])
    assert len(few) < 8
    assert Flag.objects.get(pk=opened[0].pk).evidence == {"n": 0}
    for n, flag in enumerate(opened[1:], start=1):
        assert Flag.objects.get(pk=flag.pk).evidence == {**evidence, "n": n}
    changes = Change.objects.filter(kind="flag.updated")
    assert sorted(c.payload["flag"] for c in changes) == sorted(f.pk for f in opened[1:])
