"""After an action: the suggestion fits the task's state, the
preview says which flags the action answers and which stay open, the banner follows the
action, one delivery is one wake, and a resolved flag says what resolved it."""

from datetime import datetime, timedelta
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions import previews
from supervisor.core.actions import writers as actions
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.writers import do_resolve_flag_by_hand
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Flag, Run, Task, Wake
from supervisor.jobs import operator_actions
from supervisor.web import fragments
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

SECRET = "a-test-secret-of-some-length"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
SEED002 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed002" in p.name))
STALE = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
TRANSIENT = "node:delegated-task:cmd%3Aa1"
RUN1, RUN2 = "thread:delegated-task:a1#1", "thread:delegated-task:a1#2"
REAL_ANSWER = "Reviewed and fixed the codemode change"
FAILURE_FLAGS = {"failed_while_running", "transient_failure"}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


def source_with(connector: str, receiver=None):
    source, _ = do_create_source("t3", scopes="ingest,read,act")
    source.connector = connector
    source.connector_settings = (
        {"url": receiver.url, "secret": SECRET, "timeout": 2} if receiver else {}
    )
    source.save()
    return source


def played(source, scenario, events=None) -> datetime:
    """Apply the scenario's events (or the first `events` of them) and judge them."""
    chosen = scenario["events"][:events] if events else scenario["events"]
    apply_events(source, chosen)
    until = at(chosen[-1]["at"]) + timedelta(seconds=1) if events else at(scenario["until"])
    evaluate(source.namespace_id, until)
    return until


@pytest.fixture
def operator_client(client, user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    client.force_login(user)
    return client


def page(client, task) -> str:
    return client.get(reverse("web:task-detail", args=[task.pk])).content.decode()


def part(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


def suggested(html: str) -> list[str]:
    return [p.split("</p>")[0] for p in html.split('class="suggested-action')[1:]]


def open_kinds(task) -> set[str]:
    return set(task.flags.filter(state="open").values_list("kind", flat=True))


def deliver(task, run, now, actor="user:alice") -> Action:
    with clock.virtual_clock(now):
        action, _ = actions.do_request_action(task, "deliver", actor=actor, run=run)
        assert operator_actions.perform(action.pk) == "succeeded"
    return action


# --- d: one delivery, one wake ------------------------------------------------------


def test_one_delivery_by_hand_is_one_wake_and_one_timeline_row(db, operator_client):
    # The demo fleet answers a delivery with its own manual wake; Supervisor records
    # its own: the page showed two `wake.queued` (manual) rows for one delivery.
    source = source_with("simulator")
    until = played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    action = deliver(task, RUN2, until + timedelta(minutes=1))

    [wake] = Wake.objects.filter(source_kind="manual", source_task=TRANSIENT)
    assert wake.wake_id == f"supervisor:delivery:{action.pk}"
    assert wake.delivered_event is not None  # the orchestrator's answer: into a parent run
    html = page(operator_client, task)
    timeline = part(html, 'id="timeline"', "</section>")
    rows = [r for r in timeline.split("<li")[1:] if "wake.queued" in r and "(manual" in r]
    assert len(rows) == 1, rows
    given = part(html, 'class="card given"', 'class="card latest"')
    assert given.count("<blockquote>") == 2 and REAL_ANSWER in given  # the 403, then it
    assert given.count("delivery by hand") == 1


# --- a, e: what an action answers resolves, and says so -------------------------------


def test_delivering_the_childs_later_answer_resolves_the_failure_flags_saying_by_whom(
    db, operator_client, receiver
):
    source = source_with("webhook", receiver)
    until = played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    assert open_kinds(task) >= FAILURE_FLAGS
    deliver(task, RUN2, until + timedelta(minutes=1))

    assert not open_kinds(task) & FAILURE_FLAGS
    assert "orphan_wake" in open_kinds(task)  # not about what the parent holds
    for flag in task.flags.filter(kind__in=FAILURE_FLAGS):
        assert flag.resolve_reason == (
            "resolved by the delivery by hand of run 2 by alice"  # by ordinal
        ), flag.resolve_reason
    # The rules do not open them again while their condition still holds.
    evaluate(source.namespace_id, until + timedelta(minutes=2))
    assert not open_kinds(task) & FAILURE_FLAGS
    flags = part(page(operator_client, task), 'id="flags"', "</section>")
    assert "Resolved by the delivery by hand of run 2 by alice" in flags


def test_delivering_the_failed_runs_text_resolves_nothing(db, receiver):
    source = source_with("webhook", receiver)
    until = played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    deliver(task, RUN1, until + timedelta(minutes=1))
    assert open_kinds(task) >= FAILURE_FLAGS


def test_a_flag_the_rules_resolve_after_a_delivery_says_what_resolved_it(
    db, operator_client, receiver
):
    source = source_with("webhook", receiver)
    until = played(source, SEED000)
    task = Task.objects.get(task_id=STALE)
    action = deliver(task, None, until + timedelta(minutes=1))
    evaluate(source.namespace_id, until + timedelta(minutes=2), tasks=[STALE])
    stale = task.flags.get(kind="stale_result")
    assert stale.state == Flag.RESOLVED
    assert stale.resolve_reason == (
        f"resolved: the delivery by hand of run {Run.objects.get(run_id=action.run_id).ordinal} "
        "by alice brought the latest result to the parent"
    )
    flags = part(page(operator_client, task), 'id="flags"', "</section>")
    assert "Resolved: the delivery by hand of run" in flags


def test_a_flag_resolved_by_hand_says_by_whom_and_why(db, user, operator_client):
    source = source_with("simulator")
    played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    flag = task.flags.get(kind="orphan_wake")
    do_resolve_flag_by_hand(flag, clock.now(), reason="the parent read it", by=user)
    flags = part(page(operator_client, task), 'id="flags"', "</section>")
    assert "Resolved by hand by op: the parent read it" in flags


# --- a: the suggestion after a continue ------------------------------------------------


def test_after_continue_succeeded_the_page_says_what_remains_open_and_why(
    db, operator_client, receiver
):
    # The task has just failed on a 403 behind Cloudflare; the child has not gone on.
    source = source_with("webhook", receiver)
    until = played(source, SEED002, events=5)
    task = Task.objects.get(task_id=TRANSIENT)
    assert open_kinds(task) == {"transient_failure"}
    [before] = suggested(page(operator_client, task))
    assert "Continue the child" in before and "not now" not in before

    with clock.virtual_clock(until + timedelta(seconds=5)):
        action, _ = actions.do_request_action(task, "continue", actor="user:alice")
        in_flight = suggested(page(operator_client, task))
        assert operator_actions.perform(action.pk) == "succeeded"
    assert "Continue the child: under way" in in_flight[0]
    assert f"action {action.pk}, queued" in in_flight[0]

    [after] = suggested(page(operator_client, task))
    assert reverse("web:task-action", args=[task.pk, "continue"]) not in after
    assert "Continue the child: sent" in after
    assert "waiting for the child’s run to be reported" in after
    assert "transient_failure stays open" in after


def test_when_the_continued_child_finished_the_main_action_delivers_its_result(db, operator_client):
    source = source_with("simulator")
    until = played(source, SEED002, events=5)
    task = Task.objects.get(task_id=TRANSIENT)
    with clock.virtual_clock(until + timedelta(seconds=5)):
        action, _ = actions.do_request_action(task, "continue", actor="user:alice")
        assert operator_actions.perform(action.pk) == "succeeded"
    evaluate(source.namespace_id, until + timedelta(seconds=30))
    run = task.child_thread.runs.get(trigger_kind="wake").run_id
    first = suggested(page(operator_client, task))[0]
    assert "Deliver the child’s later result" in first
    assert f"?run={quote(run, safe='')}" in first


def test_a_task_whose_child_already_answered_is_offered_that_answer_first(
    db, operator_client, receiver
):
    # Seed 002 when run 2 has finished with the real answer and no wake brought it to
    # the parent yet: Continue was the main button.
    source = source_with("webhook", receiver)
    played(source, SEED002, events=11)
    task = Task.objects.get(task_id=TRANSIENT)
    first, *rest = suggested(page(operator_client, task))
    assert "Deliver the child’s later result" in first and "not now" not in first
    assert "run=thread%3Adelegated-task%3Aa1%232" in first
    assert all("Continue the child…" not in s for s in rest)


# --- b: the preview says what the action answers and what stays open -----------------


def test_once_the_real_answer_reached_the_parent_continue_is_not_offered(db, operator_client):
    # Seed 002 at its end: run 2's answer reached the parent by a wake naming another id.
    source = source_with("simulator")
    played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    [only] = suggested(page(operator_client, task))
    assert "Continue the child: not now" in only
    assert "its result has reached the parent: resolve the flags with a reason" in only


def test_the_preview_says_which_flags_it_answers_and_which_stay_open(db, receiver):
    source = source_with("webhook", receiver)
    played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)

    chosen = previews.preview_action(task, "deliver", run=RUN2)
    assert {kind for kind, _ in chosen.answers} == FAILURE_FLAGS
    assert dict(chosen.stays_open)["orphan_wake"]

    default = previews.preview_action(task, "deliver")
    assert default.run == RUN1 and not default.answers
    assert "not a later result" in dict(default.stays_open)["transient_failure"]

    resumed = previews.preview_action(task, "continue")
    why = dict(resumed.stays_open)["transient_failure"]
    assert "until the orchestrator reports the task again" in why


def test_the_preview_page_lists_answered_and_open_flags(db, operator_client, receiver):
    source = source_with("webhook", receiver)
    played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    url = reverse("web:task-action", args=[task.pk, "deliver"]) + "?run=" + quote(RUN2, safe="")
    html = operator_client.get(url).content.decode()
    assert "transient_failure" in part(html, 'class="answers"', "</ul>")
    assert "orphan_wake" in part(html, 'class="stays-open"', "</ul>")


# --- c: the banner follows the action -------------------------------------------------


def test_the_banner_follows_the_actions_state(db, operator_client, receiver):
    source = source_with("webhook", receiver)
    played(source, SEED002, events=5)
    task = Task.objects.get(task_id=TRANSIENT)
    action, _ = actions.do_request_action(task, "continue", actor="user:alice")

    def banner() -> str:
        # What a live push renders: the actions part of the task page.
        [actions_part] = [p for p in fragments.task_detail(task.pk, True) if 'id="actions"' in p]
        return part(actions_part, 'id="action-banner"', "</p>")

    assert "Continue queued" in banner()
    assert operator_actions.perform(action.pk) == "succeeded"
    assert "Continue succeeded" in banner() and "queued" not in banner()


def test_a_hand_deliverys_wake_follows_its_action_when_the_orchestrators_clock_is_behind(
    db, operator_client
):
    # The demo's environments run skewed clocks, as the field's do: the orchestrator
    # stamped the delivery's wake 4 s before Supervisor asked for it, and the timeline
    # listed `wake.delivered` before the action that caused it.
    source = source_with("simulator")
    until = played(source, SEED002)
    task = Task.objects.get(task_id=TRANSIENT)
    action = deliver(task, RUN2, until + timedelta(minutes=1))
    wake = Wake.objects.get(wake_id=f"supervisor:delivery:{action.pk}")
    behind = timedelta(seconds=4)
    Wake.objects.filter(pk=wake.pk).update(
        queued_at=wake.queued_at - behind, delivered_at=wake.delivered_at - behind
    )
    timeline = part(page(operator_client, task), 'id="timeline"', "</section>")
    rows = [r for r in timeline.split("<li")[1:] if 'class="kind">' in r]
    kinds = [r.split('class="kind">')[1].split("<")[0] for r in rows]
    assert kinds[-3:] == ["action.deliver", "wake.queued", "wake.delivered"], kinds
    # The times shown stay the orchestrator's own.
    queued = (wake.queued_at - behind).strftime("%H:%M:%S")
    assert queued in rows[-2], rows[-2]
