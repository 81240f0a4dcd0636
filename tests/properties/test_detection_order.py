"""Which flags are open at the end depends on the events and the clock, never on their
arrival order (contract §5, §7); and each flag depends on the events its evidence names."""

import random
from dataclasses import replace

import pytest

from supervisor.core.detection.scenario import Scenario, ThrowAwayStore, differences, replay
from supervisor.core.models import Flag
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS

SCENARIOS = {path.stem: Scenario.load(path) for path in [*CONTRACT_SCENARIOS, *OWN_SCENARIOS]}
# How many random arrivals (shuffled, with repeats) each scenario is judged in. The stored
# state's independence of arrival order is held over every scenario, in many more
# orders, by the cheaper ingest property (tests/properties/test_ingest_order.py): what is
# judged here is detection on the way there, whose flags open and resolve as events
# arrive, which eight arrivals of each scenario judge.
PERMUTATIONS = 8
SERVICE = 4  # of them judged as the service judges too (a replay there costs half as much again)

# The module runs on a throw-away in-memory SQLite store whatever DATABASE_URL names, so
# CI's service run would repeat the embedded run exactly: it leaves it out (.ci/run).
pytestmark = [pytest.mark.slow, pytest.mark.own_store]


@pytest.fixture(scope="module")
def store(django_db_blocker):
    """The throw-away store, and the judgements made on it so far: each arrival is judged
    once for every test of this module that runs in this process (a parallel run keeps a
    scenario's tests in one process: see `by_scenario`)."""
    with django_db_blocker.unblock(), ThrowAwayStore() as store:
        store.judged = {}
        yield store


def by_scenario() -> list:
    """The scenario names, each test of a scenario in the same worker of a parallel run,
    so that its arrivals are judged once."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(name)) for name in sorted(SCENARIOS)]


def judge(store, scenario: Scenario, events: list, *, as_service: bool = False) -> tuple:
    """Replay one arrival: (the result object, the open flags' evidence by (subject type,
    subject id, kind)). A replay is deterministic, so an arrival the tests judge more than
    once (the file order, the reversed one, the random ones the service is held to) is
    replayed once per mode and module, kept by the events' positions in the file."""
    position = {id(event): i for i, event in enumerate(scenario.events)}
    key = (scenario.name, tuple(position[id(e)] for e in events), as_service)
    if key not in store.judged:
        store.reset()
        result = replay(replace(scenario, events=events), as_service=as_service)
        flags = {
            (f.subject_type, f.subject_id, f.kind): f.evidence
            for f in Flag.objects.filter(state=Flag.OPEN, subject_type__in=("task", "thread"))
        }
        store.judged[key] = (result, flags)
    return store.judged[key]


def open_flags(store, scenario: Scenario, events: list) -> dict:
    """(subject type, subject id, kind) -> evidence of the flags open at `until`."""
    return judge(store, scenario, events)[1]


def open_kinds(store, scenario, events) -> set:
    return set(open_flags(store, scenario, events))


def wakes_and_reports_first(events: list) -> list:
    first = [e for e in events if e["type"].startswith(("wake.", "task.reported"))]
    return first + [e for e in events if e not in first]


@pytest.mark.parametrize("name", by_scenario())
def test_the_file_order_gives_what_the_scenario_expects(store, name):
    # What `manage.py replay --check` checks of every scenario (tests/ops/test_replay.py
    # runs the command itself on a few), on the replay the properties below share.
    scenario = SCENARIOS[name]
    result = judge(store, scenario, scenario.events)[0]
    assert differences(scenario, result) == []


@pytest.mark.parametrize("name", by_scenario())
def test_reversed_arrival_leaves_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    assert open_kinds(store, scenario, scenario.events[::-1]) == expected


@pytest.mark.parametrize("name", by_scenario())
def test_wakes_and_reports_first_leave_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    assert open_kinds(store, scenario, wakes_and_reports_first(scenario.events)) == expected


def random_arrivals(name: str) -> list[list]:
    """PERMUTATIONS shuffles of a scenario's events, each with up to half as many repeats
    again inserted anywhere; reproducible: a failure names its scenario and trial."""
    scenario = SCENARIOS[name]
    rng = random.Random(name)
    arrivals = []
    for _ in range(PERMUTATIONS):
        events = list(scenario.events)
        rng.shuffle(events)
        for _ in range(rng.randrange(len(events) // 2 + 1)):
            events.insert(rng.randrange(len(events) + 1), rng.choice(scenario.events))
        arrivals.append(events)
    return arrivals


@pytest.mark.parametrize("name", by_scenario())
def test_random_arrivals_with_repeats_leave_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    for trial, events in enumerate(random_arrivals(name)):
        assert open_kinds(store, scenario, events) == expected, f"trial {trial}: {events}"


@pytest.mark.parametrize("name", by_scenario())
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
    return judge(store, scenario, events, as_service=as_service)[0]


@pytest.mark.parametrize("name", by_scenario())
def test_the_service_judges_as_the_whole_namespace_does(store, name):
    # The service evaluates only what a batch touched, and sweeps what is due; replaying
    # that way must raise and leave open exactly what judging everything each time does.
    # The first random arrivals (with repeats) above: their whole-namespace replays are
    # judged once for both tests.
    scenario = SCENARIOS[name]
    arrivals = [scenario.events, scenario.events[::-1], *random_arrivals(name)[:SERVICE]]
    for trial, events in enumerate(arrivals):
        whole = result_of(store, scenario, events, as_service=False)
        service = result_of(store, scenario, events, as_service=True)
        assert service == whole, f"arrival {trial}: {[e['id'] for e in events]}"
