"""The task page's actions: the ones its flags call for, the preview, the confirmed
request (idempotent on a double submit) and its outcome on the page."""

from datetime import datetime
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils.html import escape

from supervisor.core.access.sources import do_create_source
from supervisor.core.actions import previews
from supervisor.core.actions import writers as actions
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task
from supervisor.jobs import operator_actions
from tests.support.forms import confirm_form
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

SECRET = "a-test-secret-of-some-length"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
SEED002 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed002" in p.name))
STALE = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
TRANSIENT = "node:delegated-task:cmd%3Aa1"
DUPLICATE = "node:delegated-task:cmd%3Aa2"


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


@pytest.fixture
def fleet(db, receiver):
    source, _ = do_create_source("t3", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 2}
    source.save()
    for scenario in (SEED000, SEED002):
        apply_events(source, scenario["events"])
        until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
        evaluate(source.namespace_id, until)
    return {t.task_id: t for t in Task.objects.filter(known=True)}


@pytest.fixture
def operator_client(client, user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    client.force_login(user)
    return client


def action_url(task, kind):
    return reverse("web:task-action", args=[task.pk, kind])


@pytest.mark.parametrize(
    ("task_id", "kind", "label"),
    [
        (STALE, "deliver", "Deliver the latest result"),
    ],
)
def test_the_task_page_suggests_the_action_its_flags_call_for(
    operator_client, fleet, task_id, kind, label
):
    task = fleet[task_id]
    html = operator_client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    suggested = html.split('class="suggested-action"')[1:]
    assert len(suggested) == 1, suggested
    assert action_url(task, kind) in suggested[0] and label in suggested[0]


def test_a_finished_task_is_never_offered_cancel(operator_client, fleet):
    # Seed 002's duplicate completed (and was handed on): its duplicate_delegation flag
    # calls for cancel, but there is nothing left to stop.
    task = fleet[DUPLICATE]
    html = operator_client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    [suggested] = [part.split("</p>")[0] for part in html.split('class="suggested-action')[1:]]
    assert action_url(task, "cancel") not in suggested
    assert "Cancel the task: not now" in suggested
    assert "the task has finished (completed) and no run of its child is under way" in suggested
    preview = operator_client.get(action_url(task, "cancel")).content.decode()
    assert "nothing to cancel" in preview and 'name="key"' not in preview
    # Nor does the problem card still advise it (it said "Cancel the duplicate").
    card = html.split('class="problem-card')[1].split("</article>")[0]
    advice = card.split('class="advice')[1].split("</p>")[0]
    assert "Cancel the duplicate" not in advice
    assert "Not possible now" in advice and "the task has finished (completed)" in advice


def test_a_viewer_sees_no_action_and_may_not_preview(client, user, fleet):
    client.force_login(user)
    task = fleet[STALE]
    html = client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    assert "suggested-action" not in html and "may look but not act" in html
    assert client.get(action_url(task, "deliver")).status_code == 403
    assert client.post(action_url(task, "deliver"), {"key": "x"}).status_code == 403
    assert not Action.objects.exists()


def test_the_preview_shows_the_exact_text_the_target_and_what_it_affects(operator_client, fleet):
    task = fleet[STALE]
    expected = previews.preview_action(task, "deliver")
    page = operator_client.get(action_url(task, "deliver"))
    html = page.content.decode()
    assert page.status_code == 200 and "<html" in html
    assert "thread:parent-release" in html and "stale_result" in html
    assert expected.run in html
    assert escape(expected.text) in html
    fragment = operator_client.get(action_url(task, "deliver"), headers={"HX-Request": "true"})
    assert "<html" not in fragment.content.decode()
    assert escape(expected.text) in fragment.content.decode()
    assert not Action.objects.exists()


def previewed(client, task, kind, **form) -> dict:
    """The confirm form of `kind`'s preview page, filled in with `form`."""
    return {**confirm_form(client.get(action_url(task, kind)).content.decode()), **form}


def test_confirming_twice_with_the_same_form_asks_once(operator_client, fleet):
    task = fleet[STALE]
    form = previewed(operator_client, task, "deliver", reason="stale result handed on")
    # Another operator's preview of the same delivery, shown before the first confirm.
    others = previewed(operator_client, task, "deliver")
    assert form["run"] == previews.preview_action(task, "deliver").run
    first = operator_client.post(action_url(task, "deliver"), form, follow=True)
    second = operator_client.post(action_url(task, "deliver"), form, follow=True)
    assert "Delivery queued" in first.content.decode()
    assert "Already asked" in second.content.decode()
    action = Action.objects.get()
    assert (action.kind, action.actor_name, action.reason) == (
        "deliver",
        "user:op",
        "stale result handed on",
    )
    html = second.content.decode()
    assert f'id="action-{action.pk}"' in html and "queued" in html

    # Its confirmation is another request: a second delivery of the run, refused.
    other = operator_client.post(action_url(task, "deliver"), others, follow=True)
    assert "Could not deliver" in other.content.decode()
    assert "already delivered" in other.content.decode()
    assert Action.objects.count() == 1


def test_the_outcome_shows_on_the_page(operator_client, fleet, receiver):
    task = fleet[TRANSIENT]
    operator_client.post(
        action_url(task, "continue"), previewed(operator_client, task, "continue", reason="429")
    )
    receiver.refuse(status=422, body="no such run")
    action = Action.objects.get()
    assert operator_actions.perform(action.pk) == "failed"
    html = operator_client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    row = html.split(f'id="action-{action.pk}"')[1].split("</tr>")[0]
    assert "failed" in row and "no such run" in row and "Try again" in row


def test_a_refusal_is_shown_instead_of_a_confirm_button(operator_client, fleet):
    task = fleet[STALE]
    source = task.namespace.sources.get()
    source.connector = ""
    source.save()
    html = operator_client.get(action_url(task, "deliver")).content.decode()
    assert "Cannot deliver" in html and "connector" in html
    assert 'name="key"' not in html


def test_no_action_is_offered_where_no_connector_can_send_it(operator_client, fleet):
    # The field's report: Deliver was the main button on a source with no connector.
    task = fleet[STALE]
    source = task.namespace.sources.get()
    source.connector = ""
    source.save()
    html = operator_client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    [suggested] = [part.split("</p>")[0] for part in html.split('class="suggested-action')[1:]]
    assert "Deliver the latest result: not now" in suggested
    assert "has a connector: bind one (Sources page)" in suggested
    assert action_url(task, "deliver") not in suggested


REAL_ANSWER = (
    "Reviewed and fixed the codemode change: 3 files changed (await.ts, all_settled.ts, "
    "index.ts); tests pass."
)


def test_the_childs_real_answer_from_a_run_the_task_does_not_own_can_be_handed_over(
    operator_client, fleet, receiver
):
    # Seed 002: the task failed on a passing error; a message made the child go on and
    # its run 2 finished with the real answer, which the task does not own. Deliver
    # would re-send the error text; the preview offers run 2 instead.
    task = fleet[TRANSIENT]
    first = operator_client.get(action_url(task, "deliver")).content.decode()
    assert "Failed to authenticate" in first.split('class="sent-text"')[1].split("</pre>")[0]
    run2 = "thread:delegated-task:a1#2"
    offer = first.split('class="other-results"')[1].split("</ul>")[0]
    assert (
        "Deliver run 2&#x27;s result instead" in offer or "Deliver run 2's result instead" in offer
    )
    assert "not owned: started by a message to the child, not by the task" in offer
    assert REAL_ANSWER[:60] in offer

    # The second click: the preview of run 2, which says it is not the task's own.
    chosen_url = f"{action_url(task, 'deliver')}?run={quote(run2, safe='')}"
    assert escape(chosen_url) in offer
    chosen = operator_client.get(chosen_url).content.decode()
    assert REAL_ANSWER in chosen.split('class="sent-text"')[1]
    assert "is not owned by the task (started by a message" in chosen
    form = confirm_form(chosen)
    assert form["run"] == run2
    operator_client.post(action_url(task, "deliver"), {**form, "reason": "the real answer"})

    action = Action.objects.get(task=task, kind="deliver")
    assert action.run_id == run2 and action.text.endswith(REAL_ANSWER)
    assert operator_actions.perform(action.pk) == "succeeded"
    [sent] = receiver.deliveries
    assert sent["action"]["run_id"] == run2 and sent["action"]["thread_id"] == "thread:smart-loop"
    # What the parent was given now holds the real answer.
    page = operator_client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    assert REAL_ANSWER in page.split('class="card given"')[1].split('class="card latest"')[0]


def test_a_run_of_another_thread_cannot_be_handed_over(fleet):
    task = fleet[TRANSIENT]
    preview = previews.preview_action(task, "deliver", run="thread:delegated-task:a2#1")
    assert preview.status == 400
    assert "is not a finished run of its child thread" in preview.refusal


def test_an_unknown_action_is_404(operator_client, fleet):
    assert operator_client.get(action_url(fleet[STALE], "explode")).status_code == 404


BULK = reverse("web:bulk-action")


def test_bulk_preview_counts_the_matching_tasks_and_confirm_acts_on_each(operator_client, fleet):
    query = {"kind": "deliver", "scope": "matching", "flag": "stale_result"}
    page = operator_client.get(BULK, query)
    html = page.content.decode()
    assert page.status_code == 200 and "1 task" in html
    assert fleet[STALE].task_id in html
    assert not Action.objects.exists()

    stale = operator_client.post(BULK, {**query, "selection": "not-what-was-shown"})
    assert stale.status_code == 409 and "Nothing was done" in stale.content.decode()
    assert not Action.objects.exists()

    form = {**confirm_form(html), "reason": "outage"}
    done = operator_client.post(BULK, form, follow=True)
    assert "Queued 1 of 1" in done.content.decode()
    action = Action.objects.get()
    assert (action.task.task_id, action.kind, action.reason) == (STALE, "deliver", "outage")


def test_bulk_on_selected_tasks_says_which_are_refused(operator_client, fleet):
    earlier, _ = actions.do_request_action(fleet[STALE], "deliver", actor="user:someone")
    picked = {
        "kind": "deliver",
        "scope": "selected",
        "task": [fleet[STALE].pk, fleet[DUPLICATE].pk],
    }
    html = operator_client.get(BULK, picked).content.decode()
    assert "2 tasks" in html and html.count("refused:") == 1
    done = operator_client.post(BULK, confirm_form(html), follow=True)
    text = done.content.decode()
    assert "Queued 1 of 2" in text and "already delivered" in text
    assert sorted(Action.objects.values_list("task__task_id", flat=True)) == sorted(
        [STALE, DUPLICATE]
    )


def test_bulk_needs_a_filter_or_a_selection(operator_client, fleet):
    for query in ({"kind": "cancel", "scope": "matching"}, {"kind": "cancel"}):
        page = operator_client.get(BULK, query, follow=True)
        assert "Could not prepare the bulk action" in page.content.decode()
    assert not Action.objects.exists()
