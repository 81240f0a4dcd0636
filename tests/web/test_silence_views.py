"""The silences page: everyone signed in reads it, operators create, edit and end
silences (bad input is refused naming the field), and the counts on every page agree
that a silenced flag needs no action."""

import re
from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Change, Flag, Silence, Task
from supervisor.core.triage import silences
from supervisor.core.triage.silences import do_create_silence
from supervisor.web.pages.live import open_flag_count
from supervisor.web.pages.overview import overview_context
from supervisor.web.pages.task_list import task_list_context
from tests.support.cast import ANONYMOUS, OPERATOR, VIEWER, login_as
from tests.support.factories import make_tasks
from tests.web.pages.test_queries import lead_thread, queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def flagged(source):
    """Two tasks, "Task 0" stuck and "Task 1" with a stale result."""
    make_tasks(source, 2)
    now = clock.now()
    stuck = do_open_flag(source.namespace_id, Finding("stuck", "task", "task:t0"), now)
    stale = do_open_flag(source.namespace_id, Finding("stale_result", "task", "task:t1"), now)
    return stuck, stale


def form(**fields) -> dict:
    return {"reason": "deploy in progress", "for": "4h"} | fields


def make_silence(**matchers) -> Silence:
    now = clock.now()
    return do_create_silence(
        **matchers, reason="deploy in progress", ends_at=now + timedelta(hours=1), now=now
    )


def test_the_navigation_links_the_silences_page(client):
    login_as(client, VIEWER)
    html = client.get("/").content.decode()
    assert 'href="/silences/"' in html


def test_a_stranger_is_sent_to_log_in(client):
    response = client.get("/silences/")
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_a_viewer_reads_the_list_but_has_no_forms(client, flagged):
    made = make_silence(kinds=["stuck"])
    login_as(client, VIEWER)
    html = client.get("/silences/").content.decode()
    assert "deploy in progress" in html and f"/silences/{made.pk}/" in html
    assert 'action="/silences/new/"' not in html and "/end/" not in html
    detail = client.get(f"/silences/{made.pk}/").content.decode()
    assert 'method="post"' not in detail.split("</header>", 1)[1] and "deploy in progress" in detail


@pytest.mark.parametrize("role", [ANONYMOUS, VIEWER])
def test_only_an_operator_may_write(client, flagged, role):
    made = make_silence(kinds=["stuck"])
    login_as(client, role)
    answers = [
        client.post("/silences/new/", form(kinds=["stuck"])),
        client.post(f"/silences/{made.pk}/", form(kinds=["stale_result"])),
        client.post(f"/silences/{made.pk}/end/"),
    ]
    expected = 302 if role == ANONYMOUS else 403
    assert [a.status_code for a in answers] == [expected] * 3
    made.refresh_from_db()
    assert Silence.objects.count() == 1 and made.kinds == ["stuck"] and made.ended_at is None


def test_an_operator_creates_a_silence_and_it_is_audited(client, flagged):
    user = login_as(client, OPERATOR)
    response = client.post(
        "/silences/new/",
        form(kinds=["stuck"], sources="", environments="", title_words="task 0"),
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/silences/"
    made = Silence.objects.get()
    assert made.kinds == ["stuck"] and made.title_words == ["task", "0"]
    assert made.created_by == user
    hours = (made.ends_at - clock.now()).total_seconds() / 3600
    assert 3.9 < hours <= 4
    change = Change.objects.get(kind="silence.created")
    assert change.payload["actor"] == f"user:{user.get_username()}"
    audit = client.get("/audit/?kind=silences").content.decode()
    assert "Created silence" in audit and f"/silences/{made.pk}/" in audit


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({}, "Matchers: set at least one"),
        ({"kinds": ["nope"]}, "Flag kinds: nope is no flag kind."),
        ({"kinds": ["stuck"], "sources": "ghost"}, "Sources: no source is named ghost."),
        ({"kinds": ["stuck"], "reason": ""}, "Reason: say why these flags are silenced."),
        ({"kinds": ["stuck"], "for": "ever"}, "Silence for: choose a length"),
        ({"kinds": ["stuck"], "for": "until", "until": "soon"}, "Until: give the time"),
        ({"kinds": ["stuck"], "for": "until", "until": "2001-01-01T00:00"}, "has passed"),
    ],
)
def test_bad_input_is_refused_naming_the_field(client, flagged, fields, words):
    login_as(client, OPERATOR)
    response = client.post("/silences/new/", form() | fields)
    assert response.status_code == 400
    assert words in response.content.decode()
    assert not Silence.objects.exists()


def test_longer_than_30_days_is_refused(client, flagged):
    login_as(client, OPERATOR)
    until = (clock.now() + timedelta(days=31)).strftime("%Y-%m-%dT%H:%M")
    response = client.post("/silences/new/", form(kinds=["stuck"], until=until) | {"for": "until"})
    assert response.status_code == 400
    assert "Until: a silence lasts at most 30 days" in response.content.decode()


def test_an_operator_edits_an_active_silence_and_saving_it_unchanged_changes_nothing(
    client, flagged
):
    made = make_silence(kinds=["stuck"])
    login_as(client, OPERATOR)
    page = client.get(f"/silences/{made.pk}/").content.decode()
    until = re.search(r'name="until" value="([^"]+)"', page).group(1)
    unchanged = form(kinds=["stuck"]) | {"for": "until", "until": until}
    assert client.post(f"/silences/{made.pk}/", unchanged).status_code == 302
    assert not Change.objects.filter(kind="silence.edited").exists()
    assert (
        client.post(f"/silences/{made.pk}/", unchanged | {"kinds": ["stale_result"]}).status_code
        == 302
    )
    made.refresh_from_db()
    assert made.kinds == ["stale_result"]
    assert Change.objects.get(kind="silence.edited").payload["changed"] == ["kinds"]


def test_ending_a_silence_early_brings_its_flags_back_and_twice_is_once(client, flagged):
    made = make_silence(kinds=["stuck"])
    assert open_flag_count() == 1
    login_as(client, OPERATOR)
    client.post(f"/silences/{made.pk}/end/")
    client.post(f"/silences/{made.pk}/end/")
    assert Change.objects.filter(kind="silence.ended").count() == 1
    assert open_flag_count() == 2
    html = client.get("/silences/").content.decode()
    assert "ended early by as-operator" in html


def test_every_count_agrees_that_a_silenced_flag_needs_no_action(client, flagged):
    stuck, _ = flagged
    make_silence(kinds=["stuck"])
    login_as(client, VIEWER)
    overview = overview_context(False)
    assert overview["total_open"] == 1 == open_flag_count()
    assert sum(row["n"] for row in overview["by_env"]) == 1
    assert [t.task_id for t in (r["task"] for r in overview["needing"])] == ["task:t1"]
    assert overview["taken_up_count"] == 1 and overview["taken_up"][0].pk == stuck.pk
    html = client.get("/").content.decode()
    assert "1 open flag awaiting attention" in html
    assert "Silenced by" in html
    assert "?n=1" in html  # the favicon's count
    rows = {r["task"].task_id: r["problem"] for r in task_list_context({})["rows"]}
    assert rows["task:t0"].taken_up and not rows["task:t1"].taken_up
    assert Flag.objects.get(pk=stuck.pk).state == Flag.OPEN


def test_the_task_page_says_which_silence_holds_a_flag_and_until_when(client, flagged):
    made = make_silence(kinds=["stuck"])
    login_as(client, VIEWER)
    task = Task.objects.get(task_id="task:t0")
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    assert f'Silenced by <a href="/silences/{made.pk}/"' in html
    assert "deploy in progress</a> until" in html
    assert "acknowledged, snoozed or silenced" in html
    other = Task.objects.get(task_id="task:t1")
    assert "Silenced by" not in client.get(f"/tasks/{other.pk}/").content.decode()


@pytest.mark.parametrize("path", ["/", "/tasks/", "/silences/", lead_thread])
def test_with_silences_the_query_count_grows_with_neither_tasks_nor_silences(
    client, viewer, source, path
):
    """The active silences are read once a page and matched by the database."""
    client.force_login(viewer)
    make_silence(kinds=["stuck"], title_words=["sub"])
    make_silence(environments=["default"], sources=[source.name])
    few = queries(client, source, 2, path)
    assert few == queries(client, source, 40, path)
    for n in range(5):
        make_silence(title_words=[f"task{n}"])
    # 41: another prefix, as the events of one already seen would be ignored.
    assert queries(client, source, 41, path) == few
    assert Flag.objects.filter(silences.quiet(clock.now())).exists()
