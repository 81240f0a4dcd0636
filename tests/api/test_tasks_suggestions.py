"""GET /api/v1/tasks/{id}'s `suggestions` are the task page's: the same actions, labels,
flags, reasons why not, and runs to deliver (core.actions.advice gives both)."""

from datetime import datetime
from html import unescape
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import Permission
from django.utils.html import strip_tags

from supervisor.core import clock
from supervisor.core.flags.kinds import titles
from supervisor.core.models import Task
from tests.support.scenarios import load_own
from tests.web.pages.test_task_detail_advice import (
    NOW,
    QUEUED_WAKE,
    judged_with_the_wake_queued,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def acting(user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    return user


def with_a_connector(source):
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": "s" * 32}
    source.save()


def api_suggestions(client, source, task: Task) -> list[dict]:
    response = client.get(
        f"/api/v1/tasks/{quote(task.task_id, safe='')}",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert response.status_code == 200
    return response.json()["suggestions"]


def page_suggestions(client, task: Task) -> tuple[list[dict], str]:
    """The page's suggestions as the API spells them, and the page's actions section."""
    response = client.get(f"/tasks/{task.pk}/")
    html = response.content.decode()
    actions = html[html.index('<section id="actions"') :]
    actions = actions[: actions.index('<details class="other-actions"')]
    return [s.as_json() for s in response.context["suggested"]], actions


def shown(suggestion: dict, actions: str) -> bool:
    """Whether the page's actions section shows the suggestion as the API gives it: its
    label, the flags behind it, why it cannot be sent now (else its link, with the run)."""
    text = " ".join(unescape(strip_tags(actions)).split())
    if suggestion["why_not"] is not None:
        said = (
            f"{suggestion['label']}: not now",
            titles(suggestion["flags"]),
            suggestion["why_not"],
        )
        return all(part in text for part in said)
    run = suggestion["run"]
    link = f"/actions/{suggestion['kind']}/" + (f"?{urlencode({'run': run})}" if run else '"')
    return suggestion["label"] in text and titles(suggestion["flags"]) in text and link in actions


def test_the_api_suggests_what_the_page_does_while_the_result_waits_for_the_parent(
    client, acting, source
):
    task = judged_with_the_wake_queued(source)
    client.force_login(acting)
    with clock.virtual_clock(NOW):
        from_page, actions = page_suggestions(client, task)
        client.logout()
        from_api = api_suggestions(client, source, task)
    assert from_api == from_page
    [cont] = from_api
    assert (cont["kind"], cont["label"]) == ("continue", "Continue the child")
    assert cont["flags"] == ["failed_while_running", "transient_failure"]
    assert "queued for the parent" in cont["why_not"] and QUEUED_WAKE in cont["why_not"]
    assert (cont["status"], cont["note"], cont["why"], cont["run"]) == (None, None, None, None)
    assert shown(cont, actions)


def test_the_api_suggests_what_the_page_does_for_a_result_never_delivered(client, acting, source):
    with_a_connector(source)
    scenario = load_own(source, "never-delivered.json")
    with clock.virtual_clock(datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))):
        task = Task.objects.get(task_id="task:nd")
        client.force_login(acting)
        from_page, actions = page_suggestions(client, task)
        client.logout()
        from_api = api_suggestions(client, source, task)
    assert from_api == from_page
    assert from_api == [
        {
            "kind": "deliver",
            "label": "Deliver the latest result",
            "flags": ["never_delivered"],
            "why_not": None,
            "status": None,
            "note": None,
            "why": None,
            "run": None,
        }
    ]
    assert shown(from_api[0], actions)
