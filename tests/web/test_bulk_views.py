"""Bulk acknowledge, snooze and resolve: the open flags of the selected or matching tasks,
previewed (how many flags of which kinds on how many tasks), confirmed, acted on once
through the single-flag do_* functions and reported per task."""

from datetime import datetime, timedelta

import pytest
from django.urls import reverse

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag, do_resolve_flag
from supervisor.core.models import Change, Flag, Task
from tests.support.cast import ANONYMOUS, OPERATOR, VIEWER, login_as
from tests.support.factories import make_tasks
from tests.support.forms import confirm_form

pytestmark = pytest.mark.django_db

BULK = reverse("web:bulk-action")
OPENED = datetime.fromisoformat("2026-11-05T23:00:00+00:00")


@pytest.fixture
def flagged(source):
    """Three tasks: t0 with two open flags, t1 with one, t2 with none."""
    make_tasks(source, 3)
    for task_id, kind in (("task:t0", "stale_result"), ("task:t0", "undelivered_result")):
        do_open_flag(source.namespace_id, Finding(kind, "task", task_id, {"events": []}), OPENED)
    do_open_flag(
        source.namespace_id, Finding("stale_result", "task", "task:t1", {"events": []}), OPENED
    )
    return {t.task_id: t for t in Task.objects.filter(known=True)}


def matching(kind: str, **filters) -> dict:
    return {"kind": kind, "scope": "matching", "state": "open", **filters}


def changes(kind: str) -> int:
    return Change.objects.filter(kind=kind).count()


def test_the_list_offers_the_flag_actions(client, flagged):
    login_as(client, OPERATOR)
    html = client.get(reverse("web:task-list")).content.decode()
    for verb in ("acknowledge", "snooze", "resolve"):
        assert f'<option value="{verb}">' in html


def test_bulk_acknowledge_previews_the_flags_then_acknowledges_each_once(client, flagged):
    user = login_as(client, OPERATOR)
    page = client.get(BULK, matching("acknowledge"))
    html = page.content.decode()
    assert page.status_code == 200
    assert "3 open flags</strong> on <strong>2 tasks" in html
    stale = '<span class="flag" title="flag kind: stale_result">Stale result handed on</span>'
    later = (
        '<span class="flag" title="flag kind: undelivered_result">Later result not delivered</span>'
    )
    assert f"2 × {stale}, 1 × {later}" in html
    assert not Flag.objects.filter(acknowledged_at__isnull=False).exists()

    form = confirm_form(html)
    done = client.post(BULK, form, follow=True).content.decode()
    assert "Acknowledged 3 flags on 2 tasks." in done
    assert "Task 0: acknowledged Stale result handed on, Later result not delivered." in done
    flags = Flag.objects.filter(state=Flag.OPEN)
    assert {f.acknowledged_by_id for f in flags} == {user.pk}
    assert changes("flag.acknowledged") == 3
    assert set(
        Change.objects.filter(kind="flag.acknowledged").values_list("payload__actor", flat=True)
    ) == {f"user:{user.get_username()}"}

    # A double submit (or the browser resending the form) acts once.
    again = client.post(BULK, form, follow=True).content.decode()
    assert "Acknowledged 0 flags on 2 tasks; 3 already acknowledged." in again
    assert changes("flag.acknowledged") == 3


def test_a_flag_resolved_meanwhile_is_reported_and_stops_nothing(client, flagged):
    login_as(client, OPERATOR)
    form = confirm_form(client.get(BULK, matching("acknowledge")).content.decode())
    gone = Flag.objects.get(task=flagged["task:t0"], kind="undelivered_result")
    do_resolve_flag(gone, clock.now())

    done = client.post(BULK, form, follow=True).content.decode()
    assert "Acknowledged 2 flags on 2 tasks; 1 left as they were." in done
    assert "Later result not delivered not acknowledged: the flag is resolved" in done
    assert Flag.objects.filter(state=Flag.OPEN, acknowledged_at__isnull=False).count() == 2


def test_the_flag_filter_narrows_the_bulk_action_to_its_kind(client, flagged):
    login_as(client, OPERATOR)
    html = client.get(BULK, matching("acknowledge", flag="stale_result")).content.decode()
    assert (
        '2 open flags</strong> of kind <span class="flag" title="flag kind: stale_result">' in html
    )
    client.post(BULK, confirm_form(html))
    acknowledged = Flag.objects.filter(acknowledged_at__isnull=False)
    assert sorted(acknowledged.values_list("kind", flat=True)) == ["stale_result"] * 2


def test_bulk_snooze_runs_from_the_preview_so_a_resend_snoozes_once(client, flagged):
    login_as(client, OPERATOR)
    picked = {"kind": "snooze", "task": [flagged["task:t1"].pk, flagged["task:t2"].pk]}
    html = client.get(BULK, picked).content.decode()
    assert "1 open flag</strong> on <strong>1 task" in html
    assert "1 of the tasks has no such open flag" in html
    form = {**confirm_form(html), "for": "4h"}
    before = clock.now()
    client.post(BULK, form)
    client.post(BULK, form)
    flag = Flag.objects.get(task=flagged["task:t1"])
    assert before + timedelta(hours=4) - timedelta(minutes=1) < flag.snoozed_until
    assert flag.snoozed_until <= clock.now() + timedelta(hours=4)
    assert changes("flag.snoozed") == 1
    assert not Flag.objects.filter(task=flagged["task:t0"], snoozed_until__isnull=False).exists()


def test_bulk_resolve_needs_a_reason(client, flagged):
    login_as(client, OPERATOR)
    form = confirm_form(client.get(BULK, matching("resolve")).content.decode())
    refused = client.post(BULK, form)
    assert refused.status_code == 400
    assert "a reason is needed" in refused.content.decode()
    assert Flag.objects.filter(state=Flag.OPEN).count() == 3

    done = client.post(BULK, {**form, "reason": "fixed in the parent"}, follow=True)
    assert "Resolved 3 flags on 2 tasks." in done.content.decode()
    assert set(Flag.objects.values_list("state", "resolve_reason")) == {
        (Flag.RESOLVED, "fixed in the parent")
    }
    client.post(BULK, {**form, "reason": "fixed in the parent"})
    assert changes("flag.resolved") == 3


def test_a_confirmation_without_its_preview_is_shown_the_preview(client, flagged):
    login_as(client, OPERATOR)
    form = {**confirm_form(client.get(BULK, matching("acknowledge")).content.decode())}
    form["previewed"] = "made-up"
    page = client.post(BULK, form)
    assert page.status_code == 400 and "Nothing was done" in page.content.decode()
    assert changes("flag.acknowledged") == 0


@pytest.mark.parametrize("role", [ANONYMOUS, VIEWER])
def test_only_an_operator_may_act_on_flags_in_bulk(client, flagged, role):
    operator = client.__class__()
    login_as(operator, OPERATOR)
    form = confirm_form(operator.get(BULK, matching("acknowledge")).content.decode())
    login_as(client, role)
    preview, post = client.get(BULK, matching("acknowledge")), client.post(BULK, form)
    if role == ANONYMOUS:
        assert preview.status_code == post.status_code == 302
        assert post.url.startswith("/login/")
    else:
        assert preview.status_code == post.status_code == 403
    assert changes("flag.acknowledged") == 0


def test_a_confirmation_acts_only_on_the_flags_it_previewed(client, flagged):
    # The preview showed t1's one flag; a post naming other flag ids (t0's) acts on
    # those it showed and no other.
    login_as(client, OPERATOR)
    picked = {"kind": "acknowledge", "task": [flagged["task:t1"].pk]}
    form = confirm_form(client.get(BULK, picked).content.decode())
    others = Flag.objects.filter(task=flagged["task:t0"]).values_list("pk", flat=True)
    done = client.post(BULK, {**form, "flag": [str(pk) for pk in others]}, follow=True)
    assert "Acknowledged 1 flag on 1 task." in done.content.decode()
    acknowledged = Flag.objects.filter(acknowledged_at__isnull=False)
    assert list(acknowledged.values_list("task_id", flat=True)) == [flagged["task:t1"].pk]


def test_a_confirmation_under_the_flag_filter_keeps_its_kind(client, flagged):
    # The list's flag filter (a kind) and the flags acted on are different things: a
    # confirmation refused (no reason) shows the preview of that kind again.
    login_as(client, OPERATOR)
    html = client.get(BULK, matching("resolve", flag="stale_result")).content.decode()
    refused = client.post(BULK, confirm_form(html))
    assert refused.status_code == 400
    assert (
        '2 open flags</strong> of kind <span class="flag" title="flag kind: stale_result">'
        in refused.content.decode()
    )


def test_a_preview_of_one_flag_action_does_not_confirm_another(client, flagged):
    login_as(client, OPERATOR)
    form = confirm_form(client.get(BULK, matching("acknowledge")).content.decode())
    page = client.post(BULK, {**form, "kind": "resolve", "reason": "r"})
    assert page.status_code == 400 and "Nothing was done" in page.content.decode()
    assert not Flag.objects.filter(state=Flag.RESOLVED).exists()


def test_a_confirmation_goes_back_to_the_list_it_came_from_without_flag_ids(client, flagged):
    # A post naming flags by id landed on `/tasks/?flag=14&state=open`, a flag
    # id taken for a kind: an empty list, its filter nowhere in the form.
    login_as(client, OPERATOR)
    picked = {"kind": "acknowledge", "task": [flagged["task:t1"].pk], "state": "open"}
    form = confirm_form(client.get(BULK, picked).content.decode())
    ids = [str(pk) for pk in Flag.objects.values_list("pk", flat=True)]
    done = client.post(BULK, {**form, "flag": ids})
    assert done.status_code == 302
    assert done["Location"] == reverse("web:task-list") + "?state=open"


def test_a_confirmation_keeps_the_filters_the_list_form_shows(client, flagged):
    login_as(client, OPERATOR)
    picked = {"kind": "acknowledge", "task": [flagged["task:t1"].pk]}
    html = client.get(BULK, {**picked, "flag": "stale_result", "status": "x"}).content
    done = client.post(BULK, confirm_form(html.decode()))
    # The kind stays; a status the form does not offer goes.
    assert done["Location"] == reverse("web:task-list") + "?flag=stale_result&state=open"


def test_the_preview_links_back_to_the_filtered_list(client, flagged):
    login_as(client, OPERATOR)
    html = client.get(BULK, matching("acknowledge", flag="stale_result")).content.decode()
    assert '<a href="/tasks/?flag=stale_result&amp;state=open">← Tasks</a>' in html
