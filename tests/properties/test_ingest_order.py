"""The stored state does not depend on arrival order or repeats (contract §1)."""

import random
import uuid

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from supervisor.core.access.sources import do_create_source
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import (
    BackgroundItem,
    IngestedEvent,
    Run,
    Task,
    TaskReport,
    TaskRequest,
    Thread,
    ToolRejection,
    Wake,
)
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario

# Every scenario, the contract's and the project's own: the arrival-order property of
# detection (tests/properties/test_detection_order.py) judges fewer arrivals because this
# one holds the stored state to every scenario in many.
SCENARIOS = {
    path.stem: load_scenario(path)["events"] for path in [*CONTRACT_SCENARIOS, *OWN_SCENARIOS]
}
# Shuffled arrivals, with repeats and batches of random sizes, for each scenario.
ARRIVALS = 6


# Times on Supervisor's own clock: when things arrived and were evaluated, not what happened.
BOOKKEEPING = {"last_event_at", "evaluated_at", "next_check_at"}


def canonical_dump(namespace_id: int) -> dict:
    """The stored state by natural keys: no surrogate ids, arrival times or change log."""

    def rows(model, key, exclude=(), **related):
        fields = [
            f.name
            for f in model._meta.concrete_fields
            if not f.primary_key
            and f.name not in {"namespace", "source", *BOOKKEEPING, *exclude, *related}
        ]
        out = {}
        for row in model.objects.filter(namespace_id=namespace_id):
            values = {name: getattr(row, name) for name in fields}
            for name, attr in related.items():
                target = getattr(row, name)
                values[name] = getattr(target, attr) if target else None
            out[getattr(row, key)] = values
        return out

    reports = sorted(
        (
            r.task.task_id,
            r.event_id,
            r.at,
            r.status,
            r.work_state,
            r.summary,
            r.result_run_id,
            r.error,
            r.pending_child_runs,
        )
        for r in TaskReport.objects.filter(task__namespace_id=namespace_id).select_related("task")
    )
    rejections = sorted(
        (r.event_id, r.thread.thread_id, r.at, r.tool, r.code, r.message, r.caller)
        for r in ToolRejection.objects.filter(namespace_id=namespace_id).select_related("thread")
    )
    requests = sorted(
        (
            r.event_id,
            r.parent_thread.thread_id,
            r.at,
            r.client_request_id,
            r.parent_run,
            r.title,
            r.env,
            r.answered,
        )
        for r in TaskRequest.objects.filter(namespace_id=namespace_id).select_related(
            "parent_thread"
        )
    )
    events = sorted(
        (e.event_id, e.type, e.at, e.env, repr(e.data))
        for e in IngestedEvent.objects.filter(source__namespace_id=namespace_id)
    )
    return {
        "threads": rows(Thread, "thread_id"),
        "tasks": rows(Task, "task_id", parent_thread="thread_id", child_thread="thread_id"),
        "runs": rows(Run, "run_id", thread="thread_id"),
        "items": rows(BackgroundItem, "item_id", thread="thread_id"),
        "wakes": rows(Wake, "wake_id", thread="thread_id"),
        "reports": reports,
        "rejections": rejections,
        "requests": requests,
        "events": events,
    }


def answers_as_rebuilt(namespace_id: int) -> dict[str, bool]:
    """Each task request (by event id) answered or not, worked out again from the stored
    tasks: what ingest keeps in `TaskRequest.answered` must equal it."""
    delegated = set(
        Task.objects.filter(namespace_id=namespace_id, known=True).values_list(
            "parent_thread_id", "client_request_id"
        )
    )
    return {
        r.event_id: (r.parent_thread_id, r.client_request_id) in delegated
        for r in TaskRequest.objects.filter(namespace_id=namespace_id)
    }


def ingest(events, batch_sizes=(1,)) -> dict:
    source, _ = do_create_source(f"s-{uuid.uuid4()}")
    position, turn = 0, 0
    while position < len(events):
        size = batch_sizes[turn % len(batch_sizes)]
        apply_events(source, events[position : position + size])
        position, turn = position + size, turn + 1
    dump = canonical_dump(source.namespace_id)
    # The kept answers are a rebuild's, in every arrival this module makes.
    kept = {event_id: answered for event_id, *_, answered in dump["requests"]}
    assert kept == answers_as_rebuilt(source.namespace_id)
    return dump


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_reversed_arrival_gives_the_same_state(name):
    events = SCENARIOS[name]
    assert ingest(list(reversed(events))) == ingest(events)


@pytest.mark.django_db
def test_canonical_dump_sees_a_changed_value():
    # Guard for the property below: the dump must notice when content differs.
    events = SCENARIOS["seed000-stale-finalize"]
    changed = [dict(e) for e in events]
    changed[11] = {**changed[11], "data": {**changed[11]["data"], "summary": "other"}}
    assert ingest(changed) != ingest(events)


def random_arrivals(name: str) -> list[tuple[list, tuple]]:
    """ARRIVALS shuffles of a scenario's events, each with up to as many repeats again
    inserted anywhere, in batches of random sizes; reproducible by the scenario's name."""
    events = SCENARIOS[name]
    rng = random.Random(name)
    arrivals = []
    for _ in range(ARRIVALS):
        arrived = rng.sample(events, len(events))
        for _ in range(rng.randrange(len(events) + 1)):
            arrived.insert(rng.randrange(len(arrived) + 1), rng.choice(events))
        sizes = tuple(rng.randint(1, 7) for _ in range(rng.randint(1, 4)))
        arrivals.append((arrived, sizes))
    return arrivals


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_random_arrivals_with_repeats_give_the_same_state(name):
    expected = ingest(SCENARIOS[name])
    for trial, (arrived, sizes) in enumerate(random_arrivals(name)):
        assert ingest(arrived, sizes) == expected, (
            f"trial {trial}: {[e.get('id') for e in arrived]}"
        )


@st.composite
def arrivals(draw):
    name = draw(st.sampled_from(sorted(SCENARIOS)))
    events = SCENARIOS[name]
    order = draw(st.permutations(range(len(events))))
    repeats = draw(st.lists(st.integers(0, len(events) - 1), max_size=len(events)))
    arrived = [events[i] for i in order]
    for index in repeats:
        arrived.insert(draw(st.integers(0, len(arrived))), events[index])
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4))
    return name, arrived, tuple(sizes)


@pytest.mark.django_db
@hypothesis_settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(arrivals())
def test_any_order_with_repeats_gives_the_same_state(arrival):
    name, arrived, sizes = arrival
    assert ingest(arrived, sizes) == ingest(SCENARIOS[name])


@pytest.mark.django_db
def test_canonical_dump_sees_a_changed_task_request():
    events = SCENARIOS["delegation-never-started"]
    index = next(i for i, e in enumerate(events) if e["type"] == "task.requested")
    changed = [dict(e) for e in events]
    changed[index] = {**changed[index], "data": {**changed[index]["data"], "title": "other"}}
    assert ingest(changed)["requests"] != ingest(events)["requests"]
