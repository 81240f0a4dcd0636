"""The mapping on the shapes T3 really writes, as read in T3's source and in databases
the real server wrote through the kit: the rows are built here, one fact at a time,
where no kit scenario plays the case. Nothing here reads `../shared`: it runs in any
clone."""

from __future__ import annotations

from supervisor.connectors.t3code.mapping import Mapper, legacy_notification
from supervisor.connectors.t3code.schema import Row

PARENT = "5f0c2a9e-parent"
CHILD = "thread:delegated-task:command%3Amcp%3Ac1%3Adelegate-task%3Ar1"
TASK = "node:delegated-task:command%3Amcp%3Ac1%3Adelegate-task%3Ar1"


def run_of(thread: str, ordinal: int) -> str:
    return f"run:thread:{thread}:ordinal:{ordinal}"


class Log:
    """A mapper fed rows in sequence, collecting what it tells."""

    def __init__(self):
        self.mapper = Mapper()
        self.sequence = 0
        self.events: list[dict] = []

    def row(
        self, event_type: str, payload: dict, *, stream: str = PARENT, metadata=None, command=None
    ):
        self.sequence += 1
        self.mapper.map_row(
            Row(
                self.sequence,
                f"e{self.sequence}",
                "thread",
                stream,
                event_type,
                payload.get("updatedAt") or "2026-12-02T10:00:00.000Z",
                payload,
                metadata or {},
                2,
                command,
            )
        )
        self.events += self.mapper.take()

    def of(self, event_type: str) -> list[dict]:
        return [e["data"] for e in self.events if e["type"] == event_type]

    def run(self, thread: str, ordinal: int, status: str, at: str, **more):
        payload = {
            "id": run_of(thread, ordinal),
            "threadId": thread,
            "ordinal": ordinal,
            "status": status,
            "requestedAt": more.pop("requestedAt", at),
            "startedAt": more.pop("startedAt", None if status in ("queued", "preparing") else at),
            "completedAt": at if status in ("completed", "failed", "cancelled") else None,
            "updatedAt": at,
        }
        payload.update(more)
        self.row("run.updated", payload, stream=thread)

    def message(
        self, thread: str, message_id: str, run: str, role: str, text: str, at: str, **more
    ):
        payload = {
            "id": message_id,
            "threadId": thread,
            "runId": run,
            "role": role,
            "text": text,
            "streaming": False,
            "createdAt": more.pop("createdAt", at),
            "updatedAt": at,
        }
        payload.update(more)
        self.row("message.updated", payload, stream=thread)


def test_every_real_event_type_is_mapped_or_skipped_quietly():
    log = Log()
    quiet = [
        "thread.settled",
        "thread.unsettled",
        "thread.snoozed",
        "thread.unsnoozed",
        "thread.pinned",
        "thread.unpinned",
        "thread.auto-settle-set",
        "thread.pin-reordered",
        "thread.active-reordered",
        "thread.visited",
        "thread.marked-unread",
        "thread.pull-request-synced",
        "run-attempt.created",
        "run-attempt.updated",
        "provider-session.attached",
        "provider-session.updated",
        "provider-session.detached",
        "checkpoint-scope.created",
        "checkpoint.captured",
        "node.updated",
        "provider-turn.updated",
        "context-handoff.updated",
        "run.background-work-cancelled",
    ]
    for event_type in quiet:
        log.row(event_type, {"id": PARENT, "updatedAt": "2026-12-02T10:00:00.000Z"})
    assert dict(log.mapper.unknown) == {}
    assert log.mapper.skipped == len(quiet)
    assert log.events == []


def test_the_parent_link_is_the_lineage():
    log = Log()
    log.row(
        "thread.created",
        {
            "id": CHILD,
            "title": "Port the retry loop",
            "lineage": {
                "parentThreadId": PARENT,
                "relationshipToParent": "subagent",
                "rootThreadId": PARENT,
            },
            "createdAt": "2026-12-02T10:00:00.000Z",
            "updatedAt": "2026-12-02T10:00:00.000Z",
        },
        stream=CHILD,
    )
    assert log.of("thread.seen")[0]["parent_thread"] == PARENT


def test_a_failed_runs_error_is_its_error_item_and_its_summary_the_last_non_empty_text():
    log = Log()
    run = run_of(CHILD, 1)
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.000Z")
    log.message(CHILD, "m1", run, "assistant", "Looking at the schema.", "2026-12-02T10:00:01.000Z")
    # A later, empty assistant message (a tool-call preamble) is not the result.
    log.message(CHILD, "m2", run, "assistant", "", "2026-12-02T10:00:02.000Z")
    log.row(
        "turn-item.updated",
        {
            "id": "item:error",
            "threadId": CHILD,
            "runId": run,
            "type": "error",
            "status": "failed",
            "title": "Provider error",
            "failure": {
                "class": "transport_error",
                "message": "Claude Agent SDK query failed.",
                "code": None,
                "retryable": True,
            },
            "updatedAt": "2026-12-02T10:00:03.000Z",
        },
        stream=CHILD,
    )
    log.run(CHILD, 1, "failed", "2026-12-02T10:00:03.100Z")
    [finished] = log.of("run.finished")
    assert finished["status"] == "failed"
    assert finished["error"] == "Claude Agent SDK query failed."
    assert finished["summary"] == "Looking at the schema."


def test_a_failed_run_with_no_text_reports_its_error():
    log = Log()
    run = run_of(CHILD, 1)
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.000Z")
    log.row(
        "turn-item.updated",
        {
            "id": "item:error",
            "threadId": CHILD,
            "runId": run,
            "type": "error",
            "status": "failed",
            "failure": {"class": "usage_limit", "message": "Usage limit reached."},
            "updatedAt": "2026-12-02T10:00:01.000Z",
        },
        stream=CHILD,
    )
    log.run(CHILD, 1, "failed", "2026-12-02T10:00:01.100Z")
    [finished] = log.of("run.finished")
    assert (finished["summary"], finished["error"]) == (
        "Usage limit reached.",
        "Usage limit reached.",
    )


def test_a_rollback_is_told_once():
    log = Log()
    log.run(PARENT, 1, "running", "2026-12-02T10:00:00.000Z")
    log.run(PARENT, 1, "completed", "2026-12-02T10:01:00.000Z")
    log.run(PARENT, 1, "rolled_back", "2026-12-02T10:05:00.000Z")
    log.run(PARENT, 2, "running", "2026-12-02T10:06:00.000Z")
    log.run(PARENT, 2, "rolled_back", "2026-12-02T10:07:00.000Z")
    log.run(PARENT, 2, "rolled_back", "2026-12-02T10:08:00.000Z")
    assert [r["run"] for r in log.of("run.requested")] == [run_of(PARENT, 1), run_of(PARENT, 2)]
    assert [(r["run"], r["status"]) for r in log.of("run.finished")] == [
        (run_of(PARENT, 1), "completed"),
        (run_of(PARENT, 2), "cancelled"),
    ]
    assert dict(log.mapper.unknown) == {}


def _wake(log: Log, *, run_status: str, text: str, at: str):
    wake_run = run_of(PARENT, 2)
    log.message(
        PARENT,
        "message:wake",
        wake_run,
        "user",
        text,
        at,
        createdBy="agent",
        creationSource="server",
    )
    log.run(PARENT, 2, run_status, at, userMessageId="message:wake")


def test_a_wake_queued_behind_a_run_is_delivered_only_when_its_run_starts():
    log = Log()
    text = (
        f'Delegated task "Port" completed. Use task_status with taskId {TASK} to read the result.'
    )
    _wake(log, run_status="queued", text=text, at="2026-12-02T10:00:00.000Z")
    [queued] = log.of("wake.queued")
    assert (queued["source"]["kind"], queued["source"]["task"]) == ("task", TASK)
    assert queued["outcome"] == "completed"
    assert log.of("wake.delivered") == []
    at = "2026-12-02T10:00:05.000Z"
    log.run(PARENT, 2, "running", at, startedAt=at, userMessageId="message:wake")
    assert log.of("wake.delivered") == [{"wake": "message:wake", "run": run_of(PARENT, 2)}]
    delivered = next(e for e in log.events if e["type"] == "wake.delivered")
    assert delivered["at"] == "2026-12-02T10:00:05.000Z"


def test_a_queued_wake_cancelled_before_its_run_started_was_never_delivered():
    log = Log()
    text = f"Delegated task {TASK} reached a terminal state. Use task_status with taskId {TASK}."
    _wake(log, run_status="queued", text=text, at="2026-12-02T10:00:00.000Z")
    log.run(
        PARENT,
        2,
        "cancelled",
        "2026-12-02T10:00:05.000Z",
        startedAt=None,
        userMessageId="message:wake",
    )
    assert len(log.of("wake.queued")) == 1
    assert log.of("wake.delivered") == []


def test_wakes_before_the_notification_field_are_read_from_who_wrote_them():
    one = legacy_notification(
        {
            "createdBy": "agent",
            "creationSource": "server",
            "text": 'Delegated task "T" ended with status failed. '
            f"Use task_status with taskId {TASK} for details.",
        }
    )
    assert one["source"] == {"kind": "delegated_task", "taskIds": [TASK]}
    assert one["outcome"] == "failed"
    several = legacy_notification(
        {
            "createdBy": "agent",
            "creationSource": "server",
            "text": "Delegated tasks node:a, node:b reached terminal states. Use task_status.",
        }
    )
    assert several["source"]["taskIds"] == ["node:a", "node:b"]
    provider = legacy_notification(
        {
            "createdBy": "agent",
            "creationSource": "provider",
            "text": "Background command completed (exit 0): pytest -q tests/",
        }
    )
    assert provider["source"] == {"kind": "background_task"}
    assert provider["outcome"] == "completed"
    # Not wakes: a user's own message, the child's prompt, a restart continuation.
    assert legacy_notification({"createdBy": "user", "creationSource": "web", "text": "go"}) is None
    assert legacy_notification({"createdBy": "agent", "creationSource": "mcp", "text": "x"}) is None
    restart = {
        "createdBy": "agent",
        "creationSource": "server",
        "text": "Continue where you left off.",
    }
    assert legacy_notification(restart) is None


def test_a_command_that_outlives_its_run_is_background_work_of_that_run():
    log = Log()
    run = run_of(CHILD, 1)
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.000Z")
    command = {
        "id": "item:cmd",
        "threadId": CHILD,
        "runId": run,
        "type": "command_execution",
        "status": "running",
        "input": "pytest -q tests/",
        "startedAt": "2026-12-02T10:00:01.000Z",
        "updatedAt": "2026-12-02T10:00:01.000Z",
    }
    log.row("turn-item.updated", command, stream=CHILD)
    # A command that ends inside its run is not background work.
    quick = dict(command, id="item:ls", input="ls", status="completed")
    log.row("turn-item.updated", dict(quick, status="running"), stream=CHILD)
    log.row("turn-item.updated", quick, stream=CHILD)
    assert log.of("background.started") == []
    log.run(CHILD, 1, "completed", "2026-12-02T10:00:02.000Z")
    [started] = log.of("background.started")
    assert (started["kind"], started["run"], started["label"]) == (
        "command",
        run,
        "pytest -q tests/",
    )
    done = dict(command, status="completed", updatedAt="2026-12-02T10:00:09.000Z")
    log.row("turn-item.updated", dict(done, completedAt="2026-12-02T10:00:09.000Z"), stream=CHILD)
    [finished] = log.of("background.finished")
    assert finished == {"thread": CHILD, "item": started["item"], "status": "completed"}
    # The provider's continuation names no item: it is matched by the command line.
    log.message(
        CHILD,
        "message:continuation",
        run_of(CHILD, 2),
        "user",
        "Background command completed (exit 0): pytest -q tests/",
        "2026-12-02T10:00:09.100Z",
        createdBy="agent",
        creationSource="provider",
    )
    [wake] = log.of("wake.queued")
    assert wake["source"] == {"kind": "background", "item": started["item"]}


def test_a_tasks_run_with_no_text_has_the_result_t3_hands_for_it():
    log = Log()
    log.row(
        "subagent.updated",
        {
            "id": TASK,
            "threadId": PARENT,
            "runId": run_of(PARENT, 1),
            "origin": "app_owned",
            "childThreadId": CHILD,
            "title": "Watch the deploy",
            "prompt": "Watch it.",
            "status": "running",
            "startedAt": "2026-12-02T10:00:00.000Z",
            "updatedAt": "2026-12-02T10:00:00.000Z",
        },
    )
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.100Z")
    log.run(
        CHILD, 1, "interrupted", "2026-12-02T10:05:00.000Z", completedAt="2026-12-02T10:05:00.000Z"
    )
    [finished] = log.of("run.finished")
    assert finished["summary"] == "Child task ended with status interrupted."


def _subagent(status: str, at: str, **more) -> dict:
    return {
        "id": TASK,
        "threadId": PARENT,
        "runId": run_of(PARENT, 1),
        "origin": "app_owned",
        "childThreadId": CHILD,
        "title": "Nightly batch",
        "prompt": "Run the nightly batch.",
        "completionWake": "always",
        "status": status,
        "startedAt": "2026-12-02T10:00:00.000Z",
        "updatedAt": at,
        "completedAt": at if status in ("completed", "failed", "cancelled") else None,
        **more,
    }


def test_a_task_its_recovery_cancelled_is_reported_cut_by_a_restart_and_promised_no_wake():
    """K33: startup recovery (and a stop's reconciliation) cancels a task whose child run
    it cut, under its reconcile command: no result, no completionDelivery, no wake."""
    log = Log()
    log.row("subagent.updated", _subagent("running", "2026-12-02T10:00:00.000Z"))
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.100Z")
    reconcile = "command:runtime-reconcile:startup:thread:2026-12-02T10:05:00.000Z"
    log.row(
        "run.updated",
        {
            "id": run_of(CHILD, 1),
            "threadId": CHILD,
            "ordinal": 1,
            "status": "cancelled",
            "requestedAt": "2026-12-02T10:00:00.100Z",
            "startedAt": "2026-12-02T10:00:00.100Z",
            "completedAt": "2026-12-02T10:05:00.000Z",
            "updatedAt": "2026-12-02T10:05:00.000Z",
        },
        stream=CHILD,
        command=reconcile,
    )
    log.row(
        "subagent.updated",
        _subagent("cancelled", "2026-12-02T10:05:00.010Z", result=None),
        command=reconcile,
    )
    [run] = log.of("run.finished")
    assert run["cause"] == "restart"
    cancelled = log.of("task.reported")[-1]
    assert cancelled == {"task": TASK, "status": "cancelled", "cause": "restart"}


def test_a_task_someone_cancelled_is_promised_a_wake():
    log = Log()
    log.row("subagent.updated", _subagent("running", "2026-12-02T10:00:00.000Z"))
    log.row("subagent.updated", _subagent("cancelled", "2026-12-02T10:05:00.010Z"))
    cancelled = log.of("task.reported")[-1]
    assert (cancelled.get("cause"), cancelled["delivery"]) == (None, "wake")


def test_a_failed_tasks_report_carries_its_result_runs_error():
    """T3 keeps the failure only in the run's error item; the task's result is the run's
    last assistant line, here an interim one. The report carries both."""
    log = Log()
    log.row("subagent.updated", _subagent("running", "2026-12-02T10:00:00.000Z"))
    run = run_of(CHILD, 1)
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.100Z")
    log.message(CHILD, "m1", run, "assistant", "Still on it.", "2026-12-02T10:00:01.000Z")
    log.row(
        "turn-item.updated",
        {
            "id": "item:error",
            "threadId": CHILD,
            "runId": run,
            "type": "error",
            "status": "failed",
            "title": "Provider error",
            "failure": {"class": "provider_error", "message": "API Error: 529 overloaded"},
            "updatedAt": "2026-12-02T10:00:02.000Z",
        },
        stream=CHILD,
    )
    log.run(CHILD, 1, "failed", "2026-12-02T10:00:02.100Z")
    log.row(
        "subagent.updated",
        _subagent("failed", "2026-12-02T10:00:02.200Z", result="Still on it."),
    )
    report = log.of("task.reported")[-1]
    assert (report["summary"], report["error"]) == ("Still on it.", "API Error: 529 overloaded")


def test_an_import_after_the_roster_emptied_keeps_the_command_that_outlived_its_run():
    """K33 lists background work on the roster, so following the log takes the roster's
    entry for it; an import after the entry left finds the roster empty, and the command
    item is then the only trace of the work the child's run 2 was woken for."""
    mapper = Mapper()
    child_run = run_of(CHILD, 1)
    wake_run = run_of(CHILD, 2)
    events = mapper.import_state(
        threads=[],
        subagents=[_subagent("completed", "2026-12-02T10:00:02.000Z", result="Still running.")],
        provider_threads=[
            {
                "id": "provider-thread:codex:child",
                "appThreadId": CHILD,
                "pendingBackgroundTasks": [],
                "updatedAt": "2026-12-02T10:00:09.000Z",
            }
        ],
        messages=[
            {
                "id": "message:continuation",
                "threadId": CHILD,
                "runId": wake_run,
                "role": "user",
                "text": "Background command completed (exit 0): pytest -q tests/",
                "createdBy": "agent",
                "creationSource": "provider",
                "createdAt": "2026-12-02T10:00:09.100Z",
                "updatedAt": "2026-12-02T10:00:09.100Z",
            }
        ],
        runs=[
            {
                "id": child_run,
                "threadId": CHILD,
                "ordinal": 1,
                "status": "completed",
                "requestedAt": "2026-12-02T10:00:00.000Z",
                "startedAt": "2026-12-02T10:00:00.100Z",
                "completedAt": "2026-12-02T10:00:02.000Z",
            },
            {
                "id": wake_run,
                "threadId": CHILD,
                "ordinal": 2,
                "status": "completed",
                "userMessageId": "message:continuation",
                "requestedAt": "2026-12-02T10:00:09.100Z",
                "startedAt": "2026-12-02T10:00:09.200Z",
                "completedAt": "2026-12-02T10:00:10.000Z",
            },
        ],
        transfers=[],
        texts={},
        turn_items=[
            {
                "id": "item:cmd",
                "threadId": CHILD,
                "runId": child_run,
                "type": "command_execution",
                "status": "completed",
                "input": "pytest -q tests/",
                "startedAt": "2026-12-02T10:00:01.000Z",
                "completedAt": "2026-12-02T10:00:09.000Z",
                "updatedAt": "2026-12-02T10:00:09.000Z",
            }
        ],
    )
    [started] = [e["data"] for e in events if e["type"] == "background.started"]
    assert (started["kind"], started["run"], started["label"]) == (
        "command",
        child_run,
        "pytest -q tests/",
    )
    [wake] = [e["data"] for e in events if e["type"] == "wake.queued"]
    assert wake["source"] == {"kind": "background", "item": started["item"]}
    [woken] = [
        e["data"] for e in events if e["type"] == "run.requested" and e["data"]["ordinal"] == 2
    ]
    assert woken["trigger"] == {"kind": "wake", "wake": "message:continuation"}


def test_a_wake_names_its_tasks_by_its_cohort_where_the_text_names_others():
    """K33 writes the cohort on the wake message: its task ids win over the text's."""
    log = Log()
    log.row("subagent.updated", _subagent("completed", "2026-12-02T10:00:02.000Z", result="Done."))
    log.message(
        PARENT,
        "message:wake",
        run_of(PARENT, 2),
        "user",
        "Delegated tasks reached terminal states. Use task_status to read the results.",
        "2026-12-02T10:00:02.100Z",
        createdBy="agent",
        creationSource="server",
        delegatedCompletion={"parentRunId": run_of(PARENT, 1), "generation": 1, "taskIds": [TASK]},
    )
    [wake] = log.of("wake.queued")
    assert wake["source"]["task"] == TASK
    assert wake["summary"] == "Done."


def test_work_a_restart_cancelled_is_finished_cancelled():
    """Newer builds (facts §3, §7; no build here writes it): restart recovery lists the
    background work it cancelled on the thread's latest started run."""
    log = Log()
    log.run(CHILD, 1, "running", "2026-12-02T10:00:00.000Z")
    log.row(
        "provider-thread.updated",
        {
            "id": "provider-thread:codex:child",
            "appThreadId": CHILD,
            "status": "running",
            "pendingBackgroundTasks": [
                {"taskId": "bg-1", "description": "make reindex", "kind": "command"}
            ],
            "updatedAt": "2026-12-02T10:00:01.000Z",
        },
        stream=CHILD,
        metadata={"runId": run_of(CHILD, 1)},
    )
    [started] = log.of("background.started")
    log.row(
        "run.background-work-cancelled",
        {
            "runId": run_of(CHILD, 1),
            "restartCancelledBackgroundWork": [
                {"kind": "shell", "label": "make reindex", "id": "bg-1"}
            ],
            "updatedAt": "2026-12-02T10:05:00.000Z",
        },
        stream=CHILD,
    )
    [finished] = log.of("background.finished")
    assert finished == {"thread": CHILD, "item": started["item"], "status": "cancelled"}
