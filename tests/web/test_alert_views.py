"""The signed link in a message acknowledges or snoozes its flag, and expires."""

from datetime import timedelta

import time_machine
from django.urls import reverse

from supervisor.core.models import Change, Thread
from supervisor.notify.content import base_url, link_token
from tests.support.alerts import T0, open_flag


def url(flag):
    return reverse("notify:flag-link", args=[link_token(flag.pk)])


def test_get_asks_before_acting(tasks, client):
    flag = open_flag(tasks, 0, T0)
    response = client.get(url(flag))
    assert response.status_code == 200 and b"Acknowledge" in response.content
    flag.refresh_from_db()
    assert flag.acknowledged_at is None


def test_post_acknowledges_the_flag_and_records_the_change(tasks, client):
    flag = open_flag(tasks, 0, T0)
    response = client.post(url(flag), {"action": "acknowledge"})
    assert response.status_code == 200
    flag.refresh_from_db()
    assert flag.acknowledged_at is not None
    change = Change.objects.get(kind="flag.acknowledged")
    assert change.payload["actor"] == "signed link"


def test_post_snoozes_the_flag(tasks, client):
    flag = open_flag(tasks, 0, T0)
    client.post(url(flag), {"action": "4h"})
    flag.refresh_from_db()
    assert flag.snoozed_until is not None and flag.acknowledged_at is None


def test_an_expired_link_is_refused(tasks, client):
    flag = open_flag(tasks, 0, T0)
    with time_machine.travel(T0, tick=False) as clock:
        link = url(flag)
        clock.shift(timedelta(hours=24, seconds=1))
        response = client.post(link, {"action": "acknowledge"})
    assert response.status_code == 403 and b"expired" in response.content
    flag.refresh_from_db()
    assert flag.acknowledged_at is None


def test_a_tampered_link_is_refused(tasks, client):
    flag = open_flag(tasks, 0, T0)
    token = link_token(flag.pk)
    response = client.get(reverse("notify:flag-link", args=[token[:-2] + "xx"]))
    assert response.status_code == 403


def test_a_thread_flags_link_opens_its_thread(tasks, client):
    """A flag on a thread names its thread's page (the link said "Open the task" and
    opened the overview)."""
    flag = open_flag(tasks, 0, T0)
    thread = Thread.objects.get(namespace_id=flag.namespace_id, thread_id="thread:t0")
    flag.task, flag.subject_type, flag.subject_id = None, "thread", thread.thread_id
    flag.save()
    html = client.get(url(flag)).content.decode()
    assert f'<a href="{base_url()}/threads/{thread.pk}/">Open the thread</a>' in html
    task_flag = open_flag(tasks, 1, T0)
    html = client.get(url(task_flag)).content.decode()
    assert f'/tasks/{task_flag.task_id}/">Open the task</a>' in html
