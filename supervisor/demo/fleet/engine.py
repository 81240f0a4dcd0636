"""The machinery episodes drive: a virtual clock and a heap of coroutines, the fleet's
state, and the emitters of contract events (event-contract.md §2–3) for threads, runs,
wakes, background items and reports.

Each task's life is a small coroutine on the virtual clock: it emits events and yields
how long to wait, and the heap runs them in time order. Every emitter emits at the
virtual now. Ordinals are taken when a run is requested, so answers to actions
(`answers.py`) can take the next one in between. All randomness comes from one seeded
`rng`, drawn in the order the coroutines run: the same seed gives the same events.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from supervisor.core.facts.snapshot import DetectionSettings

from .records import ORIGIN_ENV, REMOTE_ENVS, FleetTask, ThreadState, stamp
from .texts import ACTIVITY_NOTES, PROVIDERS


class Engine:
    """The clock, the heap and the state shared by the episodes (`Fleet` launches them).

    `durations` scales the work and the waits (`span`), not the gaps timed against the
    detection `settings`, nor sub-second ones."""

    def __init__(
        self,
        seed: int,
        *,
        start: datetime,
        parents: int,
        settings: DetectionSettings | None,
        durations: float,
    ):
        self.seed = seed
        self.start = start.astimezone(UTC)
        self.settings = settings or DetectionSettings()
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
        self.thread_flags: dict[str, list[str]] = {}  # thread -> kinds expected on it
        self.now = 0.0  # virtual seconds since `start`
        self.last_at = 0.0  # the latest virtual time an event was emitted at
        self.finished = False  # the stream has ended
        # Answers to actions (another thread, out of process) read and move the state.
        self.lock = threading.RLock()
        self.task_numbers = itertools.count(1)  # for task ids (a hung request takes one)
        self.parent_waits: dict[str, int] = {}  # a waiting parent run -> results it awaits
        self.busy: dict[str, str] = {}  # late_wake task -> its busy parent run
        self._event_numbers = itertools.count(1)
        self._outbox: list[tuple[float, dict]] = []  # made, not yet yielded
        self._heap: list = []
        self._seq = itertools.count()
        self._due_at = 0.0  # the latest virtual time a time-based flag falls due

    # --- the clock --------------------------------------------------------------------

    def stream(self, first) -> Iterator[tuple[float, dict]]:
        """Run `first` and all it spawns in time order: (virtual seconds, event)."""
        self.spawn(first, 0.0)
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
                        self.spawn(coroutine, at + max(0.0, delay), owner)
                if not self._outbox:
                    break
                # One at a time: what is made but not yet taken stays for `stop`.
                at, event = self._outbox.pop(0)
            yield at, event
        self.finished = True

    def stop(self) -> list[dict]:
        """End the stream now: nothing more runs; the events made but not yet yielded."""
        self._heap.clear()
        self.finished = True
        out, self._outbox = self._outbox, []
        return [event for _, event in out]

    def spawn(self, coroutine, at: float, owner: FleetTask | None = None) -> None:
        """Run `coroutine` from virtual `at`; it stops when its `owner` is cancelled."""
        heapq.heappush(self._heap, (at, next(self._seq), owner, coroutine))

    def later(self, coroutine, delay: float, owner: FleetTask | None = None) -> None:
        self.spawn(coroutine, self.now + delay, owner)

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

    def falls_due(self, virtual: float) -> None:
        """A time-based flag falls due then: `until` must not come before."""
        self._due_at = max(self._due_at, virtual)

    def uniform(self, low: float, high: float) -> float:
        return round(self.rng.uniform(low, high), 3)

    def span(self, low: float, high: float) -> float:
        """A stretch of work or waiting, scaled by `durations` (one draw, as `uniform`)."""
        return round(self.rng.uniform(low, high) * self.durations, 3)

    # --- events and the state they move -----------------------------------------------

    def emit(self, type_: str, env: str, **data: Any) -> dict:
        event = {
            "id": f"{self.tag}-{next(self._event_numbers):06d}",
            "type": type_,
            "at": stamp(self.at(self.now, env)),
            "env": env,
            "data": {k: v for k, v in data.items() if v is not None},
        }
        self.track(event)
        self._outbox.append((self.now, event))
        self.last_at = max(self.last_at, self.now)
        return event

    def track(self, event: dict) -> None:
        """Follow an event (the fleet's or an answer's) in the threads' and tasks' state."""
        data = event.get("data", {})
        kind = event.get("type")
        if kind == "run.requested":
            state = self.thread_state(data["thread"], event.get("env", ORIGIN_ENV))
            state.runs[data["run"]] = data["ordinal"]
            if data["run"] not in state.active:
                state.active.append(data["run"])
        elif kind == "run.finished":
            state = self.thread_state(data["thread"], event.get("env", ORIGIN_ENV))
            if data["run"] in state.active:
                state.active.remove(data["run"])
        elif kind == "task.reported":
            task = self.by_task.get(data.get("task"))
            if task is not None:
                task.report = data.get("status")

    def thread_state(self, thread: str, env: str) -> ThreadState:
        if thread not in self.threads:
            self.threads[thread] = ThreadState(thread, env if env in self.skew else ORIGIN_ENV)
        return self.threads[thread]

    # --- threads and runs -------------------------------------------------------------

    def parent_seen(self, parent: str, index: int, title: str) -> None:
        self.thread_state(parent, ORIGIN_ENV)
        provider, model = PROVIDERS[index % len(PROVIDERS)]
        self.emit(
            "thread.seen",
            ORIGIN_ENV,
            thread=parent,
            title=f"{title} ({self.tag}, {index + 1})",
            provider=provider,
            model=model,
        )

    def quiet_parent(self, launched: int) -> str:
        """A lead of its own: no other task's wake starts a run of it."""
        parent = f"thread:{self.tag}:quiet-lead-{launched + 1}"
        self.parent_seen(parent, launched, "Lead that waits for a result")
        return parent

    def request_run(self, thread: str, trigger: dict) -> str:
        state = self.threads[thread]
        ordinal = state.max_ordinal + 1
        run = f"{thread}:run:{ordinal}"
        self.emit(
            "run.requested", state.env, thread=thread, run=run, ordinal=ordinal, trigger=trigger
        )
        return run

    def start_run(self, thread: str, run: str) -> None:
        self.emit("run.started", self.threads[thread].env, thread=thread, run=run)

    def finish_run(
        self, thread: str, run: str, status: str, summary: str, error=None, **more: Any
    ) -> None:
        env = self.threads[thread].env
        self.emit(
            "run.finished",
            env,
            thread=thread,
            run=run,
            status=status,
            summary=summary,
            error=error,
            **more,
        )

    def activity(self, thread: str, run: str, note: str) -> None:
        self.emit("run.activity", self.threads[thread].env, thread=thread, run=run, note=note)

    def work(self, thread: str, run: str, seconds: float):
        """A run producing output for `seconds`: `run.activity` often enough that a
        healthy run never reads as idle for `stuck_after`."""
        every_max = max(1.0, min(90.0, self.settings.stuck_after / 3))
        remaining = seconds
        while remaining > 0:
            step = min(remaining, self.uniform(min(30.0, every_max), every_max))
            yield step
            remaining -= step
            if remaining > 0:
                self.activity(thread, run, self.rng.choice(ACTIVITY_NOTES))

    def parent_turn(self, parent: str):
        """A parent run started by a message (the user, a schedule); returns its id."""
        run = self.request_run(parent, {"kind": "message"})
        yield 0.05
        self.start_run(parent, run)
        return run

    def end_parent_run(self, parent: str, run: str, summary: str):
        yield self.span(2, 8)
        if run in self.threads[parent].active:
            self.finish_run(parent, run, "completed", summary)

    # --- background items, wakes and reports ------------------------------------------

    def background(self, thread: str, run: str, kind: str, label: str, awaited) -> str:
        state = self.threads[thread]
        state.items += 1
        item = f"{thread}:bg:{state.items}"
        self.emit(
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

    def item_finished(self, thread: str, item: str, status: str) -> None:
        self.emit(
            "background.finished", self.threads[thread].env, thread=thread, item=item, status=status
        )

    def new_wake(self, thread: str) -> str:
        state = self.threads[thread]
        state.wakes += 1
        return f"{thread}:wake:{state.wakes}"

    def queue_wake(self, wake: str, thread: str, source: dict, summary=None, outcome=None):
        self.emit(
            "wake.queued",
            self.threads[thread].env,
            wake=wake,
            thread=thread,
            source=source,
            summary=summary,
            outcome=outcome,
        )

    def woken_run(self, thread: str, wake: str):
        """The run a queued wake starts on `thread`; returns its id."""
        yield 0.03
        run = self.request_run(thread, {"kind": "wake", "wake": wake})
        yield 0.01
        self.emit("wake.delivered", self.threads[thread].env, wake=wake, run=run)
        yield 0.04
        self.start_run(thread, run)
        return run

    def report(self, task: FleetTask, status: str, **fields: Any) -> None:
        self.emit("task.reported", task.env, task=task.task, status=status, **fields)

    def request_task(
        self, parent: str, parent_run: str | None, request_id: str, title: str, env: str
    ) -> None:
        """`task.requested`: the parent asked to delegate a task; no child exists yet."""
        self.emit(
            "task.requested",
            env,
            parent_thread=parent,
            parent_run=parent_run,
            client_request_id=request_id,
            title=title,
        )
