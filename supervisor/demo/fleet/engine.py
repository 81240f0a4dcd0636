"""A deterministic fleet of orchestrator threads: parents delegating tasks to children,
healthy work mixed with the field reports' failures, as a time-ordered stream of
contract events (event-contract.md §2–3).

`Fleet(seed, ...)` is lazy: `events()` yields `(virtual seconds, event)` in time order,
forever unless `tasks` bounds it, so a runner can pace it. The same seed and parameters
give the same events. Every task the fleet delegates says which failure it carries and
which flag kinds Supervisor must open for it (`expected_flags`, from contract §5); the
flags open by `until` must be exactly those, and the ones raised then resolved before it
its `passing_flags`; the tests hold the fleet to it.

Inside, each task's life is a small coroutine on a virtual clock: it emits events and
yields how long to wait, and a heap runs them in time order. Ordinals are taken when a
run is requested, so answers to actions (`answers.py`) can take the next one in between.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from supervisor.core.snapshot import TERMINAL_STATUSES, DetectionSettings

from .demo import OPENING_SPAN
from .records import ORIGIN_ENV, REMOTE_ENVS, FleetTask, Plan, ThreadState, stamp
from .texts import (
    ACCOUNT_LIMITS,
    ACTIVITY_NOTES,
    PARENT_TITLES,
    PROVIDERS,
    REAL_FAILURES,
    TRANSIENT_ERRORS,
    WORKS,
    Work,
)

DEFAULT_START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

# The failures of the field reports (../shared/seeds), each as the scenarios shape it.
FAILURES = (
    "stale_finalize",  # seed 000: finalized on run 1's interim text before the wake run
    "remote_monitor",  # seed 001: a remote monitor's wake run answers, never the parent
    "transient_failure",  # seed 002: a passing provider fault reported failed; child goes on
    "serialized_wait",  # seed 003: the second of two wait calls dispatched late
    "parent_not_active",  # seed 004: a background subagent's delegate_task refused
    "duplicate_delegation",  # the same work delegated again while the first child works
    "orphan_wake",  # the completion names a task id that was never delegated
    "stuck",  # the child's run goes quiet mid-work and never ends
    "late_wake",  # the result's wake waits on a busy parent run past `wake_timeout`
    "never_delivered",  # completed; no wake ever comes while the parent idles (T3 #12285)
    "left_by_restart",  # the orchestrator's restart cuts the child's run (T3 #7314)
    "delegation_never_started",  # a delegate call hangs before any child exists (Codex #24951)
    "completed_on_failure",  # reported completed on an interrupted run (t3code PR #3549)
    "account_limit",  # a usage limit ends the child (Claude Code #83412, Roo #7780)
    "misrouted_wake",  # the completion's wake goes to another lead's thread (Codex #32203)
    "cancel_not_propagated",  # reported cancelled; the child's run goes on (kilocode #11758)
    "silent_background_item",  # an awaited monitor never says it ended (T3 #12502)
)

# Which kinds each failure must open on its task, and why (contract §5). Healthy tasks
# (None) must open nothing: no owed work at their report, their latest result handed and
# reached, wakes delivered at once, activity well inside `stuck_after`.
EXPECTED_FLAGS: dict[str | None, tuple[str, ...]] = {
    None: (),
    # Reported completed with run 1's text; the owned wake run 2 (ordinal above the result
    # run) ends with another text that no wake carries: premature_completion (owed run,
    # latest result not reached), stale_result (handed text is not the latest result),
    # undelivered_result (once `delivery_grace` has passed after run 2's end).
    "stale_finalize": ("premature_completion", "stale_result", "undelivered_result"),
    # The same three: a monitor started by owned run 1 (not `awaited: false`) owns the
    # run its end wakes, whose answer never reaches the parent.
    "remote_monitor": ("premature_completion", "stale_result", "undelivered_result"),
    # Reported failed on a 403-behind-Cloudflare/529/... text (transient_failure) while a
    # later run of the child thread finishes completed (failed_while_running). That run
    # is message-started, so not owned: the latest result stays the handed failure.
    "transient_failure": ("failed_while_running", "transient_failure"),
    # Its delegation's `at` is more than `dispatch_lag` after its `requested_at`.
    "serialized_wait": ("dispatch_lag",),
    # The task itself is healthy; the refusal flags its child thread (THREAD_FLAGS).
    "parent_not_active": (),
    # Same parent, title and prompt as an earlier task whose child run was unfinished at
    # this delegation's `at`: raised on the later task.
    "duplicate_delegation": ("duplicate_delegation",),
    # Its result reaches the parent through a wake naming a task never delegated: after
    # `orphan_grace` the wake sits on the task whose child thread sent it.
    "orphan_wake": ("orphan_wake",),
    # Running, and its only run hangs after its last activity: nothing owned happens
    # for `stuck_after`.
    "stuck": ("stuck",),
    # Completed and handed at once; only the wake's delivery is late (PASSING_FLAGS).
    "late_wake": (),
    # Reported completed by an orchestrator that hands results by wakes alone
    # (`delivery: "wake"`), and no wake follows while the parent has no run under way.
    "never_delivered": ("never_delivered",),
    # Its child's run is cut by a restart (`cause: "restart"`) while it is reported
    # running; nothing owned happens after, so `stuck` follows `stuck_after` later.
    "left_by_restart": ("left_by_restart", "stuck"),
    # The task itself is healthy: it is the parent's second try. Its first request hung
    # with no child and flags the parent thread (PARENT_THREAD_FLAGS).
    "delegation_never_started": (),
    # Its only run is interrupted and the task is reported completed with the run's
    # partial text, handed to the parent: nothing later makes it good.
    "completed_on_failure": ("completed_on_failure",),
    # Reported failed on a usage limit's text (failure class usage_limit): not a passing
    # fault, so no transient_failure, whatever status code the text carries.
    "account_limit": ("account_limit",),
    # Completed with no text on the report (results go by wake), and the one wake of its
    # result goes to another lead's thread, which takes it: once `delivery_grace` has
    # passed, the parent lacks the result.
    "misrouted_wake": ("misrouted_wake",),
    # Reported cancelled while its only run goes on working and never ends: after
    # `cancel_grace` the cancel did not reach the child.
    "cancel_not_propagated": ("cancel_not_propagated",),
    # Waiting on an awaited monitor that never ends, with nothing on the child thread:
    # silent after `stuck_after`; then `stuck`'s idle clock runs, `stuck_after` more.
    "silent_background_item": ("silent_background_item", "stuck"),
}
# Kinds a failure raises and resolves again before `until`: raised, not open at the end.
PASSING_FLAGS: dict[str | None, tuple[str, ...]] = {
    # The wake is delivered `wake_timeout` + 10-30 s after it was queued, when the busy
    # parent run ends.
    "late_wake": ("late_wake",),
}
# Flags on the failing task's child thread.
THREAD_FLAGS: dict[str, tuple[str, ...]] = {"parent_not_active": ("delegation_rejected",)}
# Flags on the failing task's parent thread.
PARENT_THREAD_FLAGS: dict[str, tuple[str, ...]] = {
    "delegation_never_started": ("delegation_never_started",)
}
# Failures that take two delegations (the first of the pair is healthy).
PAIRED = frozenset({"serialized_wait", "duplicate_delegation"})
# Failures that need the child on another environment.
REMOTE_ONLY = frozenset({"remote_monitor"})

HEALTHY_SHAPES = (
    ("simple", 4),
    ("background", 3),
    ("monitor", 2),
    ("monitor_unawaited", 1),
    ("reviewer", 2),
    ("retry", 2),
    ("real_failure", 1),
)


class Fleet:
    """A deterministic generator of a fleet's events; see the module docstring.

    `rate` is delegations per virtual minute, `failure_rate` the share of episodes that
    carry a failure (drawn from `failures`), `tasks` the number of tasks after which no
    new episode starts (None: never stop). `settings` are the detection durations the
    fleet times its work against (a demo source may shorten them).

    `opening` scripts the first episodes: each carries that failure (None: healthy),
    whatever `failure_rate` says, and they start evenly, one every 60/`rate` s, so a demo
    knows when each flag opens; the random draws follow. `durations` scales the work and
    the waits (not the gaps timed against the detection settings, nor sub-second ones).
    """

    def __init__(
        self,
        seed: int,
        *,
        start: datetime = DEFAULT_START,
        parents: int = 3,
        rate: float = 2.0,
        failure_rate: float = 0.2,
        tasks: int | None = None,
        settings: DetectionSettings | None = None,
        failures: Sequence[str] = FAILURES,
        remote_share: float = 0.25,
        opening: Sequence[str | None] = (),
        durations: float = 1.0,
    ):
        named = set(failures) | {f for f in opening if f is not None}
        unknown = sorted(named - set(FAILURES))
        if unknown:
            raise ValueError(f"unknown failure(s) {', '.join(unknown)}; choose from {FAILURES}")
        if parents < 1 or rate <= 0 or not 0 <= failure_rate <= 1 or durations <= 0:
            raise ValueError("parents >= 1, rate > 0, 0 <= failure_rate <= 1, durations > 0")
        self.seed = seed
        self.start = start.astimezone(UTC)
        self.rate = rate
        self.failure_rate = failure_rate
        self.task_limit = tasks
        self.settings = settings or DetectionSettings()
        self.failures = tuple(failures)
        self.remote_share = remote_share
        self.opening = tuple(opening)
        self.durations = durations
        self.rng = random.Random(seed)
        self.tag = f"sim{seed}"
        # Remote environments run a few seconds off the origin's clock (contract §2).
        self.skew = {ORIGIN_ENV: 0.0}
        for env in REMOTE_ENVS:
            self.skew[env] = round(self.rng.choice((-1, 1)) * self.rng.uniform(0.6, 4.0), 3)
        self.parents = [f"thread:{self.tag}:lead-{i + 1}" for i in range(parents)]
        self.tasks: list[FleetTask] = []
        self.by_task: dict[str, FleetTask] = {}
        self.threads: dict[str, ThreadState] = {}
        self.thread_flags: dict[str, list[str]] = {}
        self.now = 0.0  # virtual seconds since `start`
        self.last_at = 0.0  # the latest virtual time an event was emitted at
        self.finished = False  # the stream has ended
        # Answers to actions (another thread, out of process) read and move the state.
        self.lock = threading.RLock()
        self._planned = 0
        self._task_numbers = itertools.count(1)
        self._event_numbers = itertools.count(1)
        self._outbox: list[tuple[float, dict]] = []  # made, not yet yielded
        self._heap: list = []
        self._seq = itertools.count()
        self._parent_waits: dict[str, int] = {}
        self._episodes = itertools.count(1)
        self._started = False
        self._busy: dict[str, str] = {}  # late_wake task -> its busy parent run
        self._due_at = 0.0  # the latest virtual time a time-based flag falls due

    # --- the stream ------------------------------------------------------------------

    def events(self) -> Iterator[tuple[float, dict]]:
        """(virtual seconds since `start`, event) in time order; a fleet runs once."""
        if self._started:
            raise RuntimeError("a fleet's events can be taken once; make another Fleet")
        self._started = True
        self._spawn(self._launcher(), 0.0)
        while True:
            with self.lock:
                while not self._outbox and self._heap:
                    at, _, owner, coroutine = heapq.heappop(self._heap)
                    self.now = at
                    # A coroutine's next delay; None once it ended (or its task was cancelled).
                    delay = None
                    if owner is None or not owner.cancelled:
                        delay = next(coroutine, None)
                    if delay is not None:
                        self._spawn(coroutine, at + max(0.0, delay), owner)
                if not self._outbox:
                    break
                # One at a time: what is made but not yet taken stays for interrupt_all.
                at, event = self._outbox.pop(0)
            yield at, event
        self.finished = True

    def at(self, seconds: float, env: str = ORIGIN_ENV) -> datetime:
        """The wall time of virtual `seconds` on `env`'s clock."""
        return self.start + timedelta(milliseconds=round((seconds + self.skew[env]) * 1000))

    @property
    def until(self) -> datetime:
        """When every expected flag is open: the last event, plus the longest grace that
        can still open one (`delivery_grace`, `orphan_grace`), or the latest hang or late
        wake falling due if later, and the clocks' skew."""
        grace = max(self.settings.delivery_grace, self.settings.orphan_grace)
        skew = max(abs(s) for s in self.skew.values())
        return self.at(max(self.last_at + grace, self._due_at) + skew + 30)

    def manifest(self) -> dict[str, Any]:
        """The tasks delegated so far, each with its failure and `expected_flags`; the
        flags expected on threads (`threads`, every thread named); `until`, when they
        are all open; `complete`, whether the fleet has ended (only then do they hold)."""
        with self.lock:
            return {
                "seed": self.seed,
                "start": stamp(self.start),
                "until": stamp(self.until),
                "complete": self.finished,
                "settings": {
                    name: getattr(self.settings, name)
                    for name in DetectionSettings.__dataclass_fields__
                },
                "environments": {env: skew for env, skew in self.skew.items()},
                "tasks": [task.as_json() for task in self.tasks],
                "threads": {
                    thread: list(self.thread_flags.get(thread, ())) for thread in self.threads
                },
            }

    def as_scenario(self, name: str | None = None) -> dict[str, Any]:
        """The whole (bounded) fleet as a contract §7 scenario, with its expectations."""
        if self.task_limit is None:
            raise ValueError("only a fleet with a task limit ends")
        events = [event for _, event in self.events()]
        manifest = self.manifest()
        threads = {k: sorted(v) for k, v in manifest["threads"].items()}
        expect_open = {
            "tasks": {t["task"]: sorted(t["expected_flags"]) for t in manifest["tasks"]},
            "threads": threads,
        }
        # Raised at any time: the ones open at the end and the ones that passed.
        expect = {
            "tasks": {
                t["task"]: sorted({*t["expected_flags"], *t["passing_flags"]})
                for t in manifest["tasks"]
            },
            "threads": threads,
        }
        return {
            "name": name or f"fleet-{self.seed}",
            "description": f"Simulated fleet, seed {self.seed}.",
            "settings": manifest["settings"],
            "until": manifest["until"],
            "events": events,
            "expect": expect,
            "expect_open": expect_open,
        }

    # --- state shared with answers ----------------------------------------------------

    def observe(self, events: list[dict]) -> None:
        """Take in events made outside the stream (answers to actions), so that later
        runs of their threads take later ordinals; a cancelled task stops working."""
        with self.lock:
            for event in events:
                self._track(event)
                data = event.get("data", {})
                if event.get("type") == "task.reported" and data.get("status") == "cancelled":
                    task = self.by_task.get(data.get("task"))
                    if task is not None:
                        task.cancelled = True
                        busy = self._busy.pop(task.task, None)
                        if busy is not None:
                            note = f"Stopped waiting: {task.title!r} was cancelled."
                            self._later(self._end_parent_run(task.parent_thread, busy, note), 0)

    def interrupt_all(self) -> list[dict]:
        """The orchestrator shut down (a restart, say): at the virtual now, every run not
        finished ends `interrupted` and every task not settled is reported `interrupted`,
        so no unfinished work is left to read as stuck. The fleet ends with it. The events
        the stream made but has not yielded yet come first."""
        with self.lock:
            self.now = max(self.now, self.last_at)
            for state in list(self.threads.values()):
                for run in list(state.active):
                    self._finish_run(
                        state.thread, run, "interrupted", "Interrupted: the orchestrator stopped."
                    )
            for task in self.tasks:
                if task.cancelled or task.report in TERMINAL_STATUSES:
                    continue
                # No summary: a text would count as a result handed to the parent.
                self._report(task, "interrupted", error="the orchestrator stopped")
            self._heap.clear()
            self.finished = True
            out, self._outbox = self._outbox, []
            return [event for _, event in out]

    # --- machinery --------------------------------------------------------------------

    def _spawn(self, coroutine, at: float, owner: FleetTask | None = None) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), owner, coroutine))

    def _later(self, coroutine, delay: float, owner: FleetTask | None = None) -> None:
        self._spawn(coroutine, self.now + delay, owner)

    def _emit(self, type_: str, env: str, **data: Any) -> dict:
        event = {
            "id": f"{self.tag}-{next(self._event_numbers):06d}",
            "type": type_,
            "at": stamp(self.at(self.now, env)),
            "env": env,
            "data": {k: v for k, v in data.items() if v is not None},
        }
        self._track(event)
        self._outbox.append((self.now, event))
        self.last_at = max(self.last_at, self.now)
        return event

    def _track(self, event: dict) -> None:
        data = event.get("data", {})
        kind = event.get("type")
        if kind == "run.requested":
            state = self._thread_state(data["thread"], event.get("env", ORIGIN_ENV))
            state.runs[data["run"]] = data["ordinal"]
            if data["run"] not in state.active:
                state.active.append(data["run"])
        elif kind == "run.finished":
            state = self._thread_state(data["thread"], event.get("env", ORIGIN_ENV))
            if data["run"] in state.active:
                state.active.remove(data["run"])
        elif kind == "task.reported":
            task = self.by_task.get(data.get("task"))
            if task is not None:
                task.report = data.get("status")

    def _thread_state(self, thread: str, env: str) -> ThreadState:
        if thread not in self.threads:
            self.threads[thread] = ThreadState(thread, env if env in self.skew else ORIGIN_ENV)
        return self.threads[thread]

    def _uniform(self, low: float, high: float) -> float:
        return round(self.rng.uniform(low, high), 3)

    def _span(self, low: float, high: float) -> float:
        """A stretch of work or waiting, scaled by `durations` (one draw, as `_uniform`)."""
        return round(self.rng.uniform(low, high) * self.durations, 3)

    def _falls_due(self, virtual: float) -> None:
        """A time-based flag falls due then: `until` must not come before."""
        self._due_at = max(self._due_at, virtual)

    # --- building blocks: each emits at the virtual now -------------------------------

    def _request_run(self, thread: str, trigger: dict) -> str:
        state = self.threads[thread]
        ordinal = state.max_ordinal + 1
        run = f"{thread}:run:{ordinal}"
        self._emit(
            "run.requested", state.env, thread=thread, run=run, ordinal=ordinal, trigger=trigger
        )
        return run

    def _start_run(self, thread: str, run: str) -> None:
        self._emit("run.started", self.threads[thread].env, thread=thread, run=run)

    def _finish_run(
        self, thread: str, run: str, status: str, summary: str, error=None, **more: Any
    ) -> None:
        env = self.threads[thread].env
        self._emit(
            "run.finished",
            env,
            thread=thread,
            run=run,
            status=status,
            summary=summary,
            error=error,
            **more,
        )

    def _work(self, thread: str, run: str, seconds: float):
        """A run producing output for `seconds`: `run.activity` often enough that a
        healthy run never reads as idle for `stuck_after`."""
        every_max = max(1.0, min(90.0, self.settings.stuck_after / 3))
        remaining = seconds
        while remaining > 0:
            step = min(remaining, self._uniform(min(30.0, every_max), every_max))
            yield step
            remaining -= step
            if remaining > 0:
                self._emit(
                    "run.activity",
                    self.threads[thread].env,
                    thread=thread,
                    run=run,
                    note=self.rng.choice(ACTIVITY_NOTES),
                )

    def _report(self, task: FleetTask, status: str, **fields: Any) -> None:
        self._emit("task.reported", task.env, task=task.task, status=status, **fields)

    def _background(self, thread: str, run: str, kind: str, label: str, awaited) -> str:
        state = self.threads[thread]
        state.items += 1
        item = f"{thread}:bg:{state.items}"
        self._emit(
            "background.started",
            state.env,
            thread=thread,
            item=item,
            kind=kind,
            run=run,
            label=label,
            awaited=awaited,
        )
        return item

    def _new_wake(self, thread: str) -> str:
        state = self.threads[thread]
        state.wakes += 1
        return f"{thread}:wake:{state.wakes}"

    def _queue_wake(self, wake: str, thread: str, source: dict, summary=None, outcome=None):
        self._emit(
            "wake.queued",
            self.threads[thread].env,
            wake=wake,
            thread=thread,
            source=source,
            summary=summary,
            outcome=outcome,
        )

    def _woken_run(self, thread: str, wake: str):
        """The run a queued wake starts on `thread`; returns its id."""
        yield 0.03
        run = self._request_run(thread, {"kind": "wake", "wake": wake})
        yield 0.01
        self._emit("wake.delivered", self.threads[thread].env, wake=wake, run=run)
        yield 0.04
        self._start_run(thread, run)
        return run

    def _parent_turn(self, parent: str):
        """A parent run started by a message (the user, a schedule); returns its id."""
        run = self._request_run(parent, {"kind": "message"})
        yield 0.05
        self._start_run(parent, run)
        return run

    def _end_parent_run(self, parent: str, run: str, summary: str):
        yield self._span(2, 8)
        if run in self.threads[parent].active:
            self._finish_run(parent, run, "completed", summary)

    def _delegate(
        self,
        work: Work,
        ref: str,
        parent: str,
        parent_run: str | None,
        *,
        mode: str,
        child_env: str,
        shape: str,
        failure: str | None,
        env: str = ORIGIN_ENV,
        requested_lag: float | None = None,
        title: str | None = None,
        prompt: str | None = None,
        parent_task: str | None = None,
    ):
        """`task.delegated`, the child thread seen, its first run requested and started."""
        number = next(self._task_numbers)
        slug = f"{number:04d}-{work.slug}"
        task_id = f"node:delegated-task:command%3Amcp%3A{self.tag}%3Adelegate-task%3A{slug}"
        child = f"thread:delegated-task:{self.tag}-{slug}"
        self._thread_state(child, child_env)
        task = FleetTask(
            task=task_id,
            title=title or work.title.format(ref=ref),
            prompt=prompt or work.prompt.format(ref=ref),
            parent_thread=parent,
            child_thread=child,
            mode=mode,
            env=env,
            child_env=child_env,
            shape=shape,
            failure=failure,
            expected_flags=sorted(EXPECTED_FLAGS[failure]),
            passing_flags=sorted(PASSING_FLAGS.get(failure, ())),
            delegated_at=stamp(self.at(self.now, env)),
            parent_task=parent_task,
        )
        self.tasks.append(task)
        self.by_task[task_id] = task
        self.thread_flags[child] = sorted(THREAD_FLAGS.get(failure or "", ()))
        requested_at = None
        if requested_lag is not None:
            requested_at = stamp(self.at(self.now - requested_lag, env))
        request_id = f"{self.tag}-req-{number}"
        # The parent's ask first (issue 31), then the delegation that answers it.
        self._request_task(parent, parent_run, request_id, task.title, env)
        self._emit(
            "task.delegated",
            env,
            task=task_id,
            parent_thread=parent,
            child_thread=child,
            title=task.title,
            mode=mode,
            prompt=task.prompt,
            client_request_id=request_id,
            parent_run=parent_run,
            target_env=child_env if child_env != env else None,
            requested_at=requested_at,
        )
        provider, model = self.rng.choice(PROVIDERS)
        self._emit(
            "thread.seen",
            child_env,
            thread=child,
            title=task.title,
            parent_thread=parent,
            provider=provider,
            model=model,
        )
        yield 0.05
        run = self._request_run(child, {"kind": "delegation", "task": task_id})
        yield 0.05
        self._start_run(child, run)
        return task, run

    def _request_task(
        self, parent: str, parent_run: str | None, request_id: str, title: str, env: str
    ) -> None:
        """`task.requested`: the parent asked to delegate a task; no child exists yet."""
        self._emit(
            "task.requested",
            env,
            parent_thread=parent,
            parent_run=parent_run,
            client_request_id=request_id,
            title=title,
        )

    def _hand_to_parent(
        self, task: FleetTask, summary: str, outcome: str, *, named_task: str | None = None
    ):
        """The orchestrator hands a result to the parent: a task wake, delivered at once
        into the run waiting on it (mode wait) or a new parent run it starts."""
        parent = task.parent_thread
        wake = self._new_wake(parent)
        source = {"kind": "task", "task": named_task or task.task, "thread": task.child_thread}
        self._queue_wake(wake, parent, source, summary, outcome)
        yield from self._deliver_to_parent(task, wake)

    def _deliver_to_parent(self, task: FleetTask, wake: str):
        parent = task.parent_thread
        waiting = task.wait_run
        if waiting and waiting in self.threads[parent].active:
            yield 0.1
            self._emit("wake.delivered", self.threads[parent].env, wake=wake, run=waiting)
            self._parent_waits[waiting] -= 1
            if self._parent_waits[waiting] <= 0:
                self._later(self._end_parent_run(parent, waiting, "Read the results; next."), 0)
            return
        run = yield from self._woken_run(parent, wake)
        self._later(self._end_parent_run(parent, run, f"Noted the result of {task.title!r}."), 0)

    # --- episodes ---------------------------------------------------------------------

    def _launcher(self):
        for i, parent in enumerate(self.parents):
            self._parent_seen(parent, i, PARENT_TITLES[i % len(PARENT_TITLES)])
        yield 1.0
        launched = 0
        while self.task_limit is None or self._planned < self.task_limit:
            plan = self._plan(launched)
            self._planned += plan.size
            self._later(self._episode(plan), 0)
            launched += 1
            if launched < len(self.opening):
                yield self._opening_gap()
            else:
                yield round(self.rng.expovariate(self.rate / 60.0), 3) + 0.5

    def _opening_gap(self) -> float:
        """Seconds between the opening's episodes: the rate's, closer when a long
        opening would not have launched its last one by `OPENING_SPAN`."""
        return round(min(60.0 / self.rate, OPENING_SPAN / max(len(self.opening) - 1, 1)), 3)

    def _plan(self, launched: int) -> Plan:
        budget = None if self.task_limit is None else self.task_limit - self._planned
        parent = self.rng.choice(self.parents)
        failure = None
        scripted = launched < len(self.opening)
        if scripted:
            failure = self.opening[launched]
        elif self.failures and self.rng.random() < self.failure_rate:
            failure = self.rng.choice(self.failures)
        if failure == "never_delivered":
            # A parent of its own: another task's wake would start a run of a shared one.
            parent = self._quiet_parent(launched)
        if budget is not None and budget < 2 and failure in PAIRED:
            singles = [f for f in self.failures if f not in PAIRED]
            failure = self.rng.choice(singles) if singles else None
        if failure is None:
            shapes, weights = zip(*HEALTHY_SHAPES, strict=True)
            shape = self.rng.choices(shapes, weights)[0]
        else:
            shape = failure
        remote = None
        if failure in REMOTE_ONLY or (
            shape in ("simple", "background", "monitor", "reviewer", "retry", "stale_finalize")
            and self.rng.random() < self.remote_share
        ):
            remote = self.rng.choice(REMOTE_ENVS)
        mode = "wait" if shape in ("simple", "retry", "real_failure") else "async"
        if shape in ("simple", "retry", "transient_failure") and self.rng.random() < 0.6:
            mode = "async" if shape != "transient_failure" else "wait"
        reviewers = 0
        # A scripted stale_finalize asks no reviewers: its flags must open soon.
        reviewed = shape == "stale_finalize" and not scripted and self.rng.random() < 0.5
        if shape == "reviewer" or reviewed:
            reviewers = self.rng.choice((1, 2))
            if budget is not None:
                reviewers = min(reviewers, budget - 1)
            if reviewers == 0 and shape == "reviewer":
                shape = "simple"
        size = (2 if failure in PAIRED else 1) + reviewers
        return Plan(parent, failure, shape, mode, remote, reviewers, size)

    def _quiet_parent(self, launched: int) -> str:
        parent = f"thread:{self.tag}:quiet-lead-{launched + 1}"
        self._parent_seen(parent, launched, "Lead that waits for a result")
        return parent

    def _parent_seen(self, parent: str, index: int, title: str) -> None:
        self._thread_state(parent, ORIGIN_ENV)
        provider, model = PROVIDERS[index % len(PROVIDERS)]
        self._emit(
            "thread.seen",
            ORIGIN_ENV,
            thread=parent,
            title=f"{title} ({self.tag}, {index + 1})",
            provider=provider,
            model=model,
        )

    def _episode(self, plan: Plan):
        work = self.rng.choice(WORKS)
        # Every text names the episode: two tasks' equal texts would reach a parent as one.
        ref = f"#{1000 + next(self._episodes)}"
        parent = plan.parent
        prun = yield from self._parent_turn(parent)
        yield self._span(2, 8)
        if plan.failure == "serialized_wait":
            yield from self._serialized_wait(plan, work, ref, prun)
            return
        if plan.failure == "duplicate_delegation":
            yield from self._duplicate(plan, work, ref, prun)
            return
        if plan.failure == "delegation_never_started":
            yield from self._never_started(plan, work, ref, prun)
        child_env = plan.remote or ORIGIN_ENV
        task, run = yield from self._delegate(
            work,
            ref,
            parent,
            prun,
            mode=plan.mode,
            child_env=child_env,
            shape=plan.shape,
            failure=plan.failure,
            requested_lag=self._healthy_lag() if plan.mode == "wait" else None,
        )
        self._await_or_end(task, parent, prun)
        flow = {
            "simple": self._simple,
            "retry": self._retry,
            "real_failure": self._real_failure,
            "background": self._background_flow,
            "monitor": self._background_flow,
            "stale_finalize": self._background_flow,
            "remote_monitor": self._background_flow,
            "monitor_unawaited": self._monitor_unawaited,
            "reviewer": self._reviewer_flow,
            "transient_failure": self._transient,
            "parent_not_active": self._parent_not_active,
            "orphan_wake": self._simple,
            "stuck": self._stuck,
            "late_wake": self._late_wake,
            "never_delivered": self._never_delivered,
            "left_by_restart": self._left_by_restart,
            "delegation_never_started": self._simple,
            "completed_on_failure": self._completed_on_failure,
            "account_limit": self._account_limit,
            "misrouted_wake": self._misrouted_wake,
            "cancel_not_propagated": self._cancel_not_propagated,
            "silent_background_item": self._silent_item,
        }[plan.shape]
        self._later(flow(task, run, work, ref, plan), 0, owner=task)

    def _healthy_lag(self) -> float:
        """A wait call dispatched at once: well inside `dispatch_lag`."""
        return min(self._uniform(0.01, 0.4), self.settings.dispatch_lag / 4)

    def _await_or_end(self, task: FleetTask, parent: str, prun: str, waits: int = 1) -> None:
        """A wait-mode parent run stays until the result joins it; otherwise it ends soon,
        unless its task's wake is to find it busy (late_wake)."""
        if task.failure == "late_wake":
            self._busy[task.task] = prun
        elif task.mode == "wait":
            task.wait_run = prun
            self._parent_waits[prun] = self._parent_waits.get(prun, 0) + waits
        else:
            self._later(self._end_parent_run(parent, prun, f"Delegated {task.title!r}."), 0)

    def _started_report(self, task: FleetTask):
        yield 0.4
        self._report(task, "running", work_state="working")

    def _complete(self, task: FleetTask, run: str, summary: str, *, named_task=None):
        yield 0.2
        self._report(
            task, "completed", work_state="result_available", summary=summary, result_run=run
        )
        yield 0.1
        yield from self._hand_to_parent(task, summary, "completed", named_task=named_task)

    def _simple(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan, *, span=None):
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, span or self._span(40, 300))
        final = work.final.format(ref=ref)
        self._finish_run(child, run, "completed", final)
        named = None
        if task.failure == "orphan_wake":
            # The completion names a task id that was never delegated (seed 002's wake).
            slug = task.task.rsplit("%3A", 1)[1]
            named = f"node:delegated-task:provider-continuation%3A{self.tag}%3A{slug}"
        yield from self._complete(task, run, final, named_task=named)

    def _stuck(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The child's run works a while, then hangs: no event from it ever again, so
        once `stuck_after` has passed since its last activity nothing owned happened."""
        child = task.child_thread
        yield from self._started_report(task)
        # Short, so that the hang (and the flag) comes early in a demo.
        yield from self._work(child, run, self._span(20, 60))
        self._emit(
            "run.activity",
            self.threads[child].env,
            thread=child,
            run=run,
            note=f"Bash: {work.command}",
        )
        self._falls_due(self.now + self.settings.stuck_after)

    def _never_delivered(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The child completes; the orchestrator says it hands results by wakes alone and
        queues none (T3's cap of two completion wakes per cohort): the parent, idle,
        never gets it."""
        child = task.child_thread
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(20, 90))
        self._finish_run(child, run, "completed", final)
        yield 0.2
        self._report(
            task,
            "completed",
            work_state="result_available",
            summary=final,
            result_run=run,
            delivery="wake",
        )
        self._falls_due(self.now + self.settings.delivery_grace)

    def _left_by_restart(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The child's run works a while; the orchestrator restarts and its recovery
        cancels the run; the task stays reported running and nothing resumes it."""
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(20, 60))
        env = self.threads[child].env
        self._emit(
            "run.finished",
            env,
            thread=child,
            run=run,
            status="cancelled",
            summary="",
            cause="restart",
        )
        self._falls_due(self.now + self.settings.stuck_after)

    def _completed_on_failure(self, task: FleetTask, run: str, work: Work, ref: str, plan):
        """The child's run is interrupted part-way; the orchestrator reports the task
        completed with the run's partial text and hands it to the parent as the result."""
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(10, 30))
        partial = work.interim.format(ref=ref)
        self._finish_run(child, run, "interrupted", partial, "interrupted by the user")
        yield from self._complete(task, run, partial)

    def _account_limit(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The child's run ends on the account's usage limit (T3's failure class
        usage_limit); the task is reported failed and the failure handed to the parent."""
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(10, 30))
        text = f"Stopped on {ref}: {self.rng.choice(ACCOUNT_LIMITS)}"
        yield from self._fail(task, run, text, text, failure_class="usage_limit")

    def _misrouted_wake(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The child completes; the orchestrator reports it without a text (results go by
        wake) and queues the completion wake to another lead's thread, which takes it: the
        parent never gets the result (Codex #32203)."""
        child = task.child_thread
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(10, 30))
        self._finish_run(child, run, "completed", final)
        yield 0.2
        self._report(task, "completed", work_state="result_available", result_run=run)
        yield 0.1
        others = [parent for parent in self.parents if parent != task.parent_thread]
        elsewhere = others[0] if others else self._quiet_parent(len(self.tasks))
        wake = self._new_wake(elsewhere)
        source = {"kind": "task", "task": task.task, "thread": child}
        self._queue_wake(wake, elsewhere, source, final, "completed")
        self._falls_due(self.now + self.settings.delivery_grace)
        woken = yield from self._woken_run(elsewhere, wake)
        note = f"A result of {task.title!r} arrived here; it is not for this thread."
        self._later(self._end_parent_run(elsewhere, woken, note), 0)

    def _cancel_not_propagated(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The orchestrator reports the task cancelled, but the cancel never reaches the
        child: its run goes on working a while, then hangs, never ended."""
        child = task.child_thread
        yield from self._started_report(task)
        # Short, so that the flag (`cancel_grace` after the cancel) comes early in a demo.
        yield from self._work(child, run, self._span(4, 12))
        self._report(task, "cancelled")
        self._falls_due(self.now + self.settings.cancel_grace)
        yield from self._work(child, run, self._span(20, 60))
        self._emit(
            "run.activity",
            self.threads[child].env,
            thread=child,
            run=run,
            note=f"Bash: {work.command}",
        )

    def _silent_item(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """Run 1 starts an awaited monitor and ends waiting on it; the monitor never says
        it ended and nothing happens on the child thread again (T3 #12502)."""
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(20, 60))
        self._background(child, run, "monitor", f"Monitor: {work.command}", True)
        yield self._span(1, 10)
        self._finish_run(child, run, "completed", work.interim.format(ref=ref))
        yield 0.2
        self._report(task, "waiting", work_state="waiting_for_children")
        # Silent `stuck_after` after the run's end; `stuck` another `stuck_after` on.
        self._falls_due(self.now + 2 * self.settings.stuck_after)

    def _late_wake(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """The child completes and its result's wake is queued at once; the parent run
        that delegated stays busy, and the wake is delivered only when that run ends."""
        child = task.child_thread
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(20, 120))
        self._finish_run(child, run, "completed", final)
        yield 0.2
        self._report(
            task, "completed", work_state="result_available", summary=final, result_run=run
        )
        yield 0.1
        wake = self._new_wake(task.parent_thread)
        source = {"kind": "task", "task": task.task, "thread": child}
        self._queue_wake(wake, task.parent_thread, source, final, "completed")
        busy = self._busy.pop(task.task, None)
        if busy is not None:
            self._later(self._busy_parent(task, busy, wake), 0)

    def _busy_parent(self, task: FleetTask, run: str, wake: str):
        """The busy parent run ends `wake_timeout` + 10-30 s after the wake was queued;
        the wake then starts a new run of the parent."""
        parent = task.parent_thread
        timeout = self.settings.wake_timeout
        self._falls_due(self.now + timeout)
        late, seen = self._uniform(10, 30), self._uniform(2, 6)
        # Activity after the wake fell due: a replay (which looks at event times only)
        # sees the flag open before the delivery resolves it.
        yield from self._work(parent, run, timeout + seen)
        self._emit(
            "run.activity",
            self.threads[parent].env,
            thread=parent,
            run=run,
            note="Bash: gh run watch",
        )
        yield late - seen
        if run in self.threads[parent].active:
            self._finish_run(parent, run, "completed", f"Checked CI; read {task.title!r}.")
        yield 0.2
        woken = yield from self._woken_run(parent, wake)
        self._later(self._end_parent_run(parent, woken, f"Noted the result of {task.title!r}."), 0)

    def _retry(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """A passing provider error ends run 1; a restart continues it and succeeds."""
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(20, 150))
        error = self.rng.choice(TRANSIENT_ERRORS)
        self._finish_run(child, run, "failed", error, error)
        yield self._span(5, 30)
        again = self._request_run(child, {"kind": "restart", "run": run})
        yield 0.05
        self._start_run(child, again)
        yield from self._work(child, again, self._span(30, 200))
        final = work.final.format(ref=ref)
        self._finish_run(child, again, "completed", final)
        yield from self._complete(task, again, final)

    def _real_failure(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(30, 240))
        text = self.rng.choice(REAL_FAILURES).format(ref=ref)
        yield from self._fail(task, run, text, "the check failed")

    def _fail(self, task: FleetTask, run: str, text: str, error: str, **more: Any):
        """The child's run fails with `text`; the task is reported failed with it, and the
        failure is handed to the parent as the result."""
        self._finish_run(task.child_thread, run, "failed", text, error, **more)
        yield 0.1
        self._report(
            task,
            "failed",
            work_state="result_available",
            summary=text,
            result_run=run,
            error=error,
            **more,
        )
        yield 0.1
        yield from self._hand_to_parent(task, text, "failed")

    def _background_flow(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """Run 1 starts background work and ends waiting on it; its end wakes run 2.

        Healthy: the task completes with run 2's result. stale_finalize (seed 000): the
        task finalizes on run 1's interim text in the gap before run 2 is requested.
        remote_monitor (seed 001): the origin finalizes on run 1's text while the
        monitor's wake run answers on the remote environment."""
        child = task.child_thread
        failure = task.failure
        kind, awaited, label = "command", True, work.command
        if plan.shape in ("monitor", "remote_monitor"):
            kind, awaited, label = "monitor", None, f"Monitor: {work.command}"
        elif failure == "stale_finalize" and self.rng.random() < 0.3:
            kind, awaited = "subagent", None
            label = "Agent(run_in_background=true): read the transcripts"
        interim = work.interim.format(ref=ref)
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(15, 90))
        item = self._background(child, run, kind, label, awaited)
        yield self._span(1, 10)
        self._finish_run(child, run, "completed", interim)
        yield 0.2
        if failure == "remote_monitor":
            self._report(task, "running", work_state="working")
        else:
            self._report(task, "waiting", work_state="waiting_for_children")
        # A healthy item ends before its thread has been quiet for `stuck_after`
        # (silent_background_item): one draw either way, so the stream is as before.
        yield min(self._span(60, 600), 0.8 * self.settings.stuck_after)
        self._emit(
            "background.finished",
            self.threads[child].env,
            thread=child,
            item=item,
            status="completed",
        )
        wake = self._new_wake(child)
        notice = f"Monitor {label!r} finished" if kind == "monitor" else f"{label} exited 0"
        if failure == "stale_finalize":
            # The report lands in the tens of milliseconds before the wake run exists.
            yield 0.043
            self._report(
                task,
                "completed",
                work_state="result_available",
                summary=interim,
                result_run=run,
            )
            yield 0.007
            yield from self._hand_to_parent(task, interim, "completed")
            yield 0.05
            self._queue_wake(wake, child, {"kind": "background", "item": item}, notice, "completed")
            run2 = yield from self._woken_run(child, wake)
            if plan.reviewers:
                # Seed 000's longer form: run 2 asks for reviews, whose notices wake more runs.
                yield from self._work(child, run2, self._span(20, 90))
                yield from self._reviews(task, run2, work, ref, plan.reviewers, closing=final)
            else:
                yield from self._work(child, run2, self._span(20, 150))
                self._finish_run(child, run2, "completed", final)
            return
        yield 0.05
        self._queue_wake(wake, child, {"kind": "background", "item": item}, notice, "completed")
        run2 = yield from self._woken_run(child, wake)
        yield from self._work(child, run2, self._span(2, 120))
        self._finish_run(child, run2, "completed", final)
        if failure == "remote_monitor":
            # The origin finalizes on run 1's text, ignoring the monitor's wake run.
            yield self._uniform(0.2, 1.5)
            self._report(
                task,
                "completed",
                work_state="result_available",
                summary=interim,
                result_run=run,
            )
            yield 0.05
            yield from self._hand_to_parent(task, interim, "completed")
            return
        yield from self._complete(task, run2, final)

    def _monitor_unawaited(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """A monitor started with `awaited: false` outlives the task: it owes no work,
        and the run its progress notice wakes is not the task's."""
        child = task.child_thread
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(30, 200))
        item = self._background(child, run, "monitor", f"Monitor: watch {work.slug}", False)
        yield self._span(5, 40)
        self._finish_run(child, run, "completed", final)
        yield from self._complete(task, run, final)
        yield self._span(60, 300)
        wake = self._new_wake(child)
        self._queue_wake(
            wake,
            child,
            {"kind": "background", "item": item},
            f"Monitor: {work.slug} still healthy ({ref})",
            "updated",
        )
        run2 = yield from self._woken_run(child, wake)
        yield from self._work(child, run2, self._span(5, 40))
        self._finish_run(child, run2, "completed", f"Noted: {work.slug} still healthy ({ref}).")
        yield self._span(30, 300)
        self._emit(
            "background.finished",
            self.threads[child].env,
            thread=child,
            item=item,
            status="cancelled",
        )

    def _reviews(self, task: FleetTask, run: str, work: Work, ref: str, count: int, *, closing):
        """The child asks `count` reviewers (grandchild tasks delegated from `run`), ends
        `run` waiting, and each reviewer's notice wakes a child run; the last one ends
        with `closing`. Returns that last run. The reviewers finish far enough apart that
        each wake run ends before the next notice."""
        child = task.child_thread
        env = self.threads[child].env
        notices: list[tuple[str, float]] = []  # (wake, when the reviewer queues it)
        gap_runs = [self._span(20, 120) for _ in range(count)]
        finish_at = self.now + self._span(60, 400)
        for i in range(count):
            label = "A" if i == 0 else "B"
            title = f"Review {label} of {task.title}"
            prompt = f"Review the change of {ref} ({'correctness' if i == 0 else 'API'})."
            review_task, review_run = yield from self._delegate(
                work,
                ref,
                child,
                run,
                mode="async",
                child_env=env,
                env=env,
                shape="reviewer_of",
                failure=None,
                title=title,
                prompt=prompt,
                parent_task=task.task,
            )
            wake = self._new_wake(child)
            span = max(10.0 * self.durations, finish_at - self.now)
            result = f"{work.review.format(ref=ref)} (reviewer {label})"
            self._later(
                self._review(review_task, review_run, span, wake, result), 0, owner=review_task
            )
            notices.append((wake, self.now + span + 0.2))
            # The next reviewer ends after this one's wake run has ended.
            finish_at = notices[-1][1] + 0.2 + gap_runs[i] + self._span(5, 60)
            yield 0.5
        self._finish_run(child, run, "completed", f"Asked for {count} review(s) of {ref}; waiting.")
        yield 0.2
        if task.failure is None:
            self._report(task, "waiting", work_state="waiting_for_children")
        last = run
        for i, (wake, notice_at) in enumerate(notices):
            yield max(0.0, notice_at + 0.05 - self.now)
            last = yield from self._woken_run(child, wake)
            yield from self._work(child, last, gap_runs[i])
            text = closing if i == count - 1 else f"Addressed review {i + 1} of {ref}; waiting."
            self._finish_run(child, last, "completed", text)
        return last

    def _review(self, task: FleetTask, run: str, span: float, wake: str, result: str):
        """A reviewer: works, reports completed, and its notice is queued for the child."""
        yield from self._work(task.child_thread, run, span)
        self._finish_run(task.child_thread, run, "completed", result)
        yield 0.1
        self._report(
            task, "completed", work_state="result_available", summary=result, result_run=run
        )
        yield 0.1
        self._queue_wake(
            wake,
            task.parent_thread,
            {"kind": "task", "task": task.task, "thread": task.child_thread},
            result,
            "completed",
        )

    def _reviewer_flow(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """Healthy: the child's reviewers' notices wake its runs; it completes with the last."""
        child = task.child_thread
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(30, 150))
        last = yield from self._reviews(task, run, work, ref, plan.reviewers, closing=final)
        yield from self._complete(task, last, final)

    def _transient(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """Seed 002: run 1 fails on a passing provider fault and the task is reported
        failed; a message starts run 2 of the child, which finishes the work and tells
        the parent by message."""
        child = task.child_thread
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(30, 200))
        error = self.rng.choice(TRANSIENT_ERRORS)
        self._finish_run(child, run, "failed", error, error)
        yield 0.1
        self._report(
            task,
            "failed",
            work_state="result_available",
            summary=error,
            result_run=run,
            error=error,
        )
        yield 0.1
        yield from self._hand_to_parent(task, error, "failed")
        yield self._span(10, 60)
        again = self._request_run(child, {"kind": "message"})
        yield 0.05
        self._start_run(child, again)
        yield from self._work(child, again, self._span(60, 300))
        final = work.final.format(ref=ref)
        self._finish_run(child, again, "completed", final)
        yield 0.2
        wake = self._new_wake(task.parent_thread)
        self._queue_wake(wake, task.parent_thread, {"kind": "message"}, final)
        run_p = yield from self._woken_run(task.parent_thread, wake)
        self._later(self._end_parent_run(task.parent_thread, run_p, "Read the message."), 0)

    def _parent_not_active(self, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
        """Seed 004: the child's background subagent calls delegate_task after the child's
        run ended and is refused; the subagent's end starts run 2, which completes."""
        child = task.child_thread
        env = self.threads[child].env
        final = work.final.format(ref=ref)
        yield from self._started_report(task)
        yield from self._work(child, run, self._span(20, 90))
        item = self._background(
            child, run, "subagent", "Agent(run_in_background=true): get a Codex review", None
        )
        yield self._span(2, 20)
        self._finish_run(child, run, "completed", f"Started a background agent for {ref}.")
        yield 0.2
        self._report(task, "waiting", work_state="waiting_for_children")
        for _ in range(self.rng.choice((1, 2))):
            yield self._span(20, 120)
            self._emit(
                "tool.rejected",
                env,
                thread=child,
                tool="delegate_task",
                code="parent_not_active",
                message="Delegated tasks require an active run owned by this MCP provider session.",
                caller="native_subagent",
            )
        yield self._span(20, 120)
        self._emit("background.finished", env, thread=child, item=item, status="completed")
        yield 1.25
        run2 = self._request_run(child, {"kind": "background", "item": item})
        yield 0.05
        self._start_run(child, run2)
        yield from self._work(child, run2, self._span(10, 60))
        text = f"{final} (The background agent could not delegate: parent_not_active.)"
        self._finish_run(child, run2, "completed", text)
        yield from self._complete(task, run2, text)

    def _never_started(self, plan: Plan, work: Work, ref: str, prun: str):
        """Codex #24951: the parent's delegate call hangs before any child exists; no
        delegation and no refusal ever answers its request. After a while the parent asks
        again, under a new request id, and that delegation goes through (the episode's
        task, which goes on as a healthy one)."""
        parent = plan.parent
        number = next(self._task_numbers)
        self.thread_flags[parent] = sorted(PARENT_THREAD_FLAGS["delegation_never_started"])
        self._request_task(
            parent, prun, f"{self.tag}-req-{number}-hung", work.title.format(ref=ref), ORIGIN_ENV
        )
        self._falls_due(self.now + self.settings.spawn_timeout)
        yield self._span(5, 30)

    def _serialized_wait(self, plan: Plan, work: Work, ref: str, prun: str):
        """Seed 003: two wait calls emitted together; the second reaches the orchestrator
        only after the first wait returns, more than `dispatch_lag` after it was emitted."""
        parent = plan.parent
        child_env = plan.remote or ORIGIN_ENV
        first, run1 = yield from self._delegate(
            work,
            f"{ref}a",
            parent,
            prun,
            mode="wait",
            child_env=child_env,
            shape="simple",
            failure=None,
            requested_lag=0.01,
        )
        self._await_or_end(first, parent, prun, waits=2)
        self._later(self._simple(first, run1, work, f"{ref}a", plan), 0, owner=first)
        emitted_gap = self._uniform(0.5, 2.5)
        # Its `requested_at` is the parent's emission, just after the first's.
        held = emitted_gap + self.settings.dispatch_lag + self._uniform(3, 12)
        yield held
        second, run2 = yield from self._delegate(
            WORKS[(WORKS.index(work) + 1) % len(WORKS)],
            f"{ref}b",
            parent,
            prun,
            mode="wait",
            child_env=child_env,
            shape="simple",
            failure="serialized_wait",
            requested_lag=held - emitted_gap + 0.01,
        )
        second.wait_run = prun
        next_work = WORKS[(WORKS.index(work) + 1) % len(WORKS)]
        self._later(self._simple(second, run2, next_work, f"{ref}b", plan), 0, owner=second)

    def _duplicate(self, plan: Plan, work: Work, ref: str, prun: str):
        """The parent delegates the same work again (same title and prompt, another child)
        while the first child's run is still going; both finish and are delivered."""
        parent = plan.parent
        span = self._span(400, 900)
        first, run1 = yield from self._delegate(
            work,
            ref,
            parent,
            prun,
            mode="async",
            child_env=ORIGIN_ENV,
            shape="simple",
            failure=None,
        )
        self._await_or_end(first, parent, prun)
        self._later(self._simple(first, run1, work, ref, plan, span=span), 0, owner=first)
        yield self._span(120, span / self.durations - 120)
        prun2 = yield from self._parent_turn(parent)
        yield self._span(1, 5)
        second, run2 = yield from self._delegate(
            work,
            ref,
            parent,
            prun2,
            mode="async",
            child_env=ORIGIN_ENV,
            shape="simple",
            failure="duplicate_delegation",
            title=first.title,
            prompt=first.prompt,
        )
        self._await_or_end(second, parent, prun2)
        # Its own texts: the same words from two children would reach the parent as one.
        self._later(self._simple(second, run2, work, f"{ref}/2", plan), 0, owner=second)
