"""The task page's advice and "The latest result" panel beside it read one meaning of
"the result reached the parent": under `delivery: "wake"` only a delivered wake counts.

The history: the child's run 1 fails on a passing provider fault, the failed report (which
says `delivery: "wake"`) is handed by a wake the parent takes, the parent starts a run on
it, and meanwhile the child's run 2 (a restart) completes; its task wake is queued, and
the parent, busy with its run, has not taken it. The parent does not hold run 2's result.
"""

import re
from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task
from tests.support.factories import BASE, at

pytestmark = pytest.mark.django_db

TASK, PARENT, CHILD = "task:ov", "thread:ov-lead", "thread:ov-child"
FAILURE = "API Error: 529 Overloaded"
DONE = "Reindexed the catalogue: 1,204 entries, no conflicts."
QUEUED_WAKE = "w:ov-2"  # run 2's task wake: queued, not taken
NOW = BASE + timedelta(seconds=91)  # a minute after it was queued


def event(name: str, kind: str, seconds: float, **data) -> dict:
    return {"id": f"ov-{name}", "type": kind, "at": at(seconds), "data": data}


def run(thread: str, n: int, seconds: float, trigger: dict, finished=None, **end) -> list[dict]:
    """Run n of a thread requested and started at `seconds`, finished at `finished`."""
    name, run_id = f"{'p' if thread == PARENT else 'c'}{n}", f"{thread}:{n}"
    events = [
        event(f"{name}r", "run.requested", seconds, thread=thread, run=run_id, ordinal=n,
              trigger=trigger),
        event(f"{name}s", "run.started", seconds + 0.5, thread=thread, run=run_id),
    ]  # fmt: skip
    if finished is not None:
        events.append(event(f"{name}f", "run.finished", finished, thread=thread, run=run_id, **end))
    return events


def task_wake(name: str, seconds: float, summary: str, outcome: str) -> dict:
    source = {"kind": "task", "task": TASK, "thread": CHILD}
    return event(name, "wake.queued", seconds, wake=f"w:ov-{name[-1]}", thread=PARENT,
                 source=source, summary=summary, outcome=outcome)  # fmt: skip


def wake_queued_not_taken() -> list[dict]:
    delegated = event("d", "task.delegated", 2, task=TASK, parent_thread=PARENT,
                      child_thread=CHILD, title="Reindex the catalogue", mode="async")  # fmt: skip
    failed = event("rep", "task.reported", 11, task=TASK, status="failed", summary=FAILURE,
                   error=FAILURE, result_run=f"{CHILD}:1", delivery="wake")  # fmt: skip
    return [
        *run(PARENT, 1, 0, {"kind": "message"}, 3, status="completed", summary="Delegated."),
        delegated,
        *run(CHILD, 1, 4, {"kind": "delegation", "task": TASK}, 10, status="failed",
             summary=FAILURE, error=FAILURE),
        failed,
        task_wake("w1", 12, FAILURE, "failed"),  # the failure: the parent takes it
        event("w1d", "wake.delivered", 13, wake="w:ov-1", run=f"{PARENT}:2"),
        *run(PARENT, 2, 13, {"kind": "wake", "wake": "w:ov-1"}),  # still going
        *run(CHILD, 2, 15, {"kind": "restart", "run": f"{CHILD}:1"}, 30, status="completed",
             summary=DONE),
        task_wake("w2", 31, DONE, "completed"),  # run 2's result: queued, not taken
    ]  # fmt: skip


def judged_with_the_wake_queued(source) -> Task:
    """The history above, on a source with a connector (so that only the task's state
    can rule an action out), judged a minute after run 2's wake was queued."""
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": "s" * 32}
    source.save()
    apply_events(source, wake_queued_not_taken())
    evaluate(source.namespace_id, NOW)
    return Task.objects.get(task_id=TASK)


@pytest.fixture
def queued_not_taken(source):
    task = judged_with_the_wake_queued(source)
    with clock.virtual_clock(NOW):
        yield task


def latest_panel(html: str) -> str:
    found = re.search(r"From run .*?</p>", html, re.S)
    assert found, "the page has no latest-result panel"
    return found.group(0)


def advice(html: str) -> str:
    """The problem card's advice and the suggested actions: what the page tells to do."""
    card = re.search(r'<p class="advice [^"]*">(.*?)</p>', html, re.S)
    actions = html[html.index('<section id="actions"') :]
    actions = actions[: actions.index('<details class="other-actions"')]
    return (card.group(1) if card else "") + actions


def page(client, task) -> str:
    return client.get(f"/tasks/{task.pk}/").content.decode()


def test_while_the_wake_waits_the_advice_says_so_as_the_panel_does(
    client, acting, queued_not_taken
):
    task = queued_not_taken
    assert set(task.flags.filter(state=Flag.OPEN).values_list("kind", flat=True)) == {
        "failed_while_running",
        "transient_failure",
    }
    client.force_login(acting)
    html = page(client, task)
    assert "it has not reached the parent." in latest_panel(html)
    told = advice(html)
    assert "reached the parent" not in told
    assert "resolve the flags with a reason" not in told
    # It says the result waits for the parent, and names the wake that carries it.
    assert "queued for the parent" in told and "not taken it yet" in told
    assert QUEUED_WAKE in told
    # Nothing offered would hand the parent run 2's result a second time: no Deliver
    # button while the wake carrying it is queued.
    assert not re.search(r'<a class="button[^"]*" href="[^"]*/actions/deliver/', told)


def test_once_the_parent_takes_the_wake_both_say_it_has_reached_the_parent(
    client, acting, source, queued_not_taken
):
    task = queued_not_taken
    apply_events(source, [event("w2d", "wake.delivered", 60, wake=QUEUED_WAKE)])
    evaluate(source.namespace_id, NOW)
    client.force_login(acting)
    html = page(client, task)
    assert "it has reached the parent (by wake w:ov-2)." in latest_panel(html)
    told = advice(html)
    assert "its result has reached the parent: resolve the flags with a reason" in told
    assert "queued for the parent" not in told


def test_the_deliver_preview_says_the_result_waits_for_the_parent_not_that_it_reached_it(
    client, acting, queued_not_taken
):
    """Opened by hand, the deliver preview of run 2 says what the panel says: the result
    is queued for the parent and not taken, so a delivery now would hand it over twice."""
    task = queued_not_taken
    client.force_login(acting)
    html = client.get(f"/tasks/{task.pk}/actions/deliver/?run={CHILD}:2").content.decode()
    assert "already reached the parent" not in html
    assert f"queued for the parent (wake {QUEUED_WAKE})" in html
    assert "hands it over twice" in html


def test_once_taken_the_deliver_preview_says_it_reached_the_parent(
    client, acting, source, queued_not_taken
):
    task = queued_not_taken
    apply_events(source, [event("w2d", "wake.delivered", 60, wake=QUEUED_WAKE)])
    client.force_login(acting)
    html = client.get(f"/tasks/{task.pk}/actions/deliver/?run={CHILD}:2").content.decode()
    assert "This result has already reached the parent once." in html
    assert "queued for the parent" not in html
