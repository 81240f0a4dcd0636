"""The task page never says a result reached the parent where an open delivery flag says
it did not, and the reverse: over every scenario, in file order,
reversed, and over fuzzed histories (shuffled arrivals cut short, with repeats)."""

import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from supervisor.core.detection.scenario import Scenario, ThrowAwayStore, replay
from supervisor.core.models import Flag, Task
from supervisor.notify import content
from supervisor.web.fragments import _render
from supervisor.web.pages.task_detail import task_detail_context
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS

SCENARIOS = {path.stem: Scenario.load(path) for path in [*CONTRACT_SCENARIOS, *OWN_SCENARIOS]}
# The kinds whose evidence says the latest result has not reached the parent.
SAYS_NOT_REACHED = {"stale_result", "undelivered_result", "never_delivered", "misrouted_wake"}
NOT_REACHED_WORDS = "has not reached the parent"

pytestmark = pytest.mark.own_store


@pytest.fixture(scope="module")
def store(django_db_blocker):
    with django_db_blocker.unblock(), ThrowAwayStore() as store:
        yield store


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def panels(task: Task) -> dict:
    """What the task page's two panels say, as an operator reads them."""
    html = _render("web/task_detail.html#results", task_detail_context(task, can_act=False))
    given_html, _, latest_html = html.partition('<div class="card latest">')
    latest_html = latest_html.split('<div class="card diff">')[0]
    latest = _text(latest_html)
    return {
        "given_same": "same as the latest result" in _text(given_html),
        "given_nothing": "Nothing has reached the parent yet" in _text(given_html),
        "latest_reached": (
            False
            if "it has not reached the parent" in latest
            else True
            if "it has reached the parent" in latest
            else None
        ),
        "diffs": html.count('<div class="card diff">'),
        "html": html,
    }


def contradictions(name: str) -> list[str]:
    """Every place where a task's page and its open delivery flags disagree."""
    found = []
    for task in Task.objects.filter(known=True).order_by("task_id"):
        page = panels(task)
        flags = {
            f.kind: f.evidence
            for f in Flag.objects.filter(
                state=Flag.OPEN, subject_type="task", subject_id=task.task_id
            )
        }
        where = f"{name} {task.task_id} (open: {sorted(flags)})"
        says_not = [k for k in SAYS_NOT_REACHED if k in flags]
        premature = flags.get("premature_completion")
        if premature and NOT_REACHED_WORDS in premature["text"]:
            says_not.append("premature_completion")
        for kind in says_not:
            if page["latest_reached"]:
                found.append(f"{where}: the latest result 'has reached the parent' beside {kind}")
            if page["given_same"]:
                found.append(f"{where}: the parent was given 'the latest result' beside {kind}")
        # The reverse: where the flag's evidence says it reached, the page says so too.
        said = premature.get("latest_reached_parent") if premature else None
        if said is not None and said != page["latest_reached"]:
            found.append(f"{where}: premature_completion's evidence and the page disagree")
        if page["latest_reached"] is False and page["given_same"]:
            found.append(f"{where}: 'same as the latest result' beside 'has not reached'")
        if page["latest_reached"] and page["given_nothing"]:
            found.append(f"{where}: 'Nothing handed' beside 'it has reached the parent'")
        found += _alert_disagrees(task, where, page)
    return found


def _alert_disagrees(task: Task, where: str, page: dict) -> list[str]:
    """An alert on any of the task's open flags says what the page says: whether the
    latest result reached the parent, and what reached it ("nothing", or its text)."""
    found = []
    for flag in Flag.objects.filter(state=Flag.OPEN, subject_type="task", task=task):
        body = content.for_flag(flag).body
        latest = next(line for line in body.splitlines() if line.startswith("Latest result:"))
        given = next(line for line in body.splitlines() if line.startswith("Given to the parent:"))
        said = (
            False
            if NOT_REACHED_WORDS in latest
            else True
            if "has reached the parent" in latest
            else None
        )
        if said != page["latest_reached"]:
            found.append(f"{where}: the {flag.kind} alert's latest result says {latest!r}")
        if page["given_nothing"] != ("nothing has reached the parent" in given):
            found.append(f"{where}: the {flag.kind} alert says {given!r}")
    return found


def replayed(store, scenario: Scenario, events: list) -> str:
    store.reset()
    replay(replace(scenario, events=events))
    return scenario.name


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_page_agrees_with_the_delivery_flags_on_every_scenario(store, name):
    scenario = SCENARIOS[name]
    for events in (scenario.events, scenario.events[::-1]):
        assert contradictions(replayed(store, scenario, events)) == []


@st.composite
def histories(draw):
    """A scenario's events shuffled, cut short anywhere and with repeats: the facts as
    they stand at any moment of any arrival order."""
    name = draw(st.sampled_from(sorted(SCENARIOS)))
    events = SCENARIOS[name].events
    order = draw(st.permutations(range(len(events))))
    kept = draw(st.integers(1, len(events)))
    arrived = [events[i] for i in order[:kept]]
    for index in draw(st.lists(st.integers(0, kept - 1), max_size=3)):
        arrived.insert(draw(st.integers(0, len(arrived))), arrived[index])
    return name, arrived


@hypothesis_settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(histories())
def test_the_page_agrees_with_the_delivery_flags_on_any_history(store, history):
    name, events = history
    assert contradictions(replayed(store, SCENARIOS[name], events)) == []


def test_a_delivery_by_hand_of_the_latest_result_adds_no_diff(store):
    # Its header is not part of what the parent was given: only the stale text differs.
    replayed(store, SCENARIOS["manual-delivery"], SCENARIOS["manual-delivery"].events)
    page = panels(Task.objects.get(task_id="task:suite-run"))
    assert page["latest_reached"] is True
    assert page["diffs"] == 1
    assert "Delivered by hand via Supervisor" not in page["html"].split("card diff")[1]
