"""A deterministic fleet of orchestrator threads: parents delegating tasks to children,
healthy work mixed with the field reports' failures, as a time-ordered stream of
contract events (event-contract.md §2–3).

`Fleet(seed, ...)` is lazy: `events()` yields `(virtual seconds, event)` in time order,
forever unless `tasks` bounds it, so a runner can pace it. The same seed and parameters
give the same events. Every task the fleet delegates says which failure it carries and
which flag kinds Supervisor must open for it (`expected_flags`, from contract §5); the
flags open by `until` must be exactly those, and the ones raised then resolved before it
its `passing_flags`; the tests hold the fleet to it.

The fleet is an `Engine` (the clock, the heap, the emitters) with a launcher: it plans
each episode (who delegates, carrying which failure, in which shape) and starts the
episode's coroutine (`episodes/`). Answers to actions come in through `observe`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from supervisor.core.facts.snapshot import TERMINAL_STATUSES, DetectionSettings

from .demo import OPENING_SPAN
from .engine import Engine
from .episodes import BY_SHAPE, FAILURES, HEALTHY_SHAPES, PAIRED
from .records import ALWAYS, NEVER, REMOTE_ENVS, Plan, stamp
from .steps import delegated
from .texts import PARENT_TITLES, WORKS

DEFAULT_START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


class Fleet(Engine):
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
        super().__init__(seed, start=start, parents=parents, settings=settings, durations=durations)
        self.rate = rate
        self.failure_rate = failure_rate
        self.task_limit = tasks
        self.failures = tuple(failures)
        self.remote_share = remote_share
        self.opening = tuple(opening)
        self._planned = 0  # tasks the episodes launched so far will delegate
        self._episode_numbers = itertools.count(1)
        self._started = False

    # --- the stream and what it made ------------------------------------------------

    def events(self) -> Iterator[tuple[float, dict]]:
        """(virtual seconds since `start`, event) in time order; a fleet runs once."""
        if self._started:
            raise RuntimeError("a fleet's events can be taken once; make another Fleet")
        self._started = True
        yield from self.stream(self._launcher())

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
                self.track(event)
                data = event.get("data", {})
                if event.get("type") == "task.reported" and data.get("status") == "cancelled":
                    task = self.by_task.get(data.get("task"))
                    if task is not None:
                        task.cancelled = True
                        busy = self.busy.pop(task.task, None)
                        if busy is not None:
                            note = f"Stopped waiting: {task.title!r} was cancelled."
                            self.later(self.end_parent_run(task.parent_thread, busy, note), 0)

    def interrupt_all(self) -> list[dict]:
        """The orchestrator shut down (a restart, say): at the virtual now, every run not
        finished ends `interrupted` and every task not settled is reported `interrupted`,
        so no unfinished work is left to read as stuck. The fleet ends with it. The events
        the stream made but has not yielded yet come first."""
        with self.lock:
            self.now = max(self.now, self.last_at)
            for state in list(self.threads.values()):
                for run in list(state.active):
                    self.finish_run(
                        state.thread, run, "interrupted", "Interrupted: the orchestrator stopped."
                    )
            for task in self.tasks:
                if task.cancelled or task.report in TERMINAL_STATUSES:
                    continue
                # No summary: a text would count as a result handed to the parent.
                self.report(task, "interrupted", error="the orchestrator stopped")
            return self.stop()

    # --- the launcher -----------------------------------------------------------------

    def _launcher(self):
        for i, parent in enumerate(self.parents):
            self.parent_seen(parent, i, PARENT_TITLES[i % len(PARENT_TITLES)])
        yield 1.0
        launched = 0
        while self.task_limit is None or self._planned < self.task_limit:
            plan = self._plan(launched)
            self._planned += plan.size
            self.later(self._episode(plan), 0)
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
        """Who delegates, carrying which failure (or healthy in which shape), where and
        how. Each draw is taken only where the episode's declaration calls for it."""
        budget = None if self.task_limit is None else self.task_limit - self._planned
        parent = self.rng.choice(self.parents)
        failure = None
        scripted = launched < len(self.opening)
        if scripted:
            failure = self.opening[launched]
        elif self.failures and self.rng.random() < self.failure_rate:
            failure = self.rng.choice(self.failures)
        if failure is not None and BY_SHAPE[failure].EPISODE.own_parent:
            parent = self.quiet_parent(launched)
        if budget is not None and budget < 2 and failure in PAIRED:
            singles = [f for f in self.failures if f not in PAIRED]
            failure = self.rng.choice(singles) if singles else None
        if failure is None:
            shapes, weights = zip(*HEALTHY_SHAPES, strict=True)
            shape = self.rng.choices(shapes, weights)[0]
        else:
            shape = failure
        episode = BY_SHAPE[shape].EPISODE
        remote = None
        if episode.remote_only or (episode.may_be_remote and self.rng.random() < self.remote_share):
            remote = self.rng.choice(REMOTE_ENVS)
        mode = episode.modes[0]
        if len(episode.modes) > 1 and self.rng.random() < 0.6:
            mode = episode.modes[1]
        reviewers = 0
        asks = episode.reviewers >= ALWAYS or (
            episode.reviewers > NEVER and not scripted and self.rng.random() < episode.reviewers
        )
        if asks:
            reviewers = self.rng.choice((1, 2))
            if budget is not None:
                reviewers = min(reviewers, budget - 1)
            if reviewers == 0 and episode.reviewers >= ALWAYS:
                shape = "simple"  # no task left under the limit to review it
        size = (2 if failure in PAIRED else 1) + reviewers
        return Plan(parent, failure, shape, mode, remote, reviewers, size)

    def _episode(self, plan: Plan):
        """The parent's turn, then the episode's coroutine: its own `after_turn`, or one
        delegation followed by its `flow`."""
        work = self.rng.choice(WORKS)
        # Every text names the episode: two tasks' equal texts would reach a parent as one.
        ref = f"#{1000 + next(self._episode_numbers)}"
        prun = yield from self.parent_turn(plan.parent)
        yield self.span(2, 8)
        module = BY_SHAPE[plan.shape]
        if hasattr(module, "after_turn"):
            yield from module.after_turn(self, plan, work, ref, prun)
            return
        failure = module.EPISODE if module.EPISODE.failure else None
        yield from delegated(self, plan, work, ref, prun, module.flow, failure)
