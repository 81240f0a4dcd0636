"""misrouted_wake on the task page: its meaning, evidence naming the thread the wake went
to and the parent, the suggested action (Deliver) and what a delivery would answer."""

import json
from datetime import UTC, datetime

import pytest
from django.utils.html import escape

from supervisor.core.actions import outcomes as action_outcomes
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.facts import ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.flags.kinds import kind_of
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task
from tests.support.scenarios import OWN_DIR as OWN_SCENARIOS
from tests.support.scenarios import load_own

pytestmark = pytest.mark.django_db

WORDS = kind_of("misrouted_wake")


@pytest.fixture
def misrouted(source):
    return load_own(source, "misrouted-wake.json")


def page(client, task_id: str) -> str:
    task = Task.objects.get(task_id=task_id)
    return client.get(f"/tasks/{task.pk}/").content.decode()


def test_the_flag_card_has_its_meaning_evidence_and_suggested_action(client, viewer, misrouted):
    client.force_login(viewer)
    html = page(client, "task:migrate")
    card = html[html.index('<code class="flag-kind">misrouted_wake</code>') :]
    card = card[: card.index("</article>")]
    assert escape(WORDS.meaning) in card
    evidence = card[card.index("<strong>Evidence:</strong>") :]
    assert "thread:docs:wake:1" in evidence and "thread:docs" in evidence
    assert "its parent thread thread:lead-release" in evidence
    assert f"<strong>Suggested:</strong> {escape(WORDS.advice)}" in card
    # The page's reading agrees: the latest result has not reached the parent.
    assert "it has not reached the parent" in html


def test_the_suggested_action_is_deliver_and_a_delivery_answers_it(client, acting, misrouted):
    client.force_login(acting)
    html = page(client, "task:migrate")
    actions_html = html[html.index('id="actions"') :]
    # No connector is bound here: Deliver is suggested for this flag, and says why not now.
    assert (
        '<strong>Deliver the latest result: not now</strong> <span class="muted">'
        "(Wake sent to the wrong thread)</span>" in actions_html
    )
    task = Task.objects.get(task_id="task:migrate")
    snap = load_for_task(task)
    view = snap.tasks[task.task_id]
    latest = ownership.latest_result_run(snap, view)
    answers, stays = action_outcomes.outcomes(snap, view, "deliver", ["misrouted_wake"], latest.id)
    assert answers == [("misrouted_wake", answers[0][1])] and stays == []
    assert "the latest result reaches the parent" in answers[0][1]


def test_a_delivery_by_hand_resolves_it_and_the_page_says_so(client, viewer, source):
    scenario = json.loads((OWN_SCENARIOS / "misrouted-wake.json").read_text())
    by_hand = [e for e in scenario["events"] if "manual-1" in e["data"].get("wake", "")]
    apply_events(source, [e for e in scenario["events"] if e not in by_hand])
    evaluate(source.namespace_id, datetime(2026, 12, 2, 14, 5, tzinfo=UTC))
    flag = Flag.objects.get(kind="misrouted_wake", subject_id="task:bench")
    assert flag.state == Flag.OPEN
    apply_events(source, by_hand)
    evaluate(source.namespace_id, datetime(2026, 12, 2, 14, 10, tzinfo=UTC))
    flag.refresh_from_db()
    assert flag.state == Flag.RESOLVED
    client.force_login(viewer)
    html = page(client, "task:bench")
    card = html[html.index('<code class="flag-kind">misrouted_wake</code>') :]
    assert "brought the latest result to the parent" in card[: card.index("</article>")]
