"""The objects every URL of the walk needs, made once per test."""

from datetime import timedelta

import pytest
from django.core import signing

from supervisor.core import clock
from supervisor.core.actions.previews import new_preview_id, preview_action, selection_digest
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import DeadLetter, Flag, SavedView, Task, Thread
from supervisor.core.triage.silences import do_create_silence
from supervisor.notify.content import link_token
from supervisor.notify.models import Channel, Notification, Route
from tests.support.cast import make_user
from tests.support.factories import BASE, at, make_tasks


@pytest.fixture
def walk_objects(source, silent_source):
    make_tasks(source, 1)
    # A run of the child under way: a finished task with nothing to stop is refused cancel.
    apply_events(source, [
        {"id": "t0-r2", "type": "run.requested", "at": at(5),
         "data": {"thread": "thread:t0", "run": "thread:t0:2", "ordinal": 2,
                  "trigger": {"kind": "other"}}},
        {"id": "t0-s2", "type": "run.started", "at": at(6),
         "data": {"thread": "thread:t0", "run": "thread:t0:2"}},
    ])  # fmt: skip
    # Task actions need a connector to be accepted (202) rather than refused (409).
    source.connector = "simulator"
    source.save()
    user = make_user("ann", "viewer")
    view = SavedView.objects.create(
        owner=user, name="ann's", query="state=open", shared=True, created_at=BASE, updated_at=BASE
    )
    dead = DeadLetter.objects.create(source=source, event_id="e1", body="{}", error="bad")
    silent, on_thread = silent_source
    channel = Channel.objects.create(name="walk", kind="apprise", target="json://h/x")
    route = Route.objects.create(channel=channel)
    note = Notification.objects.create(
        key="walk:1", channel=channel, kind="test", subject="s", body="b", state="failing"
    )
    task = Task.objects.get(task_id="task:t0")
    # An open flag on the task: its page carries the problem's forms.
    do_open_flag(
        source.namespace_id,
        Finding("stuck", "task", task.task_id, {"text": "walk"}),
        BASE + timedelta(seconds=7),
    )
    now = clock.now()
    silence = do_create_silence(
        kinds=["stale_result"], reason="walk", ends_at=now + timedelta(hours=1), now=now
    )
    return {
        "silence": silence.pk,
        "namespace": source.namespace.name,
        "channel": channel.pk,
        "route": route.pk,
        "note": note.pk,
        "source": source.pk,
        "user": user.pk,
        "dead": dead.pk,
        "view": view.pk,
        "flag": silent.pk,
        "task": task.pk,
        "task_id": task.task_id,
        # What the confirm forms carry of their previews.
        "cancel_preview": preview_action(task, "cancel").digest,
        "selection": selection_digest("cancel", [task], new_preview_id()),
        "thread": Thread.objects.filter(namespace_id=source.namespace_id).first().pk,
        "link": link_token(on_thread.pk),
        "bad_link": signing.TimestampSigner(salt="elsewhere").sign_object({"flag": 1}),
        "gone_link": link_token(Flag.objects.order_by("-pk").first().pk + 1000),
    }
