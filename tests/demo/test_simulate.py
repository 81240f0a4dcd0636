"""The simulated orchestrator: a deterministic fleet whose expected flags are exactly the
ones Supervisor opens, the `simulate` command over the real HTTP API (and answering
actions as a webhook receiver), and the in-process connector's answers."""

import json
import os
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import transaction

from supervisor.connectors.webhook.connector import WebhookConnector
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions import sending
from supervisor.core.actions.writers import do_request_action
from supervisor.core.contract.connectors import Outgoing, SettingsError, connector_for
from supervisor.core.contract.events import parse_event, parse_timestamp
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.scenario import Scenario, ThrowAwayStore, differences, replay
from supervisor.core.facts import continued, ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Flag, IngestedEvent, Run, Task, Wake
from supervisor.core.rules.account_limit import account_limit_words
from supervisor.core.rules.transient_failure import passing_fault
from supervisor.demo.fleet import (
    ACCOUNT_LIMITS,
    FAILURES,
    PAIRED,
    REAL_FAILURES,
    TRANSIENT_ERRORS,
    Fleet,
)
from supervisor.demo.sending import ApiSink
from supervisor.jobs import operator_actions
from tests.support import workers
from tests.support.simulator.connector import SimulatorConnector

ROOT = Path(__file__).resolve().parents[2]
SECRET = "0123456789abcdef-simulator"


def stream(fleet: Fleet) -> list[dict]:
    return [event for _, event in fleet.events()]


def expected_open(manifest: dict) -> dict:
    """{(subject type, id): sorted kinds} the manifest expects open, empty ones left out."""
    expected = {("task", t["task"]): sorted(t["expected_flags"]) for t in manifest["tasks"]}
    expected |= {("thread", k): sorted(v) for k, v in manifest["threads"].items()}
    return {subject: kinds for subject, kinds in expected.items() if kinds}


def open_flags(namespace_id: int) -> dict:
    found = defaultdict(list)
    for subject_type, subject_id, kind in Flag.objects.filter(
        namespace_id=namespace_id, state=Flag.OPEN, subject_type__in=("task", "thread")
    ).values_list("subject_type", "subject_id", "kind"):
        found[(subject_type, subject_id)].append(kind)
    return {subject: sorted(kinds) for subject, kinds in found.items()}


def ingest(source, events: list[dict]) -> None:
    for start in range(0, len(events), 1000):
        with transaction.atomic():
            apply_events(source, events[start : start + 1000])


def evaluate_at(namespace_id: int, until) -> None:
    with clock.virtual_clock(until):
        evaluate(namespace_id, until)


# --- the fleet ------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_events_and_tasks():
    first, second = Fleet(5, tasks=15, failure_rate=0.5), Fleet(5, tasks=15, failure_rate=0.5)
    assert stream(first) == stream(second)
    assert first.manifest() == second.manifest()
    other = Fleet(6, tasks=15, failure_rate=0.5)
    assert stream(other) != stream(Fleet(5, tasks=15, failure_rate=0.5))


def test_events_are_valid_in_time_order_with_unique_ids_per_seed():
    timed = list(Fleet(5, tasks=15, failure_rate=0.5).events())
    assert [t for t, _ in timed] == sorted(t for t, _ in timed)
    ids = [event["id"] for _, event in timed]
    assert len(ids) == len(set(ids))
    for _, event in timed:
        parse_event(event)  # raises on anything outside the contract
        assert event["at"].endswith("Z") and event["env"]
    # Two seeds in one namespace do not collide on events, tasks or threads.
    one, two = Fleet(5, tasks=5), Fleet(6, tasks=5)
    ids_one, ids_two = {e["id"] for e in stream(one)}, {e["id"] for e in stream(two)}
    assert not ids_one & ids_two
    assert not {t.task for t in one.tasks} & {t.task for t in two.tasks}


def test_remote_children_report_from_their_environment_on_a_skewed_clock():
    fleet = Fleet(149, tasks=3, opening=["remote_monitor"])
    events = stream(fleet)
    remote = [t for t in fleet.tasks if t.child_env != t.env and t.parent_task is None]
    assert remote, "a remote monitor's child is remote"
    task = remote[0]
    child_events = [e for e in events if e["data"].get("thread") == task.child_thread]
    assert child_events and {e["env"] for e in child_events} == {task.child_env}
    delegated = next(e for e in events if e["data"].get("task") == task.task)
    assert delegated["data"]["target_env"] == task.child_env
    assert 0.5 <= abs(fleet.skew[task.child_env]) <= 4


def test_failure_texts_read_as_the_contract_says():
    assert all(passing_fault(text) for text in TRANSIENT_ERRORS)
    assert not any(passing_fault(text.format(ref="#1001")) for text in REAL_FAILURES)
    assert all(account_limit_words(text) for text in ACCOUNT_LIMITS)
    assert not any(account_limit_words(text) for text in TRANSIENT_ERRORS)
    assert not any(account_limit_words(text.format(ref="#1001")) for text in REAL_FAILURES)


@pytest.mark.slow
def test_a_fleet_with_every_failure_raises_exactly_its_expected_flags(db):
    """The main check: replayed in order on a virtual clock (contract §7), the kinds raised
    at any time are exactly each task's expected and passing ones, and the kinds open at
    the end exactly its expected ones."""
    # Each failure once, the paired ones with their healthy first.
    fleet = Fleet(149, tasks=len(FAILURES) + len(PAIRED), failure_rate=1.0, opening=FAILURES)
    document = fleet.as_scenario()
    assert {task.failure for task in fleet.tasks} >= set(FAILURES)
    late = next(t for t in fleet.tasks if t.failure == "late_wake")
    assert late.passing_flags == ["late_wake"] and late.expected_flags == []
    assert document["expect"]["tasks"][late.task] == ["late_wake"]
    assert document["expect_open"]["tasks"][late.task] == []
    scenario = Scenario(
        name=document["name"],
        events=document["events"],
        settings=document["settings"],
        until=parse_timestamp(document["until"]),
        expect=document["expect"],
        expect_open=document["expect_open"],
    )
    with ThrowAwayStore():
        result = replay(scenario)
    assert differences(scenario, result) == []
    raised = {task: r["raised"] for task, r in result["tasks"].items() if r["raised"]}
    assert set(raised) == {t.task for t in fleet.tasks if t.expected_flags or t.passing_flags}
    assert raised[late.task] == ["late_wake"] and result["tasks"][late.task]["open"] == []
    stuck = next(t for t in fleet.tasks if t.failure == "stuck")
    assert result["tasks"][stuck.task]["open"] == ["stuck"]
    assert result["threads"] and any(r["raised"] for r in result["threads"].values())


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_fleets_open_exactly_their_expected_flags_at_their_end(db, seed):
    fleet = Fleet(seed, tasks=20, failure_rate=0.4)
    events = stream(fleet)
    source, _ = do_create_source(f"fleet-{seed}")
    ingest(source, events)
    manifest = fleet.manifest()
    evaluate_at(source.namespace_id, parse_timestamp(manifest["until"]))
    assert expected_open(manifest), f"seed {seed} carries failures"
    assert open_flags(source.namespace_id) == expected_open(manifest)
    assert Task.objects.filter(namespace_id=source.namespace_id, known=True).count() == 20


# --- the command over HTTP -------------------------------------------------------------


def simulate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    command = [sys.executable, "manage.py", "simulate", *args]
    env = {**os.environ, **workers.test_database_env()}
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_command_sends_a_fleet_over_the_http_api(live_server, tmp_path):
    source, token = do_create_source("simulated-http")
    manifest_file = tmp_path / "fleet.json"
    args = ["--url", live_server.url, "--token", token, "--seed", "7", "--tasks", "12"]
    result = simulate(*args, "--speed", "100000", "--manifest", str(manifest_file))
    assert result.returncode == 0, result.stderr
    assert "seed 7" in result.stdout
    manifest = json.loads(manifest_file.read_text())
    assert manifest["complete"] and manifest["seed"] == 7
    known = set(
        Task.objects.filter(namespace_id=source.namespace_id, known=True).values_list(
            "task_id", flat=True
        )
    )
    assert known == {task["task"] for task in manifest["tasks"]} and len(known) == 12
    evaluate_at(source.namespace_id, parse_timestamp(manifest["until"]))
    expected = expected_open(manifest)
    assert expected, "seed 7 carries failures"
    assert open_flags(source.namespace_id) == expected

    # The same seed again: every event is a duplicate, nothing is doubled.
    stored = IngestedEvent.objects.filter(source=source).count()
    again = simulate(*args, "--speed", "100000")
    assert again.returncode == 0, again.stderr
    assert "accepted 0," in again.stdout
    assert IngestedEvent.objects.filter(source=source).count() == stored


@pytest.mark.django_db(transaction=True)
def test_the_command_stops_with_a_clear_message_on_a_bad_token(live_server):
    result = simulate("--url", live_server.url, "--token", "sup_wrong", "--tasks", "2")
    assert result.returncode != 0
    assert "token" in result.stderr and "401" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_command_stops_with_a_clear_message_when_supervisor_is_unreachable():
    result = simulate("--url", "http://127.0.0.1:9", "--token", "sup_x", "--tasks", "2")
    assert result.returncode != 0
    assert "cannot reach Supervisor" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.django_db(transaction=True)
def test_the_command_answers_webhook_actions_once_and_stops_on_ctrl_c(live_server, tmp_path):
    source, token = do_create_source("simulated-webhook")
    manifest_file = tmp_path / "fleet.json"
    command = [
        sys.executable,
        "manage.py",
        "simulate",
        *("--url", live_server.url, "--token", token, "--seed", "3", "--tasks", "3"),
        *("--speed", "100000", "--manifest", str(manifest_file)),
        *("--listen", "127.0.0.1:0", "--secret", SECRET),
    ]
    env = {**os.environ, **workers.test_database_env(), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = None
        for line in process.stdout:
            if line.startswith("Answering actions on "):
                url = line.split()[-1]
            if line.startswith("The fleet is done"):
                break
        assert url, process.stderr.read()
        task = json.loads(manifest_file.read_text())["tasks"][0]
        runs = Run.objects.filter(thread__thread_id=task["parent_thread"])
        before = max(runs.values_list("ordinal", flat=True))
        outgoing = outgoing_for(
            "deliver",
            Task.objects.get(namespace=source.namespace, task_id=task["task"]),
            task["parent_thread"],
            text="[Delivered by hand]\n\nThe result.",
        )
        webhook = WebhookConnector(source, {"url": url, "secret": SECRET, "timeout": 10})
        first = webhook.perform(outgoing, timeout=10)
        assert first.status == "200" and not first.duplicate
        wake = workers.wait_for(
            lambda: Wake.objects.filter(source_kind="manual", source_task=task["task"]).first(),
            what="the manual wake",
        )
        assert wake.thread.thread_id == task["parent_thread"]
        assert Run.objects.get(run_id=wake.delivered_run).ordinal == before + 1
        second = webhook.perform(outgoing, timeout=10)
        assert second.duplicate
        assert Wake.objects.filter(source_kind="manual").count() == 1
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    assert process.returncode == 130
    assert "Stopped (Ctrl-C)." in err and "Traceback" not in err


def test_the_command_answers_a_continue_with_a_run_the_task_owns(live_server, tmp_path):
    """The demo fleet, answering Supervisor's continue over the webhook (real loopback
    HTTP both ways): the run it starts names the continue's manual wake, which Supervisor
    records itself; the task owns the run, and what is left is to deliver its result."""
    source, token = do_create_source("simulated-continue", scopes="ingest,read,act")
    manifest_file = tmp_path / "fleet.json"
    command = [
        sys.executable,
        "manage.py",
        "simulate",
        *("--url", live_server.url, "--token", token, "--seed", "3", "--tasks", "3"),
        *("--speed", "100000", "--manifest", str(manifest_file)),
        *("--listen", "127.0.0.1:0", "--secret", SECRET),
    ]
    env = {**os.environ, **workers.test_database_env(), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = None
        for line in process.stdout:
            if line.startswith("Answering actions on "):
                url = line.split()[-1]
            if line.startswith("The fleet is done"):
                break
        assert url, process.stderr.read()
        source.connector = "webhook"
        source.connector_settings = {"url": url, "secret": SECRET, "timeout": 10}
        source.save()
        entry = json.loads(manifest_file.read_text())["tasks"][0]
        task = Task.objects.select_related("namespace").get(task_id=entry["task"])
        child = task.child_thread.thread_id
        before = max(Run.objects.filter(thread__thread_id=child).values_list("ordinal", flat=True))
        action, _ = do_request_action(task, "continue", actor="user:op", message="Go on.")
        assert operator_actions.perform(action.pk) == "succeeded"
        wake = Wake.objects.get(
            source_kind="manual", source_task=task.task_id, thread__thread_id=child
        )
        run = workers.wait_for(
            lambda: (
                Run.objects.filter(thread__thread_id=child, ordinal=before + 1)
                .exclude(finished_event=None)
                .first()
            ),
            what="the continued run's end",
        )
        assert (run.trigger_kind, run.trigger_ref) == ("wake", wake.wake_id)
        snap = load_for_task(task)
        view = snap.tasks[task.task_id]
        assert ownership.owning(snap, view, snap.runs[run.run_id]).owned
        left = continued.what_continued(snap, view, wake.wake_id)
        assert left.left == continued.DELIVER and left.deliver_run == run.run_id
        assert f"run {before + 1}" in left.did
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    assert process.returncode == 130
    assert "Traceback" not in err


class FlakyApi(BaseHTTPRequestHandler):
    """Answers 503 to the first post, then takes every post; keeps the bodies."""

    bodies: list[bytes] = []

    def do_POST(self):
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        status, body = (503, b'{"error": "busy"}') if len(self.bodies) == 1 else (200, b"{}")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_transient_refusal_is_sent_again_unchanged():
    FlakyApi.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    logged = []
    try:
        sink = ApiSink(f"http://127.0.0.1:{server.server_address[1]}", "sup_t", logged.append)
        sink.send(stream(Fleet(5, tasks=1))[:20])
    finally:
        server.shutdown()
        server.server_close()
    assert len(FlakyApi.bodies) == 2 and FlakyApi.bodies[0] == FlakyApi.bodies[1]
    assert "503" in logged[0] and "sending again" in logged[0]


# --- the in-process connector ---------------------------------------------------------


@pytest.fixture
def simulated(db):
    source, _ = do_create_source("simulated", scopes="ingest,read,act")
    source.connector = "simulator"
    source.save()
    return source


def outgoing_for(kind: str, task: Task, thread: str, **fields) -> Outgoing:
    """An action Supervisor sent (a worker took it once), as its connector gets it: the
    orchestrator may report back only the wake of an action that was sent."""
    action, _ = Action.objects.get_or_create(
        namespace_id=task.namespace_id,
        idempotency_key=f"sup-{kind}-1",
        defaults={
            "task": task,
            "kind": kind,
            "target_thread_id": thread,
            "run_id": fields.get("run_id"),
            "text": fields.get("text"),
            "reason": fields.get("reason"),
            "actor_name": "user:op",
            "state": Action.SENDING,
            "attempts": 1,
        },
    )
    return sending.outgoing_for(action)


def counts(source) -> tuple[int, int, int]:
    ns = source.namespace_id
    return (
        IngestedEvent.objects.filter(source=source).count(),
        Run.objects.filter(namespace_id=ns).count(),
        Wake.objects.filter(namespace_id=ns).count(),
    )


def stale_task(source) -> tuple[Task, Fleet]:
    """One task finalized on its interim text (seed 000), ingested."""
    fleet = Fleet(4, tasks=1, failure_rate=1.0, failures=["stale_finalize"])
    ingest(source, stream(fleet))
    return Task.objects.get(task_id=fleet.tasks[0].task), fleet


def test_the_registry_binds_the_simulator_and_checks_its_settings(simulated):
    assert isinstance(connector_for(simulated), SimulatorConnector)
    assert SimulatorConnector.check_settings({}) == {"reply_delay": 0.0}
    assert SimulatorConnector.check_settings({"reply_delay": 1.5}) == {"reply_delay": 1.5}
    for wrong, field in (
        ({"reply_delay": -1}, "reply_delay"),
        ({"reply_delay": True}, "reply_delay"),
        ({"reply_dealy": 1}, "reply_dealy"),
    ):
        with pytest.raises(SettingsError, match=field):
            SimulatorConnector.check_settings(wrong)


def test_deliver_wakes_the_parent_with_a_new_run_and_resolves_the_stale_result(simulated):
    task, fleet = stale_task(simulated)
    until = parse_timestamp(fleet.manifest()["until"])
    evaluate_at(simulated.namespace_id, until)
    assert open_flags(simulated.namespace_id)[("task", task.task_id)] == [
        "premature_completion",
        "stale_result",
        "undelivered_result",
    ]
    parent = task.parent_thread.thread_id
    before = max(Run.objects.filter(thread__thread_id=parent).values_list("ordinal", flat=True))
    latest = Run.objects.filter(thread=task.child_thread).order_by("-ordinal").first()
    text = f"[Result of {task.title}, delivered by hand]\n\n{latest.summary}"
    connector = connector_for(simulated)
    with clock.virtual_clock(until):
        receipt = connector.perform(outgoing_for("deliver", task, parent, text=text), timeout=5)
    assert receipt.status == "ok" and not receipt.duplicate
    wake = Wake.objects.get(source_kind="manual", source_task=task.task_id)
    assert wake.thread.thread_id == parent and wake.summary == text and wake.delivered_run
    run = Run.objects.get(run_id=wake.delivered_run)
    assert (run.thread.thread_id, run.ordinal) == (parent, before + 1)
    assert (run.trigger_kind, run.trigger_ref, run.started_at is not None) == (
        "wake",
        wake.wake_id,
        True,
    )
    evaluate_at(simulated.namespace_id, until)
    assert ("task", task.task_id) not in open_flags(simulated.namespace_id)

    stored = counts(simulated)
    with clock.virtual_clock(until):
        again = connector.perform(outgoing_for("deliver", task, parent, text=text), timeout=5)
    assert again.duplicate and counts(simulated) == stored


def test_continue_starts_a_new_child_run_by_its_manual_wake_that_completes(simulated):
    task, _ = stale_task(simulated)
    child = task.child_thread.thread_id
    before = max(Run.objects.filter(thread__thread_id=child).values_list("ordinal", flat=True))
    outgoing = outgoing_for("continue", task, child, text="Continue from where you stopped.")
    connector = connector_for(simulated)
    assert not connector.perform(outgoing, timeout=5).duplicate
    run = Run.objects.get(thread__thread_id=child, ordinal=before + 1)
    # Started by the manual wake Supervisor records the continue as: the task owns it.
    assert (run.trigger_kind, run.trigger_ref) == ("wake", outgoing.wake)
    wake = Wake.objects.get(wake_id=outgoing.wake)
    assert (wake.source_kind, wake.source_task, wake.thread.thread_id) == (
        "manual",
        task.task_id,
        child,
    )
    snap = load_for_task(task)
    assert ownership.owning(snap, snap.tasks[task.task_id], snap.runs[run.run_id]).owned
    assert run.status == "completed"
    assert run.started_at and "Continue from where you stopped." in run.summary
    stored = counts(simulated)
    assert connector.perform(outgoing, timeout=5).duplicate
    assert counts(simulated) == stored


def test_cancel_stops_the_active_child_run_and_reports_the_task_cancelled(simulated):
    at = "2026-11-02T10:00:00.000Z"
    ingest(
        simulated,
        [
            {
                "id": "c1",
                "type": "task.delegated",
                "at": at,
                "data": {
                    "task": "task:long",
                    "parent_thread": "thread:lead",
                    "child_thread": "thread:long",
                    "title": "A long job",
                    "mode": "async",
                },
            },
            {
                "id": "c2",
                "type": "run.requested",
                "at": at,
                "data": {
                    "thread": "thread:long",
                    "run": "thread:long:1",
                    "ordinal": 1,
                    "trigger": {"kind": "delegation", "task": "task:long"},
                },
            },
            {
                "id": "c3",
                "type": "run.started",
                "at": at,
                "data": {"thread": "thread:long", "run": "thread:long:1"},
            },
            {
                "id": "c4",
                "type": "task.reported",
                "at": at,
                "data": {"task": "task:long", "status": "running"},
            },
        ],
    )
    task = Task.objects.get(task_id="task:long")
    connector = connector_for(simulated)
    outgoing = outgoing_for("cancel", task, "thread:long", reason="not needed any more")
    assert not connector.perform(outgoing, timeout=5).duplicate
    run = Run.objects.get(run_id="thread:long:1")
    assert run.status == "cancelled" and "not needed any more" in run.summary
    task.refresh_from_db()
    assert task.status == "cancelled" and task.result_run_id == "thread:long:1"
    stored = counts(simulated)
    assert connector.perform(outgoing, timeout=5).duplicate
    assert counts(simulated) == stored
