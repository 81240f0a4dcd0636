"""Which flags are open at the end depends on the events and the clock, never on their
arrival order (contract §5, §7); and each flag depends on the events its evidence names."""

import random

import pytest

from supervisor.core.detection.scenario import Scenario, ThrowAwayStore
from tests.support import order_judge
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS

PATHS = {path.stem: str(path) for path in [*CONTRACT_SCENARIOS, *OWN_SCENARIOS]}
SCENARIOS = {name: Scenario.load(path) for name, path in PATHS.items()}
BY_PATH = {PATHS[name]: scenario for name, scenario in SCENARIOS.items()}
PATH_OF = {id(scenario): path for path, scenario in BY_PATH.items()}
PERMUTATIONS = 50

# The module runs on a throw-away in-memory SQLite store whatever DATABASE_URL names, so
# CI's service run would repeat the embedded run exactly: it leaves it out (.ci/run).
pytestmark = [pytest.mark.slow, pytest.mark.own_store]


@pytest.fixture(scope="module")
def store(request, django_db_blocker, tmp_path_factory):
    """The throw-away store, with the arrivals the selected tests will judge judged
    already: half of them by a helper process while this one judges the other half
    (the replays are most of the module's time, and the machine has two cores)."""
    with django_db_blocker.unblock(), ThrowAwayStore() as store:
        store.judged = {}
        jobs = planned(selected_scenarios(request))
        helper = order_judge.Helper(jobs[1::2], tmp_path_factory.mktemp("order"))
        try:
            for job in jobs[0::2]:
                judge_job(store, job)
            store.judged.update(helper.results())
        finally:
            helper.stop()
        yield store


def selected_scenarios(request) -> list[str]:
    names = set()
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.module is request.module and spec is not None and "name" in spec.params:
            names.add(spec.params["name"])
    return sorted(names)


def planned(names: list[str]) -> list[tuple]:
    """The jobs the tests below ask for, but for the evidence tests' (they depend on
    the flags judged first): every arrival of every selected scenario."""
    jobs = []
    for name in names:
        scenario = SCENARIOS[name]
        whole = [
            scenario.events,
            scenario.events[::-1],
            wakes_and_reports_first(scenario.events),
            *random_arrivals(name),
        ]
        service = [scenario.events, scenario.events[::-1], *random_arrivals(name)[:8]]
        jobs += [job_of(scenario, events, as_service=False) for events in whole]
        jobs += [job_of(scenario, events, as_service=True) for events in service]
    return list(dict.fromkeys(jobs))


def job_of(scenario: Scenario, events: list, *, as_service: bool) -> tuple:
    """(scenario path, the arrival as positions in the file, as_service)."""
    position = {id(event): i for i, event in enumerate(scenario.events)}
    return (PATH_OF[id(scenario)], tuple(position[id(e)] for e in events), as_service)


def judge_job(store, job: tuple) -> tuple:
    if job not in store.judged:
        path, positions, as_service = job
        store.judged[job] = order_judge.judge_arrival(
            store, BY_PATH[path], positions, as_service=as_service
        )
    return store.judged[job]


def judge(store, scenario: Scenario, events: list, *, as_service: bool = False) -> tuple:
    """Replay one arrival: (the result object, the open flags' evidence by (subject type,
    subject id, kind)). A replay is deterministic, so an arrival the tests judge more than
    once (the file order, the reversed one, the random ones the service is held to) is
    replayed once per mode and module."""
    return judge_job(store, job_of(scenario, events, as_service=as_service))


def open_flags(store, scenario: Scenario, events: list) -> dict:
    """(subject type, subject id, kind) -> evidence of the flags open at `until`."""
    return judge(store, scenario, events)[1]


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


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_random_arrivals_with_repeats_leave_the_same_flags_open(store, name):
    scenario = SCENARIOS[name]
    expected = open_kinds(store, scenario, scenario.events)
    for trial, events in enumerate(random_arrivals(name)):
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
    return judge(store, scenario, events, as_service=as_service)[0]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_service_judges_as_the_whole_namespace_does(store, name):
    # The service evaluates only what a batch touched, and sweeps what is due; replaying
    # that way must raise and leave open exactly what judging everything each time does.
    # Eight of the random arrivals (with repeats) above: their whole-namespace replays
    # are judged once for both tests.
    scenario = SCENARIOS[name]
    arrivals = [scenario.events, scenario.events[::-1], *random_arrivals(name)[:8]]
    for trial, events in enumerate(arrivals):
        whole = result_of(store, scenario, events, as_service=False)
        service = result_of(store, scenario, events, as_service=True)
        assert service == whole, f"arrival {trial}: {[e['id'] for e in events]}"
