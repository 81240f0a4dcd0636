"""A generated history shaped like seed 000's field audit, in contract events.

`generate(tasks=5000)` makes about 20 events per task (about 100,000 for 5,000 tasks)
over a few hours that end well in the past, spread over many parent threads, with the
mix of the issue:

- 2% stale finalizations (seed 000): the child ends run 1 with an interim text while an
  awaited background item runs; the item ends, the task is reported completed with
  run 1's text and the parent is woken with it, and 60 ms to 3 s later the wake run
  (run 2, sometimes also a run 3) starts; its real result never reaches the parent.
  Open at the end: premature_completion, stale_result, undelivered_result.
- 1% transient failures (seed 002, a1): run 1 fails on a provider fault (403 behind
  Cloudflare, 529 overloaded, ...), the task is reported failed, and the parent then
  continues the child with a message; the child's next run completes.
  Open: failed_while_running, transient_failure.
- 0.5% duplicates (seed 002, a2): half of the transient failures are delegated again
  with the same title and prompt while the first child's continuation still runs.
  Open on the later task: duplicate_delegation.
- the rest healthy, in four shapes (an awaited background item and its wake run; one
  long run with activity; an unawaited monitor whose later wake run is not owned; a
  real, non-transient failure). They must raise nothing at the end.

Everything is a function of the seed and `end` (the `at` of the history's last
possible event): the same arguments give the same events, ids and expectations.
`end` defaults to 90 minutes before now, so every grace period (60 s delivery grace,
30 min stuck_after) has passed and every flag opens on its first evaluation.

    python bench/history.py --tasks 200 --scenario /tmp/h.json   # a contract §7 file
    .venv/bin/python manage.py replay --check /tmp/h.json          # checks expect_open
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

STALE_KINDS = ("premature_completion", "stale_result", "undelivered_result")
TRANSIENT_KINDS = ("failed_while_running", "transient_failure")
DUPLICATE_KINDS = ("duplicate_delegation",)

SPAN = timedelta(hours=5)  # delegations fall in [end - SPAN, end - LONGEST_TASK]
LONGEST_TASK = timedelta(minutes=50)  # no task shape lasts longer than this

TOPICS = [
    ("Port the retry loop", "Port the retry loop to the new client, run the suite, open a PR."),
    ("Fix the flaky upload test", "Find why test_upload flakes on CI and fix it."),
    ("Review the codemode change", "Run git diff main, review the change, fix what you find."),
    ("Bump the SDK", "Bump the provider SDK, fix the breaking changes, run the suite."),
    ("Audit the VM lead agents", "Read the transcripts of the VM lead agents and summarise."),
    ("Write the migration", "Write the migration for the new column, with a backfill."),
    ("Profile the search endpoint", "Profile /search under load and propose fixes."),
    ("Open the release PR", "Open the release PR and watch CI until it is green."),
    ("Triage the nightly failures", "Triage last night's failing jobs and file issues."),
    ("Update the docs", "Update the API docs for the new pagination."),
]
INTERIM = [
    "Still running, waiting on the checks.",
    "PR opened; waiting on CI.",
    "The three transcript readers are still running.",
    "Suite started in the background; I'll report when it finishes.",
    "Waiting on clippy.",
    "INTERIM: capture is running in the background.",
]
TRANSIENT_ERRORS = [
    "Failed to authenticate. API Error: 403 Attention Required! | Cloudflare",
    "API Error: 529 overloaded_error: Overloaded",
    "API Error: 429 rate limit exceeded, retry later",
    "TypeError: fetch failed (ECONNRESET)",
    "Request timed out after 600s",
    "API Error: 503 Service Unavailable",
]
REAL_ERRORS = [
    "Dry-run failed: migration 0042 drops a column still read by billing.",
    "Cannot continue: the repository has no test target for this package.",
    "Stopped: the spec contradicts the public API; needs a decision.",
]
PROVIDERS = [
    ("claudeAgent", "claude-opus-5-5"),
    ("codex", "gpt-6.1-sol"),
    ("claudeAgent", "claude-haiku-5-5"),
]


def stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def default_end(now: datetime | None = None) -> datetime:
    """90 minutes before now, on a whole minute."""
    now = now or datetime.now(UTC)
    return now.replace(second=0, microsecond=0) - timedelta(minutes=90)


@dataclass
class History:
    events: list[dict]  # sorted by (at, id)
    expected: set[tuple[str, str]]  # (task id, kind) open at the end
    shapes: dict[str, str]  # task id -> shape name
    parents: list[str]
    start: datetime
    end: datetime
    seed: int
    counts: Counter = field(default_factory=Counter)

    @property
    def task_ids(self) -> list[str]:
        return list(self.shapes)

    def summary(self) -> dict:
        return {
            "tasks": len(self.shapes),
            "events": len(self.events),
            "parent_threads": len(self.parents),
            "shapes": dict(sorted(Counter(self.shapes.values()).items())),
            "expected_open_flags": len(self.expected),
            "expected_by_kind": dict(sorted(Counter(k for _, k in self.expected).items())),
            "first_at": self.events[0]["at"],
            "last_at": self.events[-1]["at"],
            "seed": self.seed,
        }

    def scenario(self, name: str = "bench-history") -> dict:
        """A contract §7 scenario: `replay --check` compares the open flags at `until`."""
        tasks: dict[str, list[str]] = {task: [] for task in self.shapes}
        for task, kind in sorted(self.expected):
            tasks[task].append(kind)
        threads = sorted(
            {
                e["data"][k]
                for e in self.events
                for k in ("thread", "parent_thread", "child_thread")
                if e["data"].get(k)
            }
        )
        return {
            "name": name,
            "description": f"bench/history.py seed {self.seed}, {len(self.shapes)} tasks",
            "until": stamp(self.end + timedelta(hours=1)),
            "events": self.events,
            "expect_open": {"tasks": tasks, "threads": {t: [] for t in threads}},
        }


class Builder:
    """Appends the events of one task (and its child thread) with increasing times."""

    def __init__(self, out: list[dict], rng: random.Random, prefix: str):
        self.out, self.rng, self.prefix, self.n = out, rng, prefix, 0

    def emit(self, type_: str, at: datetime, data: dict) -> None:
        self.n += 1
        self.out.append(
            {"id": f"{self.prefix}-{self.n:02d}", "type": type_, "at": stamp(at), "data": data}
        )

    def ms(self, lo: float, hi: float) -> timedelta:
        return timedelta(milliseconds=self.rng.uniform(lo, hi))

    def s(self, lo: float, hi: float) -> timedelta:
        return timedelta(seconds=self.rng.uniform(lo, hi))


class Generator:
    def __init__(self, tasks: int, seed: int, end: datetime, tasks_per_parent: int):
        self.rng = random.Random(seed)
        self.n_tasks, self.seed, self.end = tasks, seed, end
        self.start = end - SPAN
        self.events: list[dict] = []
        self.expected: set[tuple[str, str]] = set()
        self.shapes: dict[str, str] = {}
        n_parents = max(1, round(tasks / tasks_per_parent))
        self.parents = [
            f"thread:parent-{i:04d}-{self.rng.getrandbits(24):06x}" for i in range(n_parents)
        ]
        for i, parent in enumerate(self.parents):
            provider, model = PROVIDERS[i % len(PROVIDERS)]
            self.events.append(
                {
                    "id": f"p{i:04d}-seen",
                    "type": "thread.seen",
                    "at": stamp(self.start - timedelta(minutes=1)),
                    "data": {
                        "thread": parent,
                        "title": f"Coordinator {i}",
                        "provider": provider,
                        "model": model,
                    },
                }
            )
        self.wake_seq: Counter = Counter()

    # ids -------------------------------------------------------------------------------

    def ids(self, n: int, slug: str) -> tuple[str, str]:
        tag = f"{slug}-{n:05d}"
        command = f"command%3Amcp%3A{self.rng.getrandbits(32):08x}"
        task = f"node:delegated-task:{command}%3Adelegate-task%3A{tag}"
        return task, f"thread:delegated-task:{tag}"

    def parent_wake(self, parent: str) -> str:
        self.wake_seq[parent] += 1
        return f"{parent}:wake:{self.wake_seq[parent]}"

    def t0(self) -> datetime:
        room = (SPAN - LONGEST_TASK).total_seconds()
        return self.start + timedelta(seconds=self.rng.uniform(0, room))

    # shared pieces ---------------------------------------------------------------------

    def delegate(self, b: Builder, at, task, parent, child, title, prompt, mode="async"):
        data = {
            "task": task,
            "parent_thread": parent,
            "child_thread": child,
            "title": title,
            "mode": mode,
            "prompt": prompt,
        }
        if b.rng.random() < 0.3:
            data["requested_at"] = stamp(at - b.ms(50, 1500))  # within dispatch_lag (5 s)
        b.emit("task.delegated", at, data)
        provider, model = b.rng.choice(PROVIDERS)
        b.emit(
            "thread.seen",
            at + b.ms(1, 20),
            {
                "thread": child,
                "title": title,
                "parent_thread": parent,
                "provider": provider,
                "model": model,
            },
        )

    def run(self, b: Builder, at, child, k, trigger, activities=0, length=(20, 300)):
        """run.requested/started/activity…; returns (run id, time the run may finish)."""
        run = f"{child}:run:{k}"
        b.emit("run.requested", at, {"thread": child, "run": run, "ordinal": k, "trigger": trigger})
        at += b.ms(30, 120)
        b.emit("run.started", at, {"thread": child, "run": run})
        total = b.s(*length)
        for i in range(activities):
            b.emit(
                "run.activity",
                at + total * (i + 1) / (activities + 1),
                {"thread": child, "run": run, "note": f"tool call {i + 1}"},
            )
        return run, at + total

    def finish(self, b: Builder, at, child, run, summary, status="completed", error=None):
        data = {"thread": child, "run": run, "status": status, "summary": summary}
        if error:
            data["error"] = error
        b.emit("run.finished", at, data)

    def report(
        self,
        b: Builder,
        at,
        task,
        status,
        work_state=None,
        summary=None,
        result_run=None,
        error=None,
    ):
        data = {"task": task, "status": status}
        for key, value in (
            ("work_state", work_state),
            ("summary", summary),
            ("result_run", result_run),
            ("error", error),
        ):
            if value is not None:
                data[key] = value
        b.emit("task.reported", at, data)

    def hand_to_parent(self, b: Builder, at, parent, task, child, summary, outcome="completed"):
        wake = self.parent_wake(parent)
        b.emit(
            "wake.queued",
            at,
            {
                "wake": wake,
                "thread": parent,
                "source": {"kind": "task", "task": task, "thread": child},
                "summary": summary,
                "outcome": outcome,
            },
        )
        b.emit("wake.delivered", at + b.ms(40, 400), {"wake": wake})

    def background_wake_run(self, b: Builder, at, child, item, k, activities, length, direct=False):
        """The child is woken because `item` ended: run k, by a wake or a background trigger."""
        if direct:
            return self.run(
                b, at, child, k, {"kind": "background", "item": item}, activities, length
            )
        wake = f"{child}:wake:{k}"
        b.emit(
            "wake.queued",
            at - b.ms(5, 30),
            {
                "wake": wake,
                "thread": child,
                "source": {"kind": "background", "item": item},
                "outcome": "completed",
            },
        )
        b.emit("wake.delivered", at + b.ms(1, 10), {"wake": wake, "run": f"{child}:run:{k}"})
        return self.run(b, at, child, k, {"kind": "wake", "wake": wake}, activities, length)

    # shapes ----------------------------------------------------------------------------

    def healthy_background(self, b, n, parent, title, prompt):
        task, child = self.ids(n, "ci")
        at = self.t0()
        self.delegate(b, at, task, parent, child, title, prompt)
        run1, t = self.run(
            b, at + b.ms(40, 80), child, 1, {"kind": "delegation", "task": task}, 3, (60, 600)
        )
        item = f"{child}:bg:checks"
        b.emit(
            "background.started",
            t - b.s(5, 30),
            {
                "thread": child,
                "item": item,
                "kind": "command",
                "run": run1,
                "label": "gh pr checks --watch",
                "awaited": True,
            },
        )
        self.finish(b, t, child, run1, b.rng.choice(INTERIM))
        self.report(b, t + b.ms(100, 300), task, "waiting", "waiting_for_children")
        t = t + b.s(60, 1200)
        b.emit("background.finished", t, {"thread": child, "item": item, "status": "completed"})
        run2, t = self.background_wake_run(b, t + b.ms(40, 300), child, item, 2, 2, (10, 300))
        final = f"CI green, PR #{n} ready to merge."
        self.finish(b, t, child, run2, final)
        self.report(b, t + b.ms(100, 300), task, "completed", "result_available", final, run2)
        self.hand_to_parent(b, t + b.ms(350, 600), parent, task, child, final)
        return task

    def healthy_long_run(self, b, n, parent, title, prompt):
        task, child = self.ids(n, "work")
        at = self.t0()
        mode = b.rng.choice(["async", "wait"])
        self.delegate(b, at, task, parent, child, title, prompt, mode)
        run1, t = self.run(
            b,
            at + b.ms(40, 80),
            child,
            1,
            {"kind": "delegation", "task": task},
            b.rng.randint(9, 13),
            (120, 1500),
        )
        self.report(b, at + b.ms(300, 900), task, "running", "working")
        final = f"Done: {title.lower()} (#{n}); tests pass."
        self.finish(b, t, child, run1, final)
        self.report(b, t + b.ms(100, 300), task, "completed", "result_available", final, run1)
        self.hand_to_parent(b, t + b.ms(350, 600), parent, task, child, final)
        return task

    def healthy_monitor(self, b, n, parent, title, prompt):
        task, child = self.ids(n, "deploy")
        at = self.t0()
        self.delegate(b, at, task, parent, child, title, prompt)
        run1, t = self.run(
            b, at + b.ms(40, 80), child, 1, {"kind": "delegation", "task": task}, 3, (60, 600)
        )
        self.report(b, at + b.ms(300, 900), task, "running", "working")
        item = f"{child}:bg:monitor"
        b.emit(
            "background.started",
            t - b.s(10, 50),
            {
                "thread": child,
                "item": item,
                "kind": "monitor",
                "run": run1,
                "label": "Monitor: error rate",
                "awaited": False,
            },
        )
        final = f"Deployed build {n} to staging; a monitor keeps watching the error rate."
        self.finish(b, t, child, run1, final)
        self.report(b, t + b.ms(100, 300), task, "completed", "result_available", final, run1)
        self.hand_to_parent(b, t + b.ms(350, 600), parent, task, child, final)
        t = t + b.s(120, 900)
        wake = f"{child}:wake:2"
        b.emit(
            "wake.queued",
            t,
            {
                "wake": wake,
                "thread": child,
                "source": {"kind": "background", "item": item},
                "outcome": "updated",
            },
        )
        b.emit("wake.delivered", t + b.ms(5, 20), {"wake": wake, "run": f"{child}:run:2"})
        run2, t = self.run(
            b, t + b.ms(20, 60), child, 2, {"kind": "wake", "wake": wake}, 0, (5, 60)
        )
        self.finish(b, t, child, run2, "Noted: error rate well under the threshold.")
        b.emit(
            "background.finished",
            t + b.s(1, 60),
            {"thread": child, "item": item, "status": "completed"},
        )
        return task

    def healthy_real_failure(self, b, n, parent, title, prompt):
        task, child = self.ids(n, "dry")
        at = self.t0()
        self.delegate(b, at, task, parent, child, title, prompt, "wait")
        run1, t = self.run(
            b,
            at + b.ms(40, 80),
            child,
            1,
            {"kind": "delegation", "task": task},
            b.rng.randint(4, 8),
            (30, 900),
        )
        self.report(b, at + b.ms(300, 900), task, "running", "working")
        error = b.rng.choice(REAL_ERRORS)
        self.finish(b, t, child, run1, error, "failed", error)
        self.report(b, t + b.ms(100, 300), task, "failed", "result_available", error, run1, error)
        self.hand_to_parent(b, t + b.ms(350, 600), parent, task, child, error, "failed")
        return task

    def stale(self, b, n, parent, title, prompt):
        """Seed 000: finalized on run 1's interim text in the gap before the wake run."""
        task, child = self.ids(n, "stale")
        at = self.t0()
        self.delegate(b, at, task, parent, child, title, prompt)
        run1, t = self.run(
            b, at + b.ms(40, 80), child, 1, {"kind": "delegation", "task": task}, 2, (60, 600)
        )
        item = f"{child}:bg:suite"
        b.emit(
            "background.started",
            t - b.s(5, 40),
            {
                "thread": child,
                "item": item,
                "kind": "command",
                "run": run1,
                "label": "pytest -q tests/ (long)",
                "awaited": True,
            },
        )
        interim = b.rng.choice(INTERIM)
        self.finish(b, t, child, run1, interim)
        self.report(b, t + b.ms(100, 300), task, "waiting", "waiting_for_children")
        t = t + b.s(60, 900)
        b.emit("background.finished", t, {"thread": child, "item": item, "status": "completed"})
        # The race: completed on the stale snapshot, the parent woken with run 1's text ...
        gap_at = t + b.ms(20, 1500)
        self.report(b, gap_at, task, "completed", "result_available", interim, run1)
        self.hand_to_parent(b, gap_at + b.ms(5, 100), parent, task, child, interim)
        # ... and the wake run registered 60 ms to 3 s after the finalization.
        run2, t = self.background_wake_run(
            b, gap_at + b.ms(60, 2900), child, item, 2, 1, (10, 300), direct=b.rng.random() < 0.3
        )
        if b.rng.random() < 0.3:  # run 2 starts another awaited item: a run 3 follows
            item2 = f"{child}:bg:review"
            b.emit(
                "background.started",
                t - b.s(2, 8),
                {
                    "thread": child,
                    "item": item2,
                    "kind": "subagent",
                    "run": run2,
                    "label": "reviewer",
                    "awaited": True,
                },
            )
            self.finish(b, t, child, run2, "Suite passed. Waiting on the reviewer.")
            t = t + b.s(30, 600)
            b.emit(
                "background.finished", t, {"thread": child, "item": item2, "status": "completed"}
            )
            run2, t = self.background_wake_run(b, t + b.ms(40, 300), child, item2, 3, 1, (10, 200))
        self.finish(
            b, t, child, run2, f"All checks green, review addressed. PR #{n} is ready to merge."
        )
        for kind in STALE_KINDS:
            self.expected.add((task, kind))
        return task

    def transient(self, b, n, parent, title, prompt, duplicate_n=None):
        """Seed 002 a1: failed on a passing fault; the parent continues the child. With
        `duplicate_n`, the parent also delegates the same work again while it runs (a2)."""
        task, child = self.ids(n, "flaky")
        at = self.t0()
        self.delegate(b, at, task, parent, child, title, prompt, "wait")
        run1, t = self.run(
            b,
            at + b.ms(40, 80),
            child,
            1,
            {"kind": "delegation", "task": task},
            b.rng.randint(2, 4),
            (30, 600),
        )
        self.report(b, at + b.ms(300, 900), task, "running", "working")
        error = b.rng.choice(TRANSIENT_ERRORS)
        self.finish(b, t, child, run1, error, "failed", error)
        self.report(b, t + b.ms(100, 300), task, "failed", "result_available", error, run1, error)
        self.hand_to_parent(b, t + b.ms(350, 600), parent, task, child, error, "failed")
        # The parent continues the child with a message: a run that is not owned.
        t2 = t + b.s(20, 300)
        run2, t3 = self.run(b, t2, child, 2, {"kind": "message"}, b.rng.randint(2, 4), (120, 900))
        final = f"Reviewed and fixed it after the retry (#{n}); tests pass."
        self.finish(b, t3, child, run2, final)
        self.hand_to_parent(b, t3 + b.ms(150, 400), parent, task, child, final)
        for kind in TRANSIENT_KINDS:
            self.expected.add((task, kind))
        self.shapes[task] = "transient_failure"
        if duplicate_n is None:
            return task
        # a2: the same work delegated again while the continued child still runs.
        dup, dchild = self.ids(duplicate_n, "flaky")
        b2 = Builder(self.events, b.rng, f"t{duplicate_n:05d}")
        dat = t2 + b.s(1, 60)
        self.delegate(b2, dat, dup, parent, dchild, title, prompt, "wait")
        drun, dt = self.run(
            b2,
            dat + b2.ms(40, 80),
            dchild,
            1,
            {"kind": "delegation", "task": dup},
            b2.rng.randint(4, 8),
            (120, 900),
        )
        self.report(b2, dat + b2.ms(300, 900), dup, "running", "working")
        dfinal = f"Done. Another writer had changed the files already (#{duplicate_n})."
        self.finish(b2, dt, dchild, drun, dfinal)
        self.report(b2, dt + b2.ms(100, 300), dup, "completed", "result_available", dfinal, drun)
        self.hand_to_parent(b2, dt + b2.ms(350, 600), parent, dup, dchild, dfinal)
        for kind in DUPLICATE_KINDS:
            self.expected.add((dup, kind))
        self.shapes[dup] = "duplicate"
        return task

    def build(self, stale: float, transient: float, duplicate: float) -> History:
        rng = self.rng
        n_stale = round(self.n_tasks * stale)
        n_dup = round(self.n_tasks * duplicate)
        n_trans = max(round(self.n_tasks * transient), n_dup)
        n_healthy = self.n_tasks - n_stale - n_trans - n_dup
        if n_healthy < 0:
            raise ValueError("the shares add up to more than all tasks")
        plan = ["stale"] * n_stale + ["transient+dup"] * n_dup + ["transient"] * (n_trans - n_dup)
        healthy = [
            "healthy_background",
            "healthy_long_run",
            "healthy_monitor",
            "healthy_real_failure",
        ]
        plan += rng.choices(healthy, weights=[45, 35, 10, 10], k=n_healthy)
        rng.shuffle(plan)
        n = 0
        for shape in plan:
            parent = rng.choice(self.parents)
            topic, prompt = rng.choice(TOPICS)
            # Unique per task (one per parent would do): only real duplicates share both.
            title, prompt = f"{topic} ({n:05d})", f"{prompt} Ticket {n:05d}."
            b = Builder(self.events, rng, f"t{n:05d}")
            if shape == "transient+dup":
                self.transient(b, n, parent, title, prompt, duplicate_n=n + 1)
                n += 2
                continue
            task = getattr(self, shape.split("+")[0])(b, n, parent, title, prompt)
            self.shapes.setdefault(task, shape)
            n += 1
        self.events.sort(key=lambda e: (e["at"], e["id"]))
        if self.events[-1]["at"] > stamp(self.end):
            raise AssertionError("an event falls after `end`")
        return History(
            self.events, self.expected, self.shapes, self.parents, self.start, self.end, self.seed
        )


def generate(
    tasks: int = 5000,
    *,
    seed: int = 0,
    end: datetime | None = None,
    stale: float = 0.02,
    transient: float = 0.01,
    duplicate: float = 0.005,
    tasks_per_parent: int = 20,
) -> History:
    """The history of `tasks` delegated tasks (duplicates included), deterministic in
    `seed` and `end`; see the module's docstring for the shapes."""
    end = end or default_end()
    return Generator(tasks, seed, end, tasks_per_parent).build(stale, transient, duplicate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--end", help="RFC 3339 time of the last possible event (default: now - 90 min)"
    )
    parser.add_argument("--stale", type=float, default=0.02)
    parser.add_argument("--transient", type=float, default=0.01)
    parser.add_argument("--duplicate", type=float, default=0.005)
    parser.add_argument("--scenario", help="write a contract §7 scenario file here")
    parser.add_argument("--events", help="write the events as NDJSON here")
    args = parser.parse_args(argv)
    end = datetime.fromisoformat(args.end.replace("Z", "+00:00")) if args.end else None
    history = generate(
        args.tasks,
        seed=args.seed,
        end=end,
        stale=args.stale,
        transient=args.transient,
        duplicate=args.duplicate,
    )
    if args.scenario:
        with open(args.scenario, "w") as f:
            json.dump(history.scenario(), f, ensure_ascii=False)
    if args.events:
        with open(args.events, "w") as f:
            for event in history.events:
                f.write(json.dumps(event, ensure_ascii=False) + "\n")
    json.dump(history.summary(), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
