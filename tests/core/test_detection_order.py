"""Which flags are open at the end depends on the events and the clock, never on their
arrival order (contract §5, §7); and each flag depends on the events its evidence names."""

import random
from dataclasses import replace

import pytest

from supervisor.core.models import Flag
from supervisor.core.scenario import Scenario, ThrowAwayStore, replay
from tests.conftest import CONTRACT_SCENARIOS, OWN_SCENARIOS

SCENARIOS = {path.stem: Scenario.load(path) for path in [*CONTRACT_SCENARIOS, *OWN_SCENARIOS]}
PERMUTATIONS = 50


@pytest.fixture(scope="module")
def store(django_db_blocker):
    with django_db_blocker.unblock(), ThrowAwayStore() as store:
        yield store


def open_flags(store, scenario: Scenario, events: list) -> dict:
    """(subject type, subject id, kind) -> evidence of the flags open at `until`."""
    store.reset()
    replay(replace(scenario, events=events))
    return {
        (f.subject_type, f.subject_id, f.kind): f.evidence
        for f in Flag.objects.filter(state=Flag.OPEN, subject_type__in=("task", "thread"))
    }


def open_kinds(store, scenario, events) -> set:
    return set(open_flags(store, scenario, events))


def wakes_and_reports_first(events: list) -> list:
    first = [e for e in events if e["type"].startswith(("wake.", "task.reported"))]
    return first + [e for e in events if e not in first]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_reversed_arrival_leaves_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    assert open_kinds(store, scenario, scenario.events[::-1]) == expected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_wakes_and_reports_first_leave_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    assert open_kinds(store, scenario, wakes_and_reports_first(scenario.events)) == expected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_random_arrivals_with_repeats_leave_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    rng = random.Random(name)  # reproducible: a failure names its scenario and trial
    for trial in range(PERMUTATIONS):
        events = list(scenario.events)
        rng.shuffle(events)
        for _ in range(rng.randrange(len(events) // 2 + 1)):
            events.insert(rng.randrange(len(events) + 1), rng.choice(scenario.events))
        assert open_kinds(store, scenario, events) == expected, f"trial {trial}: {events}"


def evidence_cases():
    for name in sorted(SCENARIOS):
        yield pytest.param(name, id=name)


@pytest.mark.parametrize("name", [p.values[0] for p in evidence_cases()])
def test_dropping_an_event_named_as_evidence_changes_the_flag(store, name):
    scenario = SCENARIOS[name]
    flags = open_flags(store, scenario, scenario.events)
    checked = 0
    for key, evidence in flags.items():
        assert evidence.get("events"), f"{key} names no events as evidence"
        assert evidence.get("text"), f"{key} has no words for an operator"
        for event_id in evidence["events"]:
            without = [e for e in scenario.events if e["id"] != event_id]
            after = open_flags(store, scenario, without).get(key)
            same = after is not None and _values(after) == _values(evidence)
            assert not same, f"{key} did not change without {event_id}"
            checked += 1
    expected_open = scenario.expect_open or {}
    if any(kinds for group in expected_open.values() for kinds in group.values()):
        assert checked, "a scenario with open flags checked no evidence"


def _values(evidence: dict) -> dict:
    # The ids are left out: without the dropped event they differ trivially.
    return {k: v for k, v in evidence.items() if k != "events"}


def result_of(store, scenario, events, *, as_service):
    store.reset()
    return replay(replace(scenario, events=events), as_service=as_service)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_service_judges_as_the_whole_namespace_does(store, name):
    # The service evaluates only what a batch touched, and sweeps what is due; replaying
    # that way must raise and leave open exactly what judging everything each time does.
    scenario = SCENARIOS[name]
    rng = random.Random(f"service:{name}")
    arrivals = [scenario.events, scenario.events[::-1]]
    for _ in range(8):
        arrivals.append(rng.sample(scenario.events, len(scenario.events)))
    for trial, events in enumerate(arrivals):
        whole = result_of(store, scenario, events, as_service=False)
        service = result_of(store, scenario, events, as_service=True)
        assert service == whole, f"arrival {trial}: {[e['id'] for e in events]}"
