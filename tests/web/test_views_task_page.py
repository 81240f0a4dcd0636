"""The task page: given beside latest, one timeline with ownership reasons, flags with
their evidence and the suggested action, and htmx's partial."""

import json
from datetime import datetime
from urllib.parse import quote

import pytest
from django.utils.html import escape

from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.kinds import kind_of
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Task
from tests.support.factories import at, task_events
from tests.support.scenarios import OWN_DIR as OWN_SCENARIOS
from tests.support.scenarios import load_own

pytestmark = pytest.mark.django_db


def page(client, task_id: str, **headers) -> str:
    task = Task.objects.get(task_id=task_id)
    return client.get(f"/tasks/{task.pk}/", headers=headers).content.decode()


def test_runs_say_whether_they_are_owned_and_why(client, viewer, three_levels):
    client.force_login(viewer)
    html = page(client, "task:release-plan")
    assert "— owned: first run" in html
    assert (
        "— owned: woken by wake thread:release-plan:wake:1 (task task:schema-audit reported)"
        in html
    )


def test_a_message_started_run_is_a_follow_up_not_owned(client, viewer, source):
    events = task_events(0)
    events.append(
        {
            "id": "t0-msg",
            "type": "run.requested",
            "at": at(30),
            "data": {
                "thread": "thread:t0",
                "run": "thread:t0:2",
                "ordinal": 2,
                "trigger": {"kind": "message"},
            },
        }
    )
    apply_events(source, events)
    client.force_login(viewer)
    html = page(client, "task:t0")
    assert "— not owned: message-started follow-up" in html
    assert 'class="tl-runrequested not-owned"' in html


def test_background_items_and_a_delivery_by_hand_are_on_the_timeline(client, viewer, source):
    load_own(source, "manual-delivery.json")
    client.force_login(viewer)
    html = page(client, "task:suite-run")
    assert '<span class="kind">background.started</span>' in html
    assert "owned: started by owned run thread:suite-run:run:1" in html
    assert "— owned: woken by wake thread:suite-run:wake:1 (item thread:suite-run:bg:pytest" in html
    assert "delivery by hand (manual wake)" in html


def test_the_page_puts_what_was_given_beside_the_latest_result(client, viewer, three_levels):
    client.force_login(viewer)
    html = page(client, "task:release-plan")
    given = html.index("What the parent was given")
    latest = html.index("The latest result")
    assert given < latest < html.index("What changed")
    assert "it has not reached the parent." in html


@pytest.mark.parametrize(
    ("kind", "advice"),
    [
        ("stale_result", "Deliver the latest result to the parent."),
        ("undelivered_result", "Deliver the latest result to the parent."),
        ("premature_completion", "Deliver the latest result to the parent once"),
    ],
)
def test_each_flag_has_its_evidence_and_suggested_action(
    client, viewer, three_levels, kind, advice
):
    client.force_login(viewer)
    html = page(client, "task:release-plan")
    card = html[html.index(f'<code class="flag-kind">{kind}</code>') :]
    card = card[: card.index("</article>")]
    assert "<strong>Evidence:</strong>" in card
    assert f"<strong>Suggested:</strong> {advice}" in card


def test_open_flags_come_before_resolved_ones(client, acting, three_levels):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    flag = task.flags.order_by("pk").first()
    client.post(f"/flags/{flag.pk}/", {"action": "resolve", "reason": "checked"})
    html = page(client, "task:release-plan")
    assert html.index("flag-card flag-open") < html.index("flag-card flag-resolved")


def test_an_htmx_request_gets_the_live_partial_with_counters_out_of_band(
    client, viewer, three_levels
):
    client.force_login(viewer)
    task = Task.objects.get(task_id="task:release-plan")
    response = client.get(f"/tasks/{task.pk}/", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="task-live" data-live-main>')
    assert "<html" not in html
    assert '<span id="open-flag-count" data-count="' in html and 'hx-swap-oob="true"' in html
    assert '<div id="messages" class="messages" role="status" hx-swap-oob="innerHTML">' in html
    assert "HX-Request" in response["Vary"]


def test_a_history_restore_gets_the_whole_page(client, viewer, three_levels):
    client.force_login(viewer)
    html = page(
        client, "task:release-plan", **{"HX-Request": "true", "HX-History-Restore-Request": "true"}
    )
    assert "<html" in html


def test_a_flag_form_posts_with_htmx_and_without(client, acting, three_levels):
    client.force_login(acting)
    task = Task.objects.get(task_id="task:release-plan")
    html = page(client, "task:release-plan")
    flag = task.flags.filter(state="open").first()
    form = f'<form method="post" action="/flags/{flag.pk}/" hx-post="/flags/{flag.pk}/"'
    assert form in html and 'hx-target="[data-live-main]" hx-swap="outerHTML"' in html
    # htmx follows the redirect with its header: the page's partial and the message.
    response = client.post(
        f"/flags/{flag.pk}/", {"action": "acknowledge"}, headers={"HX-Request": "true"}, follow=True
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="task-live"')
    assert f"Acknowledged “{kind_of(flag.kind).title}”." in body


def test_an_unknown_task_is_404(client, viewer):
    client.force_login(viewer)
    assert client.get("/tasks/999999/").status_code == 404


def test_a_tasks_open_flags_are_one_problem_card_with_each_kind_folded(
    client, viewer, three_levels
):
    client.force_login(viewer)
    html = page(client, "task:release-plan")
    flags = html[html.index('<section id="flags"') :]
    flags = flags[: flags.index("</section>")]
    assert flags.count('<article class="problem-card') == 1
    assert 'Problem: <span class="severity severity-critical">critical</span> · ' in flags
    assert "Stale result handed on</h2>" in flags  # the headline
    # One folded facet per kind, the headline's open, each holding its flag's evidence.
    assert flags.count('<details class="facet-detail"') == 3
    assert '<details class="facet-detail" id="facet-stale_result" open>' in flags
    assert '<details class="facet-detail" id="facet-premature_completion">' in flags
    # The header names the problem too, not three codes.
    header = html[html.index('id="task-header"') : html.index("</section>")]
    assert "Stale result handed on" in header and "stale_result</a>" not in header


def test_a_task_without_open_flags_says_there_is_nothing_to_do(client, viewer, source):
    apply_events(source, task_events(0))
    client.force_login(viewer)
    html = page(client, "task:t0")
    assert "No open flag: nothing needs doing on this task." in html
    assert "problem-card" not in html


def test_a_task_is_found_by_its_id_or_the_short_id_the_pages_show(client, viewer, source):
    """The short id with its Copy button was no address: /tasks/0001-lint-sweep/ was a 404."""
    real_id = "node:delegated-task:command%3Amcp%3A5b1c%3A0001-lint-sweep"
    apply_events(source, json.loads(json.dumps(task_events(0)).replace("task:t0", real_id)))
    task = Task.objects.get(task_id=real_id)
    client.force_login(viewer)
    for ref in ("0001-lint-sweep", quote(real_id, safe="")):
        response = client.get(f"/tasks/{ref}/")
        assert response.status_code == 302 and response["Location"] == f"/tasks/{task.pk}/", ref
    response = client.get("/tasks/no-such-task/")
    assert response.status_code == 404 and "no-such-task" in response.content.decode()


@pytest.mark.parametrize(
    ("scenario", "task_id", "kind", "action"),
    [
        ("cancel-not-propagated.json", "task:cn", "cancel_not_propagated", "Cancel the task"),
        ("silent-background-item.json", "task:sb", "silent_background_item", None),
    ],
)
def test_the_timed_kinds_show_evidence_meaning_advice_and_action(
    client, acting, source, scenario, task_id, kind, action
):
    source.settings = json.loads((OWN_SCENARIOS / scenario).read_text())["settings"]
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": "s" * 32}
    source.save()
    load_own(source, scenario)
    client.force_login(acting)
    html = page(client, task_id)
    words = kind_of(kind)
    card = html[html.index(f'<code class="flag-kind">{kind}</code>') :]
    card = card[: card.index("</article>")]
    assert "<strong>Evidence:</strong>" in card
    assert f'<p class="flag-meaning">{escape(words.meaning)}</p>' in card
    assert f"<strong>Suggested:</strong> {escape(words.advice)}" in card
    assert f"advice-{words.action}" in card
    if action is not None:  # the child's run goes on: the cancel is offered, not refused
        assert "Not possible now" not in html
        assert f"{action}…</a>" in html


def test_a_cancel_that_left_only_a_sub_task_and_an_item_names_them_not_nothing(
    client, acting, source
):
    """The child's run has ended but its sub-task and watcher go on: the task's own cancel
    has no run to stop, and the page says what goes on and links the sub-task, whose own
    page can cancel it (it said "there is nothing to cancel" beside the flag saying the
    work goes on: a dead end)."""
    scenario = json.loads((OWN_SCENARIOS / "cancel-not-propagated.json").read_text())
    source.settings = scenario["settings"]
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": "s" * 32}
    source.save()
    ended = {
        "id": "cn-0014",
        "type": "run.finished",
        "at": "2026-11-26T10:08:00.000Z",
        "data": {
            "thread": "thread:cn-child",
            "run": "thread:cn-child~1",
            "status": "cancelled",
            "summary": "",
        },
    }
    apply_events(source, [*scenario["events"], ended])
    evaluate(source.namespace_id, datetime.fromisoformat("2026-11-26T10:10:00+00:00"))
    client.force_login(acting)
    html = page(client, "task:cn")
    assert '<code class="flag-kind">cancel_not_propagated</code>' in html
    assert "there is nothing to cancel" not in html
    sub = Task.objects.get(task_id="task:cn-sub")
    assert f'href="/tasks/{sub.pk}/"' in html
    card = html[html.index('<code class="flag-kind">cancel_not_propagated</code>') :]
    card = card[: card.index("</article>")]
    assert f'<a href="/tasks/{sub.pk}/">' in card, "the flag does not link the sub-task"
    assert "thread:cn-child/watch-tests" in html
    assert "stop it in the orchestrator" in html
