"""The task page of the failure kinds: a success hiding a failure, and an account limit
with the offer to snooze its flag until the limit resets."""

from datetime import UTC, datetime

import pytest

from supervisor.core import clock
from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Flag, Task
from tests.support.scenarios import load_own

pytestmark = pytest.mark.django_db

# The account-limit scenario's end: al-usage's limit ("resets 5pm") resets at 17:00 UTC.
UNTIL = datetime(2026, 11, 25, 14, 20, tzinfo=UTC)


@pytest.fixture
def limits(source):
    with clock.virtual_clock(UNTIL):
        load_own(source, "account-limit.json")
        yield


def page(client, task_id: str) -> str:
    task = Task.objects.get(task_id=task_id)
    return client.get(f"/tasks/{task.pk}/").content.decode()


def flag_card(html: str, kind: str) -> str:
    card = html[html.index(f'<code class="flag-kind">{kind}</code>') :]
    return card[: card.index("</article>")]


def test_an_account_limit_shows_its_evidence_meaning_advice_and_reset(client, acting, limits):
    client.force_login(acting)
    html = page(client, "task:al-usage")
    words = kind_of("account_limit")
    card = flag_card(html, "account_limit")
    assert words.meaning in card
    assert f"<strong>Suggested:</strong> {words.advice}" in card
    assert "the limit resets at 2026-11-25 17:00 UTC" in card
    assert '<input type="hidden" name="until" value="2026-11-25T17:00">' in card
    assert "Snooze until the reset" in card


def test_the_snooze_until_the_reset_snoozes_the_flag_until_then(client, acting, limits):
    client.force_login(acting)
    flag = Flag.objects.get(kind="account_limit", subject_id="task:al-usage")
    response = client.post(
        f"/flags/{flag.pk}/", {"action": "snooze", "for": "until", "until": "2026-11-25T17:00"}
    )
    assert response.status_code == 302
    flag.refresh_from_db()
    assert flag.snoozed_until == datetime(2026, 11, 25, 17, 0, tzinfo=UTC)
    # Snoozed, the offer is still there (the snooze may be changed), the flag still open.
    assert flag.state == Flag.OPEN


def test_continue_is_not_suggested_before_the_reset(client, acting, source, limits):
    # A connector bound, so that only the reset holds the continue back.
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/hook", "secret": "s" * 16}
    source.save()
    client.force_login(acting)
    html = page(client, "task:al-usage")
    assert "Continue the child: not now" in html
    assert "limit resets at 2026-11-25 17:00 UTC, and a continue before then fails again" in html
    with clock.virtual_clock(datetime(2026, 11, 25, 17, 1, tzinfo=UTC)):
        html = page(client, "task:al-usage")
    assert "Continue the child: not now" not in html
    suggested = html[html.index('<section id="actions"') :]
    suggested = suggested[: suggested.index('<details class="other-actions"')]
    assert "Continue the child" in suggested


def test_no_reset_offer_when_the_text_names_no_reset(client, acting, limits):
    client.force_login(acting)
    assert "account_limit</code>" in page(client, "task:al-quota")
    assert "Snooze until the reset" not in page(client, "task:al-quota")


def test_no_reset_offer_to_a_viewer(client, viewer, limits):
    client.force_login(viewer)
    html = page(client, "task:al-usage")
    assert "the limit resets at 2026-11-25 17:00 UTC" in html
    assert "Snooze until the reset" not in html


def test_no_reset_offer_once_the_reset_has_passed(client, acting, limits):
    client.force_login(acting)
    with clock.virtual_clock(datetime(2026, 11, 25, 17, 0, tzinfo=UTC)):
        assert "Snooze until the reset" not in page(client, "task:al-usage")


def test_a_success_hiding_a_failure_is_a_critical_problem_that_suggests_continue(
    client, acting, source
):
    load_own(source, "completed-on-failure.json")
    client.force_login(acting)
    html = page(client, "task:cof-int")
    words = kind_of("completed_on_failure")
    card = flag_card(html, "completed_on_failure")
    assert words.meaning in card
    assert "run 1, its result run, finished interrupted" in card
    assert f"<strong>Suggested:</strong> {words.advice}" in card
    assert 'Problem: <span class="severity severity-critical">critical</span>' in html
    actions = html[html.index('<section id="actions"') :]
    suggested = actions[: actions.index('<details class="other-actions"')]
    assert '<p class="suggested-action' in suggested and "Continue the child" in suggested
