"""On the task page, after a continue, the page says what the run it
started did and what is left to do (deliver its result, or nothing), naming the run by
its ordinal; a task still reported running gets a Deliver suggestion without a flag."""

import re

import pytest
from django.urls import reverse

from supervisor.core import clock
from supervisor.core.actions.writers import do_request_action
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.jobs import operator_actions
from tests.core.facts.test_continued import (
    CHILD,
    DONE,
    at,
    open_kinds,
    run_events,
    stuck_task,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.django_db


def outcome(html: str) -> str:
    found = re.search(r'<p id="continued-outcome"[^>]*>(.*?)</p>', html, re.S)
    assert found, "the page says nothing of what the continue did"
    return found.group(1)


def test_the_page_says_what_the_continued_run_did_and_offers_its_delivery(
    client,
    acting,
    stuck_task,  # noqa: F811
):
    source, task, receiver = stuck_task
    client.force_login(acting)
    url = reverse("web:task-detail", args=[task.pk])
    with clock.virtual_clock(at(45)):
        action, _ = do_request_action(task, "continue", actor="user:op")
        assert operator_actions.perform(action.pk) == "succeeded"
        waiting = outcome(client.get(url).content.decode())
    assert "has not started a run" in waiting and "wait" in waiting

    wake = receiver.deliveries[0]["action"]["wake"]
    apply_events(source, run_events(wake, finished=True))
    evaluate(source.namespace_id, at(51))
    assert open_kinds(task) == set()
    with clock.virtual_clock(at(51)):
        html = client.get(url).content.decode()
    said = outcome(html)
    assert "Run 2 (the task’s own) finished completed" in said and DONE in said
    assert "Left to do:</strong> deliver its result to the parent" in said
    assert CHILD not in said
    assert "a continue by hand (manual wake): the run it wakes is the task" in html  # timeline
    assert "recorded as a manual wake to the child" in html  # the action's row
    [suggested] = re.findall(r'<p class="suggested-action">(.*?)</p>', html, re.S)
    assert "Deliver the continued run’s result (run 2)" in suggested
    deliver = reverse("web:task-action", args=[task.pk, "deliver"])
    assert deliver in suggested and "No open flag calls for an action" not in html

    # Delivered by hand: nothing is left.
    with clock.virtual_clock(at(52)):
        delivery, _ = do_request_action(task, "deliver", actor="user:op", run=f"{CHILD}~2")
        assert operator_actions.perform(delivery.pk) == "succeeded"
        html = client.get(url).content.decode()
    assert "Left to do:</strong> nothing: its result has reached the parent" in outcome(html)
    assert 'class="suggested-action"' not in html
