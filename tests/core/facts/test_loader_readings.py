"""Readings contract 1.1 settles, through the stored rows: an empty summary is no result
wherever the latest result is read (the task's detail and API, the deliver action), and a
task whose delegation never names its child thread is judged on the thread of its first
run, by the subject's own snapshot and by the incremental evaluation."""

from datetime import datetime
from urllib.parse import quote

import pytest

from supervisor.core.actions.previews import preview_action
from supervisor.core.detection.evaluate import affected_subjects, evaluate
from supervisor.core.facts.loader import load_for_subjects, load_for_task
from supervisor.core.facts.task_detail import describe_task
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task

pytestmark = pytest.mark.django_db

TASK = "task:port"
PARENT = "thread:lead"
CHILD = "thread:worker"


def at(seconds: int) -> str:
    return f"2026-11-21T09:{seconds // 60:02d}:{seconds % 60:02d}.000Z"


def delegated(child: str | None = CHILD) -> dict:
    data = {"task": TASK, "parent_thread": PARENT, "child_thread": child, "title": "Port it"}
    return {"id": "e-delegated", "type": "task.delegated", "at": at(0), "data": data}


def requested(run: str, ordinal: int, when: int, trigger: dict) -> dict:
    data = {"thread": CHILD, "run": run, "ordinal": ordinal, "trigger": trigger}
    return {"id": f"e-{run}-requested", "type": "run.requested", "at": at(when), "data": data}


def finished(run: str, when: int, summary: str, status: str = "completed") -> dict:
    data = {"thread": CHILD, "run": run, "status": status, "summary": summary}
    return {"id": f"e-{run}-finished", "type": "run.finished", "at": at(when), "data": data}


def reported(status: str, when: int, **data) -> dict:
    data = {"task": TASK, "status": status, **data}
    return {"id": f"e-reported-{when}", "type": "task.reported", "at": at(when), "data": data}


FIRST = {"kind": "delegation", "task": TASK}


def the_task() -> Task:
    return Task.objects.select_related("namespace", "parent_thread").get(task_id=TASK)


@pytest.fixture
def ended_empty(source):
    """Run 1 finished with the result; its restart, run 2, ended with an empty summary."""
    apply_events(
        source,
        [
            delegated(),
            requested("r1", 1, 1, FIRST),
            finished("r1", 60, "PR #812 is ready."),
            requested("r2", 2, 61, {"kind": "restart", "run": "r1"}),
            finished("r2", 90, " \n", status="cancelled"),
        ],
    )
    return the_task()


def test_the_detail_and_the_api_skip_an_empty_summary(client, source, ended_empty):
    detail = describe_task(ended_empty, load_for_task(ended_empty))
    assert (detail.latest_result_run, detail.latest_result) == ("r1", "PR #812 is ready.")
    body = client.get(
        f"/api/v1/tasks/{quote(TASK, safe='')}", headers={"Authorization": f"Bearer {source.token}"}
    ).json()
    assert (body["latest_result_run"], body["latest_result"]) == ("r1", "PR #812 is ready.")


def test_deliver_sends_the_latest_result_that_is_not_empty(ended_empty):
    preview = preview_action(ended_empty, "deliver")
    assert preview.run == "r1"
    assert preview.text.endswith("PR #812 is ready.")
    assert [r["run"] for r in preview.other_results] == []  # r2 has no result to offer


def test_deliver_of_a_run_with_an_empty_summary_is_refused(ended_empty):
    preview = preview_action(ended_empty, "deliver", run="r2")
    assert preview.refusal == "run r2 finished with an empty summary: it has no result"


def test_a_snapshot_of_a_task_without_a_named_child_reads_the_first_runs_thread(source):
    apply_events(source, [delegated(child=None), requested("r1", 1, 1, FIRST)])
    snap = load_for_subjects(source.namespace_id, {TASK}, set())
    assert set(snap.runs) == {"r1"}


def test_a_run_on_the_first_runs_thread_affects_a_task_without_a_named_child(source):
    apply_events(source, [delegated(child=None), requested("r1", 1, 1, FIRST)])
    tasks, _ = affected_subjects(source.namespace_id, [], [CHILD])
    assert TASK in tasks


def test_incremental_evaluation_judges_a_task_without_a_named_child(source):
    # Reported completed while its first run is still working: premature_completion,
    # found by evaluating what the run's thread touched, as the ingest jobs do.
    apply_events(
        source, [delegated(child=None), requested("r1", 1, 1, FIRST), reported("completed", 30)]
    )
    evaluate(source.namespace_id, datetime.fromisoformat(at(120)), tasks=[], threads=[CHILD])
    kinds = set(Flag.objects.filter(state="open").values_list("kind", flat=True))
    assert "premature_completion" in kinds
