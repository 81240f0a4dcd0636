"""What T3 writes for the failure kinds, in the contract's words, on state
databases written as T3 writes them (tests/support/t3/statedb.py), each read both ways a
follower reads one: from the log and as an import of the projections.

- a failed run's error item carries T3's failure class: `failure_class` on the run's
  `run.finished` and on the failed task's report (`account_limit` reads `usage_limit`);
- an agent's `delegate_task` call (a `dynamic_tool` item of the parent's run) is a
  `task.requested`, and the task it made says the same `client_request_id`; a call no
  task ever came of stands alone (`delegation_never_started`);
- a task wake to a thread that is not the task's parent names its true target
  (`misrouted_wake`); a task cancelled while its child's run and roster entry go on is
  told as T3 wrote it (`cancel_not_propagated`); a roster entry that stays listed is a
  background item never finished (`silent_background_item`); a task reported completed
  whose result run failed keeps that run's status and error (`completed_on_failure`).

Which of these shapes a real build here writes is in docs/t3code.md; the real kits'
own rows are checked in test_real_failures.py."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from supervisor.connectors.t3code.follower import projections
from supervisor.connectors.t3code.mapping import Mapper, request_key
from supervisor.connectors.t3code.schema import StateDB
from tests.support.t3.statedb import FakeT3, provider_thread_id, run_id
from tests.support.t3.timelines import delegate, user_run

PARENT = "thread:parent-lead"
OTHER = "thread:another-lead"
SESSION = "5b1c"


def task_of(key: str) -> tuple[str, str]:
    """The task id and child thread T3 makes for a delegate_task call keyed `key`
    (facts §8: each part encoded, then the whole command once more)."""
    command = ":".join(["command", "mcp", SESSION, "delegate-task", quote(key, safe="")])
    encoded = quote(command, safe="")
    return f"node:delegated-task:{encoded}", f"thread:delegated-task:{encoded}"


def at(second: float) -> str:
    whole, part = divmod(int(second * 1000), 1000)
    return f"2026-12-02T10:{whole // 60:02d}:{whole % 60:02d}.{part:03d}Z"


class Read:
    """What the mapper tells of one database, from the log or from the projections."""

    def __init__(self, path, how: str):
        db = StateDB(str(path))
        self.mapper = Mapper(lookup=db)
        if how == "log":
            self.events = self.mapper.map_rows(db.rows_after(0, 100_000))
        else:
            self.events = self.mapper.import_state(**projections(db))
        db.close()

    def of(self, event_type: str, **match) -> list[dict]:
        return [
            e["data"]
            for e in self.events
            if e["type"] == event_type and all(e["data"].get(k) == v for k, v in match.items())
        ]

    def told(self, event_type: str, **match) -> list[dict]:
        """Whole events (id and `at`), not just their data."""
        return [
            e
            for e in self.events
            if e["type"] == event_type and all(e["data"].get(k) == v for k, v in match.items())
        ]

    def latest(self, event_type: str, **match) -> dict:
        """The telling that wins (contract §4: by `at`, then id)."""
        return max(self.told(event_type, **match), key=lambda e: (e["at"], e["id"]))["data"]


HOW = pytest.mark.parametrize("how", ["log", "import"])


@pytest.fixture
def t3(tmp_path):
    fake = FakeT3(tmp_path / "state.sqlite")
    yield fake
    fake.close()


def parent_run(t3: FakeT3, thread: str = PARENT, ordinal: int = 1, start: float = 0) -> str:
    if ordinal == 1:
        t3.thread(thread, at=at(start), title="Lead")
    return user_run(
        t3,
        thread,
        ordinal,
        f"msg-{thread}-{ordinal}",
        text="Please get this done.",
        at_message=at(start),
        at_run=at(start + 0.01),
        at_start=at(start + 0.05),
    )


def child_of(t3, task, child, *, start: float, parent_run_id: str, title="Port the retry loop"):
    """The task, its child thread and the child's first run, started by the prompt."""
    delegate(
        t3,
        task,
        at=at(start),
        parent=PARENT,
        parent_run=parent_run_id,
        child=child,
        title=title,
        prompt="Port the retry loop to the new client.",
        status="running",
        completionWake="always",
    )
    t3.message(
        f"msg-{child}-prompt",
        at=at(start),
        thread=child,
        role="user",
        text="Port the retry loop to the new client.",
        createdBy="agent",
        creationSource="mcp",
    )
    run = t3.run(child, 1, at=at(start + 0.01), user_message=f"msg-{child}-prompt")
    t3.update_message(f"msg-{child}-prompt", at=at(start + 0.01), runId=run)
    t3.update_run(run, at=at(start + 0.05), status="running")
    return run


def error_item(t3, child, run, *, second, failure_class, message):
    t3.turn_item(
        f"item:{run}:error",
        at=at(second),
        thread=child,
        run=run,
        type="error",
        status="failed",
        title="Provider error",
        failure={"class": failure_class, "message": message, "code": None, "retryable": False},
    )


def finalized(t3, task, child, child_run, *, second, status, result, parent_run_id):
    """T3's finalization: the terminal task row, then the result transfer (facts §4)."""
    t3.update_subagent(task, at=at(second), status=status, result=result)
    t3.transfer(
        f"ctx:{task}",
        at=at(second),
        source_thread=child,
        target_thread=PARENT,
        source_run=child_run,
        target_run=parent_run_id,
        status="consumed",
    )


# --- the failure class ---------------------------------------------------------------


@HOW
def test_a_usage_limit_reaches_the_runs_end_and_the_failed_tasks_report(t3, how):
    task, child = task_of("req-limit")
    lead = parent_run(t3)
    child_run = child_of(t3, task, child, start=1, parent_run_id=lead)
    limit = "You've hit your usage limit. Your limit resets at 5pm (Europe/Paris)."
    error_item(t3, child, child_run, second=3, failure_class="usage_limit", message=limit)
    t3.update_run(child_run, at=at(3.1), status="failed")
    finalized(
        t3, task, child, child_run, second=3.2, status="failed", result=limit, parent_run_id=lead
    )
    read = Read(t3.path, how)
    [finished] = read.of("run.finished", run=child_run)
    assert (finished["status"], finished["error"], finished["failure_class"]) == (
        "failed",
        limit,
        "usage_limit",
    )
    report = read.latest("task.reported", task=task)
    assert (report["status"], report["error"], report["failure_class"]) == (
        "failed",
        limit,
        "usage_limit",
    )
    assert report["result_run"] == child_run
    assert dict(read.mapper.unknown) == {}


@HOW
def test_a_class_t3_may_add_is_passed_on_and_counted(t3, how):
    task, child = task_of("req-quota")
    lead = parent_run(t3)
    child_run = child_of(t3, task, child, start=1, parent_run_id=lead)
    error_item(t3, child, child_run, second=3, failure_class="quota_exceeded", message="Quota.")
    t3.update_run(child_run, at=at(3.1), status="failed")
    read = Read(t3.path, how)
    [finished] = read.of("run.finished", run=child_run)
    assert finished["failure_class"] == "quota_exceeded"
    assert read.mapper.unknown["failure.class:quota_exceeded"] == 1


@HOW
def test_a_run_that_did_not_fail_has_no_failure_class(t3, how):
    """An error item on a run that then completed (a provider retried in the turn)."""
    lead = parent_run(t3)
    error_item(t3, PARENT, lead, second=1, failure_class="transport_error", message="Reset.")
    t3.update_run(lead, at=at(2), status="completed")
    read = Read(t3.path, how)
    [finished] = read.of("run.finished", run=lead)
    assert "failure_class" not in finished and "error" not in finished


# --- delegate_task calls: task.requested ---------------------------------------------


def delegate_call(t3, item, *, second, run, status="running", thread=PARENT, **fields):
    t3.turn_item(
        item,
        at=at(second),
        thread=thread,
        run=run,
        type="dynamic_tool",
        status=status,
        **fields,
    )


@HOW
def test_a_delegate_task_call_is_requested_and_its_task_says_the_same_request(t3, how):
    """Claude's name for T3's tool; the agent's clientRequestId keys T3's command, so
    the task id carries it too."""
    task, child = task_of("req-7")
    lead = parent_run(t3)
    arguments = {"task": "Port the retry loop.", "title": "Port", "clientRequestId": "req-7"}
    delegate_call(
        t3, "item:call-7", second=1, run=lead, toolName="mcp__t3__delegate_task", input=arguments
    )
    child_run = child_of(t3, task, child, start=1.5, parent_run_id=lead, title="Port")
    delegate_call(
        t3,
        "item:call-7",
        second=1.6,
        run=lead,
        status="completed",
        output={"taskId": task, "childThreadId": child, "status": "running"},
    )
    read = Read(t3.path, how)
    [requested] = read.told("task.requested")
    assert requested["at"] == at(1)
    assert requested["data"] == {
        "parent_thread": PARENT,
        "parent_run": lead,
        "client_request_id": "req-7",
        "title": "Port",
    }
    assert read.latest("task.delegated", task=task)["client_request_id"] == "req-7"
    assert read.of("run.requested", run=child_run)[0]["trigger"]["task"] == task
    assert dict(read.mapper.unknown) == {}


@HOW
def test_a_call_without_its_own_id_is_named_by_its_item_and_its_task_by_the_same(t3, how):
    """Without a clientRequestId T3 keys the command by a UUID of its own that no call
    row shows: the request is the call's item id, and the task is found by the open
    call of its run with its title (from the log) or by the call's output (an import)."""
    task, child = task_of("6f0e7c1a-0000-4000-8000-000000000001")
    lead = parent_run(t3)
    delegate_call(
        t3,
        "item:call-8",
        second=1,
        run=lead,
        toolName="t3.delegate_task",  # Codex's name: server.tool
        input={"task": "Port the retry loop.", "title": "Port the retry loop"},
    )
    child_of(t3, task, child, start=1.5, parent_run_id=lead)
    delegate_call(
        t3, "item:call-8", second=1.6, run=lead, status="completed", output={"taskId": task}
    )
    read = Read(t3.path, how)
    [requested] = read.of("task.requested")
    assert requested["client_request_id"] == "item:call-8"
    assert read.latest("task.delegated", task=task)["client_request_id"] == "item:call-8"


def test_a_call_that_names_its_task_only_in_its_output_tells_the_task_again(t3):
    """The task row before the call's row, titles apart: from the log, the task is told
    first with T3's own key, then again, the same delegation at the same time, with the
    call's id; that telling's id extends the first's, so it wins."""
    task, child = task_of("6f0e7c1a-0000-4000-8000-000000000002")
    lead = parent_run(t3)
    child_of(t3, task, child, start=1, parent_run_id=lead, title="Retry loop")
    delegate_call(
        t3,
        "item:call-9",
        second=0.9,
        run=lead,
        status="completed",
        toolName="mcp__t3__delegate_task",
        input={"task": "Port the retry loop.", "title": "Port it"},
        output=[{"type": "text", "text": f'{{"taskId": "{task}", "status": "running"}}'}],
    )
    read = Read(t3.path, "log")
    first, again = read.told("task.delegated", task=task)
    assert first["data"]["client_request_id"] == request_key(task)
    assert again["data"]["client_request_id"] == "item:call-9"
    assert again["at"] == first["at"] and again["id"].startswith(first["id"])
    assert again["data"]["prompt"] == first["data"]["prompt"]
    assert read.latest("task.delegated", task=task)["client_request_id"] == "item:call-9"


@HOW
def test_a_call_no_task_ever_came_of_stands_alone(t3, how):
    """Codex #24951's hang: the call is under way, no task row, no child, ever."""
    lead = parent_run(t3)
    delegate_call(
        t3,
        "item:call-hang",
        second=1,
        run=lead,
        toolName="mcp__t3__delegate_task",
        input='{"task": "Audit the dependencies.", "title": "Audit", "clientRequestId": "r-h"}',
    )
    t3.update_run(lead, at=at(3000), status="completed")
    read = Read(t3.path, how)
    assert read.of("task.requested") == [
        {"parent_thread": PARENT, "parent_run": lead, "client_request_id": "r-h", "title": "Audit"}
    ]
    assert read.of("task.delegated") == []


@HOW
def test_a_refused_call_is_a_rejection_and_its_retry_the_request_the_task_answers(t3, how):
    """T3 refuses a call from a run it does not see as active (its MCP failure); the
    agent calls again, with no key of its own, and that call makes the task."""
    task, child = task_of("6f0e7c1a-0000-4000-8000-000000000003")
    lead = parent_run(t3)
    delegate_call(
        t3,
        "item:call-refused",
        second=1,
        run=lead,
        status="failed",
        toolName="mcp__t3__delegate_task",
        input={"task": "Port the retry loop.", "title": "Port the retry loop"},
        output={
            "code": "parent_not_active",
            "message": "Delegated tasks require an active run owned by this MCP provider session.",
        },
    )
    delegate_call(
        t3,
        "item:call-again",
        second=2,
        run=lead,
        toolName="t3.delegate_task",
        input={"task": "Port the retry loop.", "title": "Port the retry loop"},
    )
    child_of(t3, task, child, start=2.5, parent_run_id=lead)
    delegate_call(
        t3,
        "item:call-again",
        second=2.6,
        run=lead,
        status="completed",
        output={"taskId": task},
    )
    # Codex stores a failed call's error as `{error: message}`.
    delegate_call(
        t3,
        "item:call-codex",
        second=3,
        run=lead,
        status="failed",
        toolName="t3.delegate_task",
        input={"title": "Other"},
        output={"error": "tool call failed"},
    )
    read = Read(t3.path, how)
    requests = {r["client_request_id"] for r in read.of("task.requested")}
    assert requests == {"item:call-refused", "item:call-again", "item:call-codex"}
    assert read.latest("task.delegated", task=task)["client_request_id"] == "item:call-again"
    rejected = read.told("tool.rejected")
    assert [(e["at"], e["data"]["code"]) for e in rejected] == [
        (at(1), "parent_not_active"),
        (at(3), "failed"),
    ]
    assert rejected[0]["data"]["tool"] == "delegate_task"
    assert rejected[0]["data"]["thread"] == PARENT
    assert rejected[1]["data"]["message"] == "tool call failed"


@HOW
def test_other_tool_calls_are_no_requests(t3, how):
    lead = parent_run(t3)
    for name in ("Read", "mcp__t3__task_status", "mcp__t3__delegate_task_status"):
        delegate_call(t3, f"item:{name}", second=1, run=lead, toolName=name, input={})
    assert Read(t3.path, how).of("task.requested") == []


def test_the_request_key_is_read_from_mcp_task_ids_only():
    task, _ = task_of("t3kit:run:thread:p:ordinal:1")
    assert request_key(task) == "t3kit:run:thread:p:ordinal:1"
    # A client's own delegated_task.request (delegate-ws): its command id, no key.
    assert request_key("node:delegated-task:cmd%3Aa1") is None
    assert request_key("node:native:reader-1") is None


# --- wakes, cancels, rosters, results -----------------------------------------------


@HOW
def test_a_task_wake_to_a_thread_not_its_parent_names_its_true_target(t3, how):
    """Both wake forms: the builds' pointer text (0.0.30 and 0.0.33 write it) and a
    newer build's `notification` (facts §6)."""
    task, child = task_of("req-wrong")
    lead = parent_run(t3)
    child_run = child_of(t3, task, child, start=1, parent_run_id=lead)
    t3.update_run(child_run, at=at(2), status="completed")
    finalized(
        t3,
        task,
        child,
        child_run,
        second=2.1,
        status="completed",
        result="Done.",
        parent_run_id=lead,
    )
    parent_run(t3, OTHER, start=3)
    pointer = (
        f"Delegated task {task} reached a terminal state. "
        f"Use task_status with taskId {task} to read the result."
    )
    t3.message(
        "msg-misrouted-1",
        at=at(5),
        thread=OTHER,
        role="user",
        text=pointer,
        createdBy="agent",
        creationSource="server",
    )
    t3.message(
        "msg-misrouted-2",
        at=at(6),
        thread=OTHER,
        role="user",
        text="",
        createdBy="agent",
        creationSource="server",
        notification={
            "source": {"kind": "delegated_task", "taskIds": [task], "childThreadId": child},
            "outcome": "completed",
            "summary": "Delegated task finished",
        },
    )
    read = Read(t3.path, how)
    for wake in ("msg-misrouted-1", "msg-misrouted-2"):
        [queued] = read.of("wake.queued", wake=wake)
        assert queued["thread"] == OTHER  # where T3 sent it, not the task's parent
        assert queued["source"] == {"kind": "task", "task": task, "thread": child}
        assert queued["summary"] == "Done."


@HOW
def test_a_task_cancelled_while_its_child_and_its_background_work_go_on(t3, how):
    """The task row says cancelled (a user's cancel, not a restart's), while the child's
    run goes on and ends later, and its roster entry stays listed: told as written, so
    that the run and the item are still the task's and still unfinished."""
    task, child = task_of("req-cancel")
    lead = parent_run(t3)
    child_run = child_of(t3, task, child, start=1, parent_run_id=lead)
    t3.roster(
        child,
        [{"taskId": "bg-watch", "description": "npm run watch", "taskType": "local_bash"}],
        at=at(2),
        run=child_run,
        status="running",
    )
    t3.update_subagent(task, at=at(10), status="cancelled")
    t3.message(
        f"msg-{child}-late",
        at=at(80),
        thread=child,
        role="assistant",
        text="Still on it.",
        run=child_run,
    )
    if how == "log":
        t3.update_run(child_run, at=at(300), status="completed")
    read = Read(t3.path, how)
    report = read.latest("task.reported", task=task)
    assert report["status"] == "cancelled" and "cause" not in report
    assert read.of("run.requested", run=child_run)[0]["trigger"] == {
        "kind": "delegation",
        "task": task,
    }
    [item] = read.of("background.started", thread=child)
    # From the log, the run the row names; an import leaves it to the contract's default
    # (the thread's latest run requested by then): the same child run either way.
    assert (item.get("run", child_run), item["label"]) == (child_run, "npm run watch")
    assert read.of("background.finished") == []
    if how == "log":
        [finished] = read.told("run.finished", run=child_run)
        assert finished["at"] == at(300) and finished["data"]["status"] == "completed"
    else:
        assert read.of("run.finished", run=child_run) == []  # still under way


@HOW
def test_a_roster_entry_that_stays_listed_is_a_background_item_never_finished(t3, how):
    """T3 #12502: the work exited, the roster still lists it; the run that started it
    is over and nothing else happens on the thread."""
    task, child = task_of("req-silent")
    lead = parent_run(t3)
    child_run = child_of(t3, task, child, start=1, parent_run_id=lead)
    t3.roster(
        child,
        [{"taskId": "bg-mon", "description": "tail -f build.log", "kind": "monitor"}],
        at=at(2),
        run=child_run,
        status="running",
    )
    t3.update_run(child_run, at=at(3), status="completed")
    read = Read(t3.path, how)
    [item] = read.of("background.started", thread=child)
    assert item["item"] == f"{child}:bg:bg-mon"
    assert item["kind"] in ("monitor", "other")  # the kind is Z32's; older entries none
    if how == "log":
        assert item["run"] == child_run
    assert read.of("background.finished") == []
    assert provider_thread_id(child) in read.mapper.memory["rosters"]


@HOW
@pytest.mark.parametrize("ended", ["failed", "interrupted"])
def test_a_task_reported_completed_on_a_failed_run_keeps_that_runs_end(t3, how, ended):
    """t3code PR #3549's shape (a newer build; none here writes it): the task row says
    completed, its result run failed or was interrupted, its text the error."""
    task, child = task_of(f"req-hidden-{ended}")
    lead = parent_run(t3)
    child_run = child_of(t3, task, child, start=1, parent_run_id=lead)
    error = "API Error: 529 overloaded_error."
    if ended == "failed":
        error_item(t3, child, child_run, second=2, failure_class="provider_error", message=error)
    t3.update_run(child_run, at=at(2.1), status=ended)
    finalized(
        t3, task, child, child_run, second=2.2, status="completed", result=error, parent_run_id=lead
    )
    read = Read(t3.path, how)
    report = read.latest("task.reported", task=task)
    assert (report["status"], report["result_run"], report["summary"]) == (
        "completed",
        child_run,
        error,
    )
    assert "failure_class" not in report  # a completed report carries no failure
    [finished] = read.of("run.finished", run=child_run)
    assert finished["status"] == ended
    if ended == "failed":
        assert (finished["error"], finished["failure_class"]) == (error, "provider_error")
    else:
        assert "error" not in finished


def test_memory_kept_before_classes_were_read_still_reports_the_error():
    """A follower upgraded mid-task: its stored failures hold `[thread, error]`."""
    task, child = task_of("req-old")
    run = run_id(child, 1)
    mapper = Mapper({"failures": {run: [child, "Boom."]}})
    mapper.memory["tasks"][task] = {
        "parent": PARENT,
        "run": None,
        "child": child,
        "at": at(0),
        "status": "failed",
        "result": "Boom.",
        "result_run": run,
        "waits": None,
    }
    assert mapper._failure_of(mapper.memory["tasks"][task]) == ("Boom.", None)
