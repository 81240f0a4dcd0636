"""The demo fleet (`make run`): its opening makes every task and thread kind of contract
§5 open within the first five minutes, deterministically; an orchestrator shutting
down (interrupt_all) leaves no unfinished work to flag; and its episodes agree with the
flag catalogue."""

from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

import pytest

from supervisor.core.detection.scenario import Scenario, ThrowAwayStore, replay
from supervisor.core.facts.snapshot import DetectionSettings
from supervisor.core.flags.kinds import CATALOGUE
from supervisor.core.models import Flag
from supervisor.core.rules import RULES
from supervisor.demo.fleet import (
    DEMO_DETECTION,
    DEMO_DURATIONS,
    DEMO_OPENING,
    DEMO_RATE,
    FAILURES,
    Fleet,
)
from supervisor.demo.fleet.episodes import EPISODES, kinds_shown, mismatches
from supervisor.demo.fleet.episodes.healthy import simple
from supervisor.demo.fleet.records import Episode, failing

pytestmark = pytest.mark.slow

# Every task and thread kind (tests/core/rules/test_registry.py pins the list);
# source_silent comes from the runner withholding events.
TASK_AND_THREAD_KINDS = {rule.KIND for rule in RULES}
FIVE_MINUTES = 300.0


@pytest.fixture(scope="module")
def store(django_db_blocker):
    """The demo is `make run`'s, on the embedded defaults: its replays run on a
    throw-away in-memory store whatever DATABASE_URL names (own_store: CI's service run
    leaves them out rather than repeat them), each test on a fresh copy."""
    with django_db_blocker.unblock(), ThrowAwayStore() as store:
        yield store


def demo_fleet(seed: int, **more) -> Fleet:
    return Fleet(
        seed,
        rate=DEMO_RATE,
        opening=DEMO_OPENING,
        durations=DEMO_DURATIONS,
        settings=DetectionSettings.from_overrides(DEMO_DETECTION),
        failure_rate=0.2,
        **more,
    )


def take_until(stream, seconds: float) -> list[tuple[float, dict]]:
    """(virtual seconds, event) up to `seconds`, and the first one after them."""
    taken = []
    for at, event in stream:
        taken.append((at, event))
        if at > seconds:
            break
    return taken


def replayed(fleet: Fleet, events: list[dict], seconds: float) -> dict:
    scenario = Scenario(
        name=f"demo-{fleet.seed}",
        events=events,
        settings=dict(DEMO_DETECTION),
        until=fleet.start + timedelta(seconds=seconds),
        expect=None,
        expect_open=None,
    )
    return replay(scenario)


@pytest.mark.own_store
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_demo_opens_every_task_and_thread_kind_within_five_minutes(store, seed):
    """Only the events of the first five minutes, judged at five minutes after the start:
    the opening's timings leave room for the remote clocks' skew (up to 4 s)."""
    store.reset()
    fleet = demo_fleet(seed)
    taken = take_until(fleet.events(), FIVE_MINUTES)
    events = [event for at, event in taken if at <= FIVE_MINUTES]
    result = replayed(fleet, events, FIVE_MINUTES)
    raised = {
        kind
        for group in ("tasks", "threads")
        for r in result[group].values()
        for kind in r["raised"]
    }
    assert raised == TASK_AND_THREAD_KINDS
    # When each kind first opened: the latest well inside the five minutes.
    opened = {
        kind: (at - fleet.start).total_seconds()
        for kind, at in Flag.objects.order_by("-opened_at").values_list("kind", "opened_at")
    }
    assert max(opened.values()) <= FIVE_MINUTES - 30, opened
    # Healthy tasks flag nothing; failing ones only what they carry.
    for task in fleet.tasks:
        allowed = {*task.expected_flags, *task.passing_flags}
        assert set(result["tasks"].get(task.task, {}).get("raised", [])) <= allowed, task
    for thread, r in result["threads"].items():
        assert set(r["raised"]) <= set(fleet.thread_flags.get(thread, ())), thread


def test_an_opening_and_durations_are_deterministic_and_checked():
    def run(seed: int) -> tuple[list, dict]:
        fleet = demo_fleet(seed, tasks=16)
        return list(fleet.events()), fleet.manifest()

    assert run(21) == run(21)
    assert run(21)[0] != run(22)[0]
    # The opening's failures are carried whatever failure_rate says, each once.
    scripted = Fleet(21, tasks=20, failure_rate=0.0, opening=DEMO_OPENING)
    list(scripted.events())
    carried = Counter(t.failure for t in scripted.tasks if t.failure)
    assert carried == Counter(DEMO_OPENING)
    assert set(DEMO_OPENING) == set(FAILURES)
    # Shorter durations: the same episodes end sooner.
    slow = Fleet(21, tasks=12, opening=[None, "stuck", None])
    fast = Fleet(21, tasks=12, opening=[None, "stuck", None], durations=0.25)
    assert list(fast.events())[-1][0] < list(slow.events())[-1][0]
    with pytest.raises(ValueError, match="stuk"):
        Fleet(1, opening=["stuck", "stuk"])
    with pytest.raises(ValueError, match="durations"):
        Fleet(1, durations=0)


@pytest.mark.own_store
@pytest.mark.parametrize("seed, cut", [(8, 120), (9, 400)])
def test_interrupt_all_leaves_no_unfinished_work_to_flag(store, seed, cut):
    """Cut before the hang is due (120 s) and after the stuck flag opened (400 s)."""
    store.reset()
    fleet = demo_fleet(seed)
    stream = fleet.events()
    events = [event for _, event in take_until(stream, cut)]
    stuck = next(t for t in fleet.tasks if t.failure == "stuck")
    assert stuck.report == "running"
    with fleet.lock:
        assert any(state.active for state in fleet.threads.values())
    interrupted = fleet.interrupt_all()
    assert interrupted and fleet.finished and next(stream, None) is None
    assert not any(state.active for state in fleet.threads.values())
    finished = [e for e in interrupted if e["type"] == "run.finished"]
    assert finished and {e["data"]["status"] for e in finished} == {"interrupted"}
    reports = {e["data"]["task"] for e in interrupted if e["type"] == "task.reported"}
    assert stuck.task in reports
    # cancelled: the failure whose cancel never reached its child (cancel_not_propagated).
    settled = ("completed", "failed", "interrupted", "cancelled")
    assert all(t.report in settled for t in fleet.tasks)
    # Long after, with every detection duration passed: nothing unfinished is flagged.
    result = replayed(fleet, events + interrupted, cut + 400)
    for task in fleet.tasks:
        if task.failure is None:
            assert result["tasks"][task.task]["raised"] == [], task
    assert result["tasks"][stuck.task]["open"] == []
    assert result["tasks"][stuck.task]["raised"] == (["stuck"] if cut > 300 else [])


def test_the_episodes_and_the_flag_catalogue_agree():
    """Each task and thread kind has an episode that shows it (source_silent comes from
    the runner's outage), each episode's kinds are the catalogue's, and no failure or
    shape is claimed twice: a new kind adds a rule and an episode beside it."""
    assert mismatches(CATALOGUE) == []
    shown = {kind for module in EPISODES for kind in kinds_shown(module.EPISODE)}
    assert shown == TASK_AND_THREAD_KINDS


def test_the_episodes_check_finds_what_disagrees():
    """The check above can fail: a kind left without its episode, a failure claimed
    twice, a kind the catalogue lacks, a healthy shape that flags, no coroutine."""

    def module(name, episode, **coroutine):
        return SimpleNamespace(__name__=f"episodes.{name}", EPISODE=episode, **coroutine)

    without = [m for m in EPISODES if m.EPISODE.failure != "account_limit"]
    assert mismatches(CATALOGUE, without) == ["account_limit has no episode"]

    again = failing("stuck", opens=("stuck", "stuk"), paired=False, remote_only=False)
    flagging = Episode("quiet", opens=("stuck",))  # healthy (no failure), yet it flags
    assert mismatches(
        CATALOGUE,
        [*EPISODES, module("again", again, flow=simple.flow), module("quiet", flagging)],
    ) == [
        "again and stuck both claim 'stuck'",
        "again claims ['stuk'], not in the catalogue",
        "quiet is healthy yet opens ['stuck']",
        "quiet has no coroutine: `flow` or `after_turn`",
    ]
