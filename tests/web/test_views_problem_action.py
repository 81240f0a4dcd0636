"""Acknowledge, snooze or resolve a task's whole problem: the open flags the page showed."""

import pytest

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Flag, Task

pytestmark = pytest.mark.django_db


def shown(task) -> list[int]:
    return list(task.flags.filter(state=Flag.OPEN).values_list("pk", flat=True))


def post(client, task, action: str, flags, **extra):
    data = {"action": action, "flag": [str(pk) for pk in flags], **extra}
    return client.post(f"/tasks/{task.pk}/problem/", data, follow=True)


def test_acknowledging_the_problem_takes_up_every_flag_shown(client, acting, three_levels):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    flags = shown(task)
    assert len(flags) == 3
    body = post(client, task, "acknowledge", flags).content.decode()
    assert "Acknowledged the problem: 3 flags." in body
    assert not task.flags.filter(state=Flag.OPEN, acknowledged_at__isnull=True).exists()
    # Sent again (a double click, a resend), it changes nothing and says so.
    again = post(client, task, "acknowledge", flags).content.decode()
    assert "Acknowledged the problem: 0 flags (3 already acknowledged)." in again
    assert "Taken up: every flag of it is acknowledged, snoozed or silenced." in again


def test_a_flag_opened_after_the_page_was_shown_is_left_alone(client, acting, three_levels):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    flags = shown(task)
    late = do_open_flag(
        task.namespace_id, Finding("stuck", "task", task.task_id, {"text": "quiet"}), clock.now()
    )
    post(client, task, "snooze", flags, **{"for": "4h"})
    late.refresh_from_db()
    assert late.snoozed_until is None
    assert task.flags.filter(pk__in=flags, snoozed_until__isnull=False).count() == 3


def test_resolving_the_problem_needs_a_reason(client, acting, three_levels):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    flags = shown(task)
    body = post(client, task, "resolve", flags).content.decode()
    assert "Could not resolve the problem: a reason is needed" in body
    assert task.flags.filter(state=Flag.OPEN).count() == 3
    post(client, task, "resolve", flags, reason="checked by hand")
    assert not task.flags.filter(state=Flag.OPEN).exists()


def test_flags_of_another_task_are_not_touched(client, acting, three_levels, source):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    other = Task.objects.exclude(pk=task.pk).first()
    body = post(client, other, "acknowledge", shown(task)).content.decode()
    assert "the page showed no open flag of this task" in body
    assert not task.flags.filter(acknowledged_at__isnull=False).exists()


def test_a_viewer_may_not(client, viewer, three_levels):
    client.force_login(viewer)
    task = Task.objects.get(task_id="task:release-plan")
    response = client.post(f"/tasks/{task.pk}/problem/", {"action": "acknowledge"})
    assert response.status_code == 403
    assert "Acknowledge the problem" not in client.get(f"/tasks/{task.pk}/").content.decode()


def test_the_card_offers_the_problem_forms_with_the_flags_shown(client, acting, three_levels):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    card = html[html.index('<article class="problem-card') :]
    card = card[: card.index("</article>")]
    assert "Acknowledge the problem</button>" in card
    for pk in shown(task):
        assert card.count(f'<input type="hidden" name="flag" value="{pk}">') == 3


def test_the_problem_is_snoozed_until_a_chosen_time(client, acting, three_levels):
    from datetime import timedelta

    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    flags = shown(task)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert '<label for="snooze-problem-until">Until (UTC)</label>' in page
    until = (clock.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    body = post(
        client, task, "snooze", flags, until=until.strftime("%Y-%m-%dT%H:%M"), **{"for": "until"}
    )
    assert "Snoozed the problem: 3 flags." in body.content.decode()
    assert set(task.flags.filter(state=Flag.OPEN).values_list("snoozed_until", flat=True)) == {
        until
    }
    late = post(client, task, "snooze", flags, until="2001-01-01T00:00", **{"for": "until"})
    assert "Could not snooze the problem: 2001-01-01 00:00 UTC has passed" in late.content.decode()
