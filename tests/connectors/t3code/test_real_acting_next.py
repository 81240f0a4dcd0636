"""Acting on the real T3 Code 0.0.33 server (the `t3code-next` kit), the whole loop as
`test_real_acting` has it: Supervisor follows the real database and judges, an operator
acts through the action pipeline and the T3 connector, and the real rows show what
happened. Where a kit scenario would act itself (`group` delivers its third result by
hand at its end, `cancel-queued` cancels and interrupts), the test plays its first half
on a server of its own with the kit's drivers and leaves the acting to Supervisor."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.previews import preview_action
from supervisor.core.actions.writers import do_request_action
from supervisor.core.models import Flag, Task
from supervisor.jobs import operator_actions
from tests.support.t3.acting import (
    deliver_across_a_crash,
    eventually,
    follow_and_judge,
    open_kinds,
    rows,
    user_messages,
)
from tests.support.t3.plays import KITS

pytestmark = [pytest.mark.real_t3, pytest.mark.django_db(transaction=True)]
PORTS = range(3800, 3900)  # the 0.0.33 kit's range (its README)


def drive_module():
    """The kit's own scenario drivers (lib/drive.py) and WebSocket client."""
    lib = str(KITS["0.0.33"].parent / "lib")
    if lib not in sys.path:
        sys.path.insert(0, lib)
    import drive

    return drive


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail("no free port in 3800-3899 for the 0.0.33 server")


class Served:
    """A scripted 0.0.33 server on a base dir of its own, with a token and a project."""

    def __init__(self, kit: Path, base: Path):
        self.kit, self.base = kit, base
        self.port = free_port()
        self.log = open(base.parent / f"{base.name}-server.log", "w")  # noqa: SIM115
        base.mkdir(parents=True)
        self.process = subprocess.Popen(
            [str(kit), "serve", "--scripted", "--port", str(self.port), "--base-dir", str(base)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.run(
            "wait", "--port", str(self.port), "--pid", str(self.process.pid), "--timeout", "90"
        )
        self.token = self.run("token", "--base-dir", str(base))
        self.project = self.run(
            "project", "--base-dir", str(base), "--workspace", str(base / "workspace")
        )
        self.db = str(base / "userdata" / "state.sqlite")

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.kit), *args], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"kit {args[0]}: {done.stdout[-1000:]}{done.stderr[-1000:]}"
        return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""

    def client(self):
        return drive_module().Client(self.port, self.token)

    def source(self):
        source, _ = do_create_source("t3-next", scopes="ingest,read,act")
        source.connector = "t3code"
        source.connector_settings = {
            "url": f"ws://127.0.0.1:{self.port}/ws",
            "token": self.token,
            "timeout": 10,
        }
        source.save()
        return source

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def served(kit_next, tmp_path):
    started: list[Served] = []

    def start(name: str) -> Served:
        server = Served(kit_next, tmp_path / name)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def delivery_state(base: Path, task_id: str) -> str | None:
    """The task's completionDelivery state in T3's own projection."""
    found = rows(
        base,
        "SELECT payload_json FROM orchestration_v2_projection_subagents "
        "WHERE json_extract(payload_json, '$.id') = ?",
        task_id,
    )
    if not found:
        return None
    return (json.loads(found[0][0]).get("completionDelivery") or {}).get("state")


def test_deliver_of_a_starved_group_child_reaches_the_parent_once_and_disposes_t3s_delivery(
    served, monkeypatch
):
    drive = drive_module()
    t3 = served("group")
    # The first half of the kit's `group`: three children in one parent run, finishing in
    # three waves; T3 wakes the parent for two and leaves the third pending for good.
    specs = [
        ("Lint", 1000, "Lint clean."),
        ("Unit tests", 4500, "Unit tests: 212 passed."),
        ("Integration tests", 9000, "Integration tests: 31 passed, 0 failed."),
    ]
    text = "Run the three checks in child tasks, then end this turn. "
    text += "".join(f"[t3kit:title={title}] " for title, _, _ in specs)
    for title, delay, reply in specs:
        child = f"Run the {title.lower()}. [t3kit:delay={delay}] [t3kit:reply={reply}]"
        text += f"[t3kit:delegate={drive.nested(child)}] "
    text += "[t3kit:reply=Delegated the three checks; ending this turn.]"
    with t3.client() as c:
        d = drive.Driver(c, type("Args", (), {})())
        parent = drive.create_thread(c, t3.project, "supervisor: check fan-out", drive.SCRIPTED)
        drive.send_message(c, parent, text)

        def starved():
            subs = d.parent_subagents(parent)
            done = len(subs) == 3 and all(s["status"] == "completed" for s in subs)
            return subs if done and drive.all_terminal(d.runs(parent)) else None

        subs = d.wait("all three tasks to finish and the parent to idle", starved, 90)
        time.sleep(3.0)  # a third wake would have been reserved by now
        subs = d.parent_subagents(parent)
    by_title = {s["title"]: s for s in subs}
    third = by_title["Integration tests"]["id"]
    assert delivery_state(t3.base, third) == "pending", subs
    before = user_messages(t3.base, parent)

    source = t3.source()
    at = clock.now() + timedelta(hours=2)
    follow_and_judge(source, t3.base, at)
    assert "never_delivered" in open_kinds(third)

    task = Task.objects.select_related("namespace", "parent_thread").get(task_id=third)
    with clock.virtual_clock(at):
        action, created = do_request_action(task, "deliver", actor="user:op")
        assert created
    # The worker is killed after T3 took the message and the dispose; the next one sends
    # both again, under the same command ids, and T3 answers each with its first receipt.
    sent, done_at = deliver_across_a_crash(action, at, monkeypatch)
    for kind in ("message.dispatch", "delegated_task.completion-delivery.dispose"):
        (command, first), (again, second) = sent[kind]
        assert again == command
        assert isinstance(first, dict) and isinstance(first.get("sequence"), int), (kind, first)
        assert second == first, kind
    assert action.response["notes"] == [
        "T3's own pending delivery of the task: disposed, so T3 will not wake the parent "
        "with this result"
    ], action.response
    assert action.text.endswith("Integration tests: 31 passed, 0 failed.")

    def new_messages():
        return user_messages(t3.base, parent)[len(before) :]

    assert eventually(new_messages, lambda m: len(m) >= 1) == [action.text]
    assert eventually(lambda: delivery_state(t3.base, third), lambda s: s == "disposed") == (
        "disposed"
    )

    # T3 runs the parent on the delivery; once it has settled, nothing more came.
    def parent_settled():
        return (
            rows(
                t3.base,
                "SELECT COUNT(*) FROM orchestration_v2_projection_runs "
                "WHERE thread_id = ? AND status NOT IN ('completed', 'failed', 'interrupted', "
                "'cancelled')",
                parent,
            )[0][0]
            == 0
        )

    assert eventually(parent_settled, bool, timeout=30)
    time.sleep(1.0)
    assert new_messages() == [action.text]
    follow_and_judge(source, t3.base, done_at + timedelta(minutes=5))
    assert open_kinds(third) == set()


def test_an_acknowledged_read_is_followed_and_judged_without_a_flag(served, kit_next, tmp_path):
    base = tmp_path / "ack-in-run"
    done = subprocess.run(
        [str(kit_next), "scenario", "ack-in-run", "--base-dir", str(base)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
    played = json.loads((base / "scenario.json").read_text())
    assert (played["tasks"][0]["completionDelivery"] or {}).get("state") == "acknowledged"
    source, _ = do_create_source("t3-next", scopes="ingest,read")
    follow_and_judge(source, base, clock.now() + timedelta(hours=2))
    task = Task.objects.get(task_id=played["taskId"])
    assert task.status == "completed"
    assert list(Flag.objects.filter(state="open").values_list("kind", "task__task_id")) == []


def test_cancel_of_a_child_with_queued_work_cancels_it_before_stopping_the_held_run(served):
    drive = drive_module()
    t3 = served("cancel-queued")
    # The first half of the kit's `cancel-queued`: a child holds its run 1 while two
    # messages queue behind it.
    with t3.client() as c:
        d = drive.Driver(c, type("Args", (), {})())
        parent = drive.create_thread(c, t3.project, "supervisor: long job", drive.SCRIPTED)
        drive.send_message(
            c,
            parent,
            drive.delegate_text(
                "Start the long job in a child, then end this turn.",
                "Long job",
                "Run the long job. [t3kit:hold]",
                "Delegated the long job.",
            ),
        )

        def running():
            subs = d.parent_subagents(parent)
            if subs:
                runs = d.runs(subs[0]["childThreadId"])
                if runs and runs[0]["status"] == "running":
                    return subs[0]
            return None

        sub = d.wait("the child's run 1 to be running", running, 30)
        child = sub["childThreadId"]
        drive.send_message(c, child, "Also update the changelog. [t3kit:reply=Changelog updated.]")
        drive.send_message(c, child, "And bump the version. [t3kit:reply=Version bumped.]")
        runs = d.wait(
            "two queued runs on the child",
            lambda: (
                lambda rs: (
                    rs if len(rs) >= 3 and all(r["status"] == "queued" for r in rs[1:3]) else None
                )
            )(d.runs(child)),
            30,
        )
    held, queued = runs[0]["id"], [r["id"] for r in runs[1:3]]

    source = t3.source()
    at = clock.now() + timedelta(minutes=1)
    follow_and_judge(source, t3.base, at)
    task = Task.objects.select_related("namespace", "parent_thread").get(task_id=sub["id"])
    with clock.virtual_clock(at):
        preview = preview_action(task, "cancel")
        assert preview.allowed, preview.refusal
        assert preview.run == held
        # This build advertises no held queue: the preview says queued work may start.
        assert any("may start once run" in line for line in preview.affects), preview.affects
        action, _ = do_request_action(task, "cancel", actor="user:op", reason="not needed")
    # Work queued after Supervisor's last read: no cancel names it, and T3 starts it
    # once the held run stops.
    with t3.client() as c:
        d = drive.Driver(c, type("Args", (), {})())
        drive.send_message(c, child, "Then tag the release. [t3kit:reply=Release tagged.]")
        late = d.wait(
            "a third queued run on the child",
            lambda: (lambda rs: rs[3] if len(rs) >= 4 else None)(d.runs(child)),
            30,
        )["id"]
    with clock.virtual_clock(at):
        assert operator_actions.perform(action.pk) == "succeeded"
    action.refresh_from_db()
    notes = action.response["notes"]
    assert notes[:2] == [f"queued run {run}: cancelled" for run in queued], notes
    # The outcome names the run T3 took off the queue: started (or starting) once the
    # held run stopped, or, when T3 had not got to it within the connector's short read,
    # still queued and about to start. Either is true of that moment; the rows below
    # prove it then started.
    assert notes[2].startswith(
        (
            f"T3 does not hold the child's queue; started after the stop: run {late} (",
            f"T3 does not hold the child's queue; still queued, and may start: run {late} (",
        )
    ), notes

    def status(run: str) -> tuple:
        return rows(
            t3.base,
            "SELECT status, payload_json FROM orchestration_v2_projection_runs WHERE run_id = ?",
            run,
        )[0]

    assert eventually(lambda: status(held)[0], lambda s: s == "interrupted") == "interrupted"
    for run in queued:
        state, payload = status(run)
        assert state == "cancelled"
        assert json.loads(payload).get("startedAt") is None
    assert eventually(lambda: json.loads(status(late)[1]).get("startedAt"), bool)
