"""Fill a migrated PostgreSQL database with a large, consistent history, fast (COPY).

At --scale 1.0: 100,000 delegated tasks of a history (60% terminal, 40% open) plus
60,000 live tasks that are still running, so that 100,000 tasks are open (the beat
sweep's case of issue 10); about 1,000,000 runs, every event the rows name stored as an
`IngestedEvent` (about 3.8 million: each run's requested/started/finished events, the
delegations, reports, background items, wakes and thread sightings), their task
reports, 8,000 parent threads of 20 tasks each, one child thread per task, background
items, wakes (the background item's wake to the child, the result handed to the
parent), open flags on about 3% of the tasks (and a few thread flags), resolved ones on
about 8%, the change log, 4 environments, one namespace and two sources. Everything
scales with --scale.

Rows are written the way ingest (`supervisor/core/ingest/mirror.py`, `Mirror`) and the
evaluation would have written them: `known`, the current report on the task
(`status`, `reported_at`, `report_event`), every `*_event` column naming a stored event
whose `at` is the column's time, and the detection bookkeeping: `last_event_at` before
`evaluated_at` (nothing out of date), `next_check_at` set on open tasks to when their
idle time reaches `stuck_after` (30 min), and already due (a few seconds before the
reference time) on 1% of them: the steady state a beat sweep sees. The reference time
(`now`) is stored in the table `bench_size_meta`; measure against it.

Not through the ORM nor ingest: psycopg 3 `COPY ... FROM STDIN` into the tables
`manage.py migrate` made (ids given explicitly, sequences set after), then ANALYZE.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_size .venv/bin/python manage.py migrate
    .venv/bin/python bench/size_data.py --db postgres://postgres@127.0.0.1:5432/bench_size \
        --scale 0.1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg.copy import QueuedLibpqWriter

HISTORY_TASKS = 100_000  # at scale 1.0
LIVE_TASKS = 60_000  # open tasks added so that 100,000 are open at scale 1.0
TASKS_PER_PARENT = 20
ENVS = ("vm-lead", "vm-2", "laptop", "ci-runner")
KINDS_OPEN = (
    "stale_result",
    "premature_completion",
    "undelivered_result",
    "failed_while_running",
    "transient_failure",
    "duplicate_delegation",
    "dispatch_lag",
    "late_wake",
)
TOPICS = (
    "Port the retry loop",
    "Fix the flaky upload test",
    "Review the codemode change",
    "Bump the SDK",
    "Audit the VM lead agents",
    "Write the migration",
    "Profile the search endpoint",
    "Open the release PR",
    "Triage the nightly failures",
    "Update the docs",
)
SUMMARIES = (
    "Done: the suite passes, PR opened.",
    "Fixed and pushed; CI green.",
    "Reviewed the change; two fixes committed.",
    "Investigated; no regression found.",
)
NS_ID = 1
SOURCE_IDS = (1, 2)


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


class Tables:
    """One list of row tuples per table, in COPY column order."""

    COLUMNS = {
        "core_thread": "id thread_id title parent_thread_id provider model seen_at seen_event "
        "namespace_id evaluated_at last_event_at next_check_at",
        "core_task": "id task_id known title title_key title_hash mode prompt client_request_id "
        "parent_run_id target_env requested_at follow_up_of delegated_at delegated_event env "
        "status work_state summary result_run_id error pending_child_runs reported_at report_event "
        "namespace_id child_thread_id parent_thread_id evaluated_at last_event_at next_check_at",
        "core_run": "id run_id ordinal trigger_kind trigger_ref requested_at started_at "
        "finished_at status summary error last_activity_at env requested_event started_event "
        "finished_event activity_event namespace_id thread_id",
        "core_backgrounditem": "id item_id kind run_id label awaited started_at finished_at "
        "finish_status env started_event finished_event namespace_id thread_id",
        "core_wake": "id wake_id source_kind source_task source_thread source_item summary "
        "outcome queued_at delivered_at delivered_run env queued_event delivered_event "
        "namespace_id thread_id",
        "core_taskreport": "id event_id at status work_state summary result_run_id error "
        "pending_child_runs source_id task_id",
        "core_ingestedevent": "id event_id type at env data received_at source_id",
        "core_flag": "id subject_type subject_id kind state opened_at resolved_at "
        "resolve_reason acknowledged_at snoozed_until evidence suppressed acknowledged_by_id "
        "resolved_by_id namespace_id task_id",
        "core_change": "id at kind subject_type subject_id payload namespace_id",
    }

    def __init__(self):
        self.rows = {name: [] for name in self.COLUMNS}

    def add(self, table: str, *values) -> int:
        rows = self.rows[table]
        rows.append(values)
        return len(rows)


class Builder:
    def __init__(self, scale: float, seed: int, now: datetime):
        self.rng = random.Random(seed)
        self.now = now
        self.t = Tables()
        self.n_history = round(HISTORY_TASKS * scale)
        self.n_live = round(LIVE_TASKS * scale)
        self.event_seq = 0
        self.run_seq = 0
        self.thread_seq = 0
        self.wake_seq = 0
        self.item_seq = 0
        self.report_seq = 0
        self.flag_seq = 0
        self.change_seq = 0
        self.env_last: dict[str, datetime] = {}

    # -- pieces ------------------------------------------------------------------------

    def event(self, type_: str, at: datetime, env: str, data: str, source: int = 1) -> str:
        """Store one event (data: a JSON object's text); return its id."""
        self.event_seq += 1
        event_id = f"evt-{self.event_seq:08d}"
        received = at + timedelta(milliseconds=self.rng.randint(20, 400))
        self.t.add(
            "core_ingestedevent", self.event_seq, event_id, type_, at, env, data, received, source
        )
        seen = self.env_last.get(env)
        if seen is None or at > seen:
            self.env_last[env] = at
        return event_id

    def thread(self, thread_id, title, parent, at, env, last_event, next_check=None) -> int:
        self.thread_seq += 1
        data = json.dumps(
            {
                "thread": thread_id,
                "title": title,
                "parent_thread": parent,
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
            }
        )
        seen = self.event("thread.seen", at, env, data)
        self.t.add(
            "core_thread",
            self.thread_seq,
            thread_id,
            title,
            parent,
            "anthropic",
            "claude-sonnet-4-5",
            at,
            seen,
            NS_ID,
            last_event + timedelta(seconds=1),
            last_event,
            next_check,
        )
        return self.thread_seq

    def change(self, at, kind, subject_type, subject_id, payload="{}"):
        self.change_seq += 1
        self.t.add(
            "core_change", self.change_seq, at, kind, subject_type, subject_id, payload, NS_ID
        )

    def flag(self, subject_type, subject_id, task_pk, kind, opened, resolved=None, reason=None):
        self.flag_seq += 1
        state = "open" if resolved is None else "resolved"
        evidence = json.dumps(
            {
                "text": f"{kind} on {subject_id[-24:]}",
                "events": [f"evt-{self.rng.randint(1, self.event_seq):08d}"],
            }
        )
        self.t.add(
            "core_flag",
            self.flag_seq,
            subject_type,
            subject_id,
            kind,
            state,
            opened,
            resolved,
            reason,
            None,
            None,
            evidence,
            False,
            None,
            None,
            NS_ID,
            task_pk,
        )
        self.change(
            opened,
            "flag.opened",
            subject_type,
            subject_id,
            json.dumps({"flag": self.flag_seq, "kind": kind}),
        )
        if resolved is not None:
            self.change(
                resolved,
                "flag.resolved",
                subject_type,
                subject_id,
                json.dumps({"flag": self.flag_seq, "kind": kind}),
            )

    def report(
        self,
        task_pk,
        task_id,
        at,
        env,
        status,
        work_state,
        summary=None,
        result=None,
        error=None,
        pending=None,
        source=1,
    ):
        parts = {"task": task_id, "status": status}
        for key, value in (
            ("work_state", work_state),
            ("summary", summary),
            ("result_run", result),
            ("error", error),
        ):
            if value is not None:
                parts[key] = value
        event_id = self.event("task.reported", at, env, json.dumps(parts), source)
        self.report_seq += 1
        self.t.add(
            "core_taskreport",
            self.report_seq,
            event_id,
            at,
            status,
            work_state,
            summary,
            result,
            error,
            pending,
            source,
            task_pk,
        )
        return event_id

    def run(
        self,
        thread_pk,
        child,
        k,
        trigger_kind,
        trigger_ref,
        at,
        env,
        length_s,
        finish=True,
        status="completed",
        summary=None,
        error=None,
    ):
        """One run of `child`: returns (run id, when it finished or its last activity)."""
        run_id = f"{child}:run:{k}"
        trigger = {"kind": trigger_kind}
        if trigger_kind == "delegation":
            trigger["task"] = trigger_ref
        elif trigger_kind == "wake":
            trigger["wake"] = trigger_ref
        elif trigger_kind == "restart":
            trigger["run"] = trigger_ref
        requested = self.event(
            "run.requested",
            at,
            env,
            json.dumps({"thread": child, "run": run_id, "ordinal": k, "trigger": trigger}),
        )
        started_at = at + timedelta(milliseconds=self.rng.randint(30, 120))
        started = self.event(
            "run.started", started_at, env, f'{{"thread": "{child}", "run": "{run_id}"}}'
        )
        end = started_at + timedelta(seconds=length_s)
        finished_at = finished = activity_at = activity = None
        if finish:
            finished_at = end
            data = {"thread": child, "run": run_id, "status": status, "summary": summary}
            if error:
                data["error"] = error
            finished = self.event("run.finished", end, env, json.dumps(data))
        else:
            activity_at = end
            activity = self.event(
                "run.activity",
                end,
                env,
                json.dumps({"thread": child, "run": run_id, "note": "tool call"}),
            )
            status = summary = error = None
        self.run_seq += 1
        self.t.add(
            "core_run",
            self.run_seq,
            run_id,
            k,
            trigger_kind,
            trigger_ref,
            at,
            started_at,
            finished_at,
            status,
            summary,
            error,
            activity_at,
            env,
            requested,
            started,
            finished,
            activity,
            NS_ID,
            thread_pk,
        )
        return run_id, end

    def wake(
        self,
        wake_id,
        thread_pk,
        thread,
        kind,
        task,
        source_thread,
        item,
        summary,
        at,
        env,
        delivered_run=None,
        delivered=True,
    ):
        data = {"wake": wake_id, "thread": thread, "source": {"kind": kind}, "outcome": "completed"}
        if task:
            data["source"] |= {"task": task, "thread": source_thread}
        if item:
            data["source"]["item"] = item
        if summary:
            data["summary"] = summary
        queued = self.event("wake.queued", at, env, json.dumps(data))
        delivered_at = delivered_event = None
        if delivered:
            delivered_at = at + timedelta(milliseconds=self.rng.randint(40, 400))
            body = {"wake": wake_id} | ({"run": delivered_run} if delivered_run else {})
            delivered_event = self.event("wake.delivered", delivered_at, env, json.dumps(body))
        self.wake_seq += 1
        self.t.add(
            "core_wake",
            self.wake_seq,
            wake_id,
            kind,
            task,
            source_thread,
            item,
            summary,
            "completed",
            at,
            delivered_at,
            delivered_run,
            env,
            queued,
            delivered_event,
            NS_ID,
            thread_pk,
        )
        return delivered_at or at

    # -- the history ---------------------------------------------------------------------

    def build(self) -> None:
        rng, now = self.rng, self.now
        total = self.n_history + self.n_live
        n_parents = max(1, total // TASKS_PER_PARENT)
        start = now - timedelta(days=30)
        parents = []
        for i in range(n_parents):
            name = f"thread:coordinator-{i:05d}-{rng.getrandbits(24):06x}"
            at = start - timedelta(minutes=5)
            pk = self.thread(
                name,
                f"Coordinator {i}",
                None,
                at,
                ENVS[i % 2],
                now - timedelta(minutes=rng.randint(1, 600)),
            )
            parents.append((pk, name))
        # Shapes: history tasks are terminal (60%) or open (40%); live tasks are open.
        shapes = ["terminal" if rng.random() < 0.6 else "open" for _ in range(self.n_history)]
        shapes += ["live"] * self.n_live
        due_share = 0.01
        for n, shape in enumerate(shapes):
            parent_pk, parent = parents[n % n_parents]
            tag = f"{n:07d}"
            task_id = (
                f"node:delegated-task:command%3Amcp%3A{rng.getrandbits(32):08x}"
                f"%3Adelegate-task%3A{tag}"
            )
            child = f"thread:delegated-task:{tag}"
            topic = TOPICS[rng.randrange(len(TOPICS))]
            title = f"{topic} #{n}"
            prompt = f"{topic}: see the ticket, run the suite and report back. (#{n})"
            env = ENVS[rng.randrange(len(ENVS))]
            target_env = env if rng.random() < 0.2 else None
            if shape == "terminal":
                at = start + timedelta(seconds=rng.uniform(0, 29 * 86400))
            elif shape == "open":
                at = now - timedelta(hours=rng.uniform(0.5, 6))
            else:
                at = now - timedelta(minutes=rng.uniform(2, 28))
            source = SOURCE_IDS[0] if n % 10 else SOURCE_IDS[1]
            self.task(
                n,
                shape,
                task_id,
                child,
                title,
                prompt,
                env,
                target_env,
                at,
                parent_pk,
                parent,
                source,
                due_share,
            )
        # Thread flags on a few coordinators; a resolved silence of the second source.
        for _pk, name in parents[:: max(1, n_parents // 40)]:
            self.flag("thread", name, None, "orphan_wake", now - timedelta(hours=2))
        self.flag(
            "source",
            "orchestrator-b",
            None,
            "source_silent",
            now - timedelta(days=3),
            now - timedelta(days=3) + timedelta(minutes=20),
            "events again",
        )

    def task(
        self,
        n,
        shape,
        task_id,
        child,
        title,
        prompt,
        env,
        target_env,
        at,
        parent_pk,
        parent,
        source,
        due_share,
    ):
        rng, now = self.rng, self.now
        delegated = self.event(
            "task.delegated",
            at,
            env,
            json.dumps(
                {
                    "task": task_id,
                    "parent_thread": parent,
                    "child_thread": child,
                    "title": title,
                    "mode": "async",
                    "prompt": prompt,
                }
            ),
            source,
        )
        task_pk = n + 1
        # The child thread row is written after its last event is known (below).
        reports = []
        t = at + timedelta(milliseconds=rng.randint(40, 80))
        if shape == "terminal":
            # 0.5%: a long-lived child with many continuations.
            n_runs = rng.randint(150, 300) if rng.random() < 0.005 else rng.randint(1, 22)
        elif shape == "open":
            n_runs = rng.randint(1, 5)
        else:
            n_runs = rng.randint(1, 3)
        child_pk = self.thread_seq + 1  # reserved: written below with this id
        self.thread_seq += 1
        run_ids = []
        roll = rng.random()
        outcome = "completed" if roll < 0.85 else "failed" if roll < 0.95 else "cancelled"
        final = rng.choice(SUMMARIES) if outcome == "completed" else None
        with_item = shape == "terminal" and n_runs >= 2 and rng.random() < 0.5
        for k in range(1, n_runs + 1):
            last = k == n_runs
            if k == 1:
                kind, ref = "delegation", task_id
            elif k == 2 and with_item:
                item = f"{child}:bg:checks"
                self.item_seq += 1
                s_at = t - timedelta(seconds=rng.uniform(5, 30))
                started = self.event(
                    "background.started",
                    s_at,
                    env,
                    json.dumps(
                        {
                            "thread": child,
                            "item": item,
                            "kind": "command",
                            "run": run_ids[0],
                            "label": "gh pr checks --watch",
                            "awaited": True,
                        }
                    ),
                )
                f_at = t + timedelta(seconds=rng.uniform(60, 600))
                finished = self.event(
                    "background.finished",
                    f_at,
                    env,
                    json.dumps({"thread": child, "item": item, "status": "completed"}),
                )
                self.t.add(
                    "core_backgrounditem",
                    self.item_seq,
                    item,
                    "command",
                    run_ids[0],
                    "gh pr checks --watch",
                    True,
                    s_at,
                    f_at,
                    "completed",
                    env,
                    started,
                    finished,
                    NS_ID,
                    child_pk,
                )
                wake_id = f"{child}:wake:2"
                self.wake(
                    wake_id,
                    child_pk,
                    child,
                    "background",
                    None,
                    None,
                    item,
                    None,
                    f_at + timedelta(milliseconds=10),
                    env,
                    f"{child}:run:2",
                )
                t = f_at + timedelta(milliseconds=rng.randint(40, 300))
                kind, ref = "wake", wake_id
            else:
                kind, ref = "restart", run_ids[-1]  # a continuation of the previous run
            if k == 1:
                reports.append(
                    self.report(
                        task_pk,
                        task_id,
                        t + timedelta(milliseconds=200),
                        env,
                        "running",
                        "working",
                        source=source,
                    )
                )
            if shape == "terminal" or not last:
                length = rng.uniform(20, 900)
                status, summary, error = "completed", "Working on it; more to do.", None
                if last:
                    status, summary = outcome, final
                    error = "tests failed: 3 of 412" if outcome == "failed" else None
                run_id, end = self.run(
                    child_pk,
                    child,
                    k,
                    kind,
                    ref,
                    t,
                    env,
                    length,
                    status=status,
                    summary=summary,
                    error=error,
                )
                t = end + timedelta(seconds=rng.uniform(5, 3600) if not last else 0.2)
                if shape != "terminal" and k == n_runs - 1:
                    # Open tasks: the last run started recently.
                    t = max(t, now - timedelta(minutes=rng.uniform(5, 40)))
            else:
                # Open: the last run is still running, with recent activity.
                idle = rng.uniform(0.5, 25) if rng.random() > 0.02 else rng.uniform(31, 90)
                last_activity = max(now - timedelta(minutes=idle), t + timedelta(seconds=20))
                last_activity = min(last_activity, now - timedelta(seconds=1))
                t = min(t, last_activity - timedelta(seconds=10))
                length = (last_activity - t).total_seconds() - 0.1
                run_id, end = self.run(
                    child_pk, child, k, kind, ref, t, env, max(length, 1), finish=False
                )
            run_ids.append(run_id)
        # The current report, the result handed to the parent.
        status, work_state, summary, result, error = "running", "working", None, None, None
        next_check = None
        stuck = False
        if shape == "terminal":
            status, work_state = outcome, None
            if outcome == "completed":
                work_state, summary, result = "result_available", final, run_ids[-1]
            elif outcome == "failed":
                error = "tests failed: 3 of 412"
            report_at = end + timedelta(milliseconds=rng.randint(100, 300))
            report_event = self.report(
                task_pk,
                task_id,
                report_at,
                env,
                status,
                work_state,
                summary,
                result,
                error,
                source=source,
            )
            last_event = report_at
            if status == "completed":
                last_event = self.wake(
                    f"{parent}:wake:{n}",
                    parent_pk,
                    parent,
                    "task",
                    task_id,
                    child,
                    None,
                    summary,
                    report_at + timedelta(milliseconds=400),
                    env,
                )
        else:
            report_event = reports[-1]
            report_at = self.t.rows["core_taskreport"][-1][2]
            last_event = end
            stuck = (now - end) > timedelta(minutes=30)
            if not stuck:
                next_check = end + timedelta(minutes=30)
                if rng.random() < due_share:
                    next_check = now - timedelta(seconds=rng.uniform(1, 50))
        received = last_event + timedelta(milliseconds=500)
        seen_at = at + timedelta(milliseconds=rng.randint(1, 20))
        seen = self.event(
            "thread.seen",
            seen_at,
            env,
            json.dumps(
                {
                    "thread": child,
                    "title": title,
                    "parent_thread": parent,
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                }
            ),
            source,
        )
        self.t.add(
            "core_thread",
            child_pk,
            child,
            title,
            parent,
            "anthropic",
            "claude-sonnet-4-5",
            seen_at,
            seen,
            NS_ID,
            received + timedelta(seconds=1),
            received,
            None,
        )
        self.t.add(
            "core_task",
            task_pk,
            task_id,
            True,
            title,
            " ".join(title.split()),  # the title as the contract compares it
            hashlib.md5(" ".join(title.split()).encode()).hexdigest(),  # Task.hash_title
            "async",
            prompt,
            None,
            None,
            target_env,
            None,
            None,
            at,
            delegated,
            env,
            status,
            work_state,
            summary,
            result,
            error,
            None,
            report_at,
            report_event,
            NS_ID,
            child_pk,
            parent_pk,
            received + timedelta(seconds=1),
            received,
            next_check,
        )
        self.change(received, "task.updated", "task", task_id)
        self.change(at, "task.updated", "task", task_id)
        # Flags: ~3% open (stuck ones follow the data), ~8% resolved.
        if stuck:
            self.flag("task", task_id, task_pk, "stuck", end + timedelta(minutes=30))
        elif rng.random() < 0.03:
            kind = (
                KINDS_OPEN[rng.randrange(len(KINDS_OPEN))] if rng.random() < 0.7 else "stale_result"
            )
            self.flag("task", task_id, task_pk, kind, received + timedelta(seconds=2))
        if rng.random() < 0.08:
            kind = rng.choice(("stuck", "stale_result", "dispatch_lag", "premature_completion"))
            opened = at + timedelta(minutes=rng.uniform(1, 30))
            self.flag(
                "task",
                task_id,
                task_pk,
                kind,
                opened,
                opened + timedelta(minutes=rng.uniform(1, 60)),
                None,
            )


def load(url: str, scale: float, seed: int) -> dict:
    now = datetime.now(UTC).replace(microsecond=0)
    t0 = time.perf_counter()
    b = Builder(scale, seed, now)
    b.build()
    # The child threads were numbered as they came; COPY wants no gaps in meaning only.
    built = time.perf_counter() - t0
    counts = {name: len(rows) for name, rows in b.t.rows.items()}
    t1 = time.perf_counter()
    with psycopg.connect(url, autocommit=False) as conn:
        cur = conn.cursor()
        existing = cur.execute("SELECT count(*) FROM core_task").fetchone()[0]
        if existing:
            raise SystemExit(f"{url} already holds {existing} tasks: give a freshly migrated one")
        cur.execute("INSERT INTO core_namespace (id, name) VALUES (%s, %s)", (NS_ID, "default"))
        for pk, name in zip(SOURCE_IDS, ("orchestrator-a", "orchestrator-b"), strict=True):
            token = f"bench-size-token-{pk}"
            cur.execute(
                "INSERT INTO core_source (id, name, token_hash, token_prefix, scopes, settings, "
                "created_at, last_event_at, namespace_id, connector, connector_settings, "
                "internal, events_accepted, events_rejected) VALUES "
                "(%s, %s, %s, %s, 'ingest,read', '{}', %s, %s, %s, '', '{}', false, 0, 0)",
                (
                    pk,
                    name,
                    hashlib.sha256(token.encode()).hexdigest(),
                    token[:12],
                    now - timedelta(days=31),
                    now - timedelta(seconds=2),
                    NS_ID,
                ),
            )
        for i, (name, at) in enumerate(sorted(b.env_last.items()), start=1):
            cur.execute(
                "INSERT INTO core_environment (id, name, last_event_at, namespace_id) "
                "VALUES (%s, %s, %s, %s)",
                (i, name, at, NS_ID),
            )
        # Rows must reference threads and tasks that exist: parents first.
        b.t.rows["core_thread"].sort(key=lambda row: row[0])
        order = [
            "core_thread",
            "core_task",
            "core_taskreport",
            "core_run",
            "core_backgrounditem",
            "core_wake",
            "core_flag",
            "core_change",
            "core_ingestedevent",
        ]
        for name in order:
            columns = ", ".join(Tables.COLUMNS[name].split())
            with cur.copy(f"COPY {name} ({columns}) FROM STDIN") as copy:
                copy.writer = QueuedLibpqWriter(cur)
                for row in b.t.rows[name]:
                    copy.write_row(row)
        for name in [*order, "core_namespace", "core_source", "core_environment"]:
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                f"(SELECT coalesce(max(id), 1) FROM {name}))"
            )
        cur.execute(
            "CREATE TABLE IF NOT EXISTS bench_size_meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        meta = {"now": now.isoformat(), "scale": str(scale), "seed": str(seed)}
        for key, value in meta.items():
            cur.execute(
                "INSERT INTO bench_size_meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                "SET value = excluded.value",
                (key, value),
            )
        conn.commit()
        copied = time.perf_counter() - t1
        conn.autocommit = True
        t2 = time.perf_counter()
        conn.execute("ANALYZE")
        analyzed = time.perf_counter() - t2
    rows = sum(counts.values())
    open_tasks = sum(1 for row in b.t.rows["core_task"] if row[14] in ("running", "waiting"))
    due = sum(1 for row in b.t.rows["core_task"] if row[27] is not None and row[27] <= now)
    return {
        "scale": scale,
        "now": now.isoformat(),
        "counts": counts,
        "rows": rows,
        "open_tasks": open_tasks,
        "due_tasks": due,
        "generate_s": round(built, 1),
        "copy_s": round(copied, 1),
        "analyze_s": round(analyzed, 1),
        "rows_per_s": round(rows / copied),
        "rows_per_s_with_generation": round(rows / (built + copied)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="postgres:// URL of a migrated, empty database")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = load(args.db, args.scale, args.seed)
    print(json.dumps(result))
    print(
        f"loaded {result['rows']:,} rows in {result['copy_s']} s of COPY "
        f"({result['rows_per_s']:,} rows/s; {result['rows_per_s_with_generation']:,} rows/s "
        f"counting the {result['generate_s']} s of generation); ANALYZE {result['analyze_s']} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
