"""`manage.py report`'s audit counts the premature completions the flags raise:
for every scenario, and every T3 history the follower's tests record, whose expected flags
hold a premature completion, the audit's gap finalizations are exactly the tasks with a
premature_completion flag finalized within its window (3 s, seed 000's measure).

The window is read here from the events themselves: the task's first report that says
completed came at most `audit.GAP` before an owned run of its child was requested."""

from __future__ import annotations

import json

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection import audit
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.scenario import Scenario, ThrowAwayStore, replay
from supervisor.core.facts.loader import load_namespace
from supervisor.core.facts.ownership import owned_runs
from supervisor.core.models import Flag
from supervisor.core.rules.premature_completion import KIND, says_completed
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS


def expects_premature(path) -> bool:
    expect = json.loads(path.read_text()).get("expect") or {}
    return any(KIND in kinds for kinds in (expect.get("tasks") or {}).values())


PREMATURE = [p for p in [*CONTRACT_SCENARIOS, *OWN_SCENARIOS] if expects_premature(p)]


def finalized_in_the_window(snap, task) -> bool:
    """The task's first report that says completed came at most GAP before an owned run
    of its child was requested (and not after it)."""
    completed = sorted(
        (r for r in task.reports if says_completed(r)), key=lambda r: (r.at, r.event_id)
    )
    if not completed:
        return False
    at = completed[0].at
    return any(
        run.requested_at is not None and at <= run.requested_at <= at + audit.GAP
        for run in owned_runs(snap, task)
    )


def flagged_in_the_window() -> set[str]:
    """Tasks with a premature_completion flag (open, or resolved since) finalized within
    the window."""
    flagged: dict[int, set[str]] = {}
    for namespace, task in Flag.objects.filter(kind=KIND, subject_type="task").values_list(
        "namespace_id", "subject_id"
    ):
        flagged.setdefault(namespace, set()).add(task)
    found = set()
    for namespace, tasks in flagged.items():
        snap = load_namespace(namespace)
        found |= {t for t in tasks if finalized_in_the_window(snap, snap.tasks[t])}
    return found


def counted() -> set[str]:
    return {ref.task for ref in audit.audit().gap_finalizations}


@pytest.fixture(scope="module")
def store(django_db_blocker):
    with django_db_blocker.unblock(), ThrowAwayStore() as store:
        yield store


def test_some_scenarios_have_a_premature_completion():
    assert len(PREMATURE) >= 8, PREMATURE


@pytest.mark.own_store
@pytest.mark.parametrize("path", PREMATURE, ids=lambda p: p.stem)
def test_the_audit_counts_the_premature_completions_finalized_in_its_window(store, path):
    store.reset()
    replay(Scenario.load(path))
    flagged = flagged_in_the_window()
    assert counted() == flagged, f"the audit counts {len(counted())}, the flags {len(flagged)}"


T3_HISTORIES = ["seed000", "seed001"]  # tests/support/t3/timelines.py's, whose scenarios expect one


@pytest.mark.django_db
@pytest.mark.parametrize("name", T3_HISTORIES)
def test_so_it_does_on_the_t3_histories(tmp_path, name):
    from supervisor.connectors.t3code.follower import Follower
    from tests.support.t3.statedb import FakeT3
    from tests.support.t3.timelines import TIMELINES

    timeline = TIMELINES[name]
    assert expects_premature(timeline.scenario)
    t3 = FakeT3(tmp_path / "statev2.sqlite")
    timeline.write(t3)
    t3.close()
    source, _ = do_create_source("t3-origin", scopes="ingest,read")
    follower = Follower(source, str(tmp_path / "statev2.sqlite"), evaluate=False, start="log")
    follower.follow()
    until = Scenario.load(timeline.scenario).until
    with clock.virtual_clock(until):
        evaluate(source.namespace_id, until)
    assert Flag.objects.filter(kind=KIND).exists(), "the history's premature completion"
    assert counted() == flagged_in_the_window()
