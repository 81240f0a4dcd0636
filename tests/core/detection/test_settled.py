"""Settled tasks (detection/settled.py): an event on a parent thread has judged again
only the tasks under it that it can change; a settled task is judged again by its own
events."""

from datetime import datetime

import pytest
import time_machine

from supervisor.core.detection.evaluate import catch_up, evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task

pytestmark = pytest.mark.django_db

LEAD = "thread:lead"


def _event(n: str, kind: str, at: str, **data) -> dict:
    return {"id": n, "type": kind, "at": f"2026-11-20T{at}Z", "data": data}


def _child_done(task: str, at: str, *, delivered: bool) -> list[dict]:
    """`task` delegated from the lead, its child's run completed, reported completed
    (results handed by wakes alone); a wake of it delivered to the lead or none."""
    child, run = f"thread:{task}", f"thread:{task}~1"
    events = [
        _event(
            f"{task}-1",
            "task.delegated",
            f"{at}:01.000",
            task=f"task:{task}",
            parent_thread=LEAD,
            child_thread=child,
            title=task,
            mode="async",
            prompt="p",
        ),
        _event(
            f"{task}-2",
            "run.requested",
            f"{at}:01.050",
            thread=child,
            run=run,
            ordinal=1,
            trigger={"kind": "delegation", "task": f"task:{task}"},
        ),
        _event(f"{task}-3", "run.started", f"{at}:01.100", thread=child, run=run),
        _event(
            f"{task}-4",
            "run.finished",
            f"{at}:30.000",
            thread=child,
            run=run,
            status="completed",
            summary=f"{task}: done",
        ),
        _event(
            f"{task}-5",
            "task.reported",
            f"{at}:30.100",
            task=f"task:{task}",
            status="completed",
            summary=f"{task}: done",
            result_run=run,
            delivery="wake",
        ),
    ]
    if delivered:
        wake = f"{LEAD}-w-{task}"
        events += [
            _event(
                f"{task}-6",
                "wake.queued",
                f"{at}:30.200",
                wake=wake,
                thread=LEAD,
                source={"kind": "task", "task": f"task:{task}", "thread": child},
                summary=f"{task}: done",
                outcome="completed",
            ),
            _event(f"{task}-7", "wake.delivered", f"{at}:30.300", wake=wake),
        ]
    return events


def _run_started(thread: str, ordinal: int, at: str) -> list[dict]:
    """A run of `thread` asked for by a message at `at`, and started."""
    run = f"{thread}~{ordinal}"
    return [
        _event(
            f"{run}-1",
            "run.requested",
            f"{at}.000",
            thread=thread,
            run=run,
            ordinal=ordinal,
            trigger={"kind": "message"},
        ),
        _event(f"{run}-2", "run.started", f"{at}.050", thread=thread, run=run),
    ]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-20T{text}+00:00")


def _evaluated(task: str) -> datetime:
    return Task.objects.get(task_id=f"task:{task}").evaluated_at


def test_an_event_on_the_parent_judges_the_tasks_it_can_change_and_not_the_settled(source):
    ns = source.namespace_id
    lead_run = _run_started(LEAD, 1, "09:00:00") + [
        _event(
            "lead-3",
            "run.finished",
            "09:00:10.000",
            thread=LEAD,
            run=f"{LEAD}~1",
            status="completed",
            summary="Delegated.",
        ),
    ]
    history = lead_run + _child_done("done", "09:01", delivered=True)
    history += _child_done("waiting", "09:02", delivered=False)
    with time_machine.travel(_at("09:30:00"), tick=False):
        batch = apply_events(source, history)
        catch_up(ns, _at("09:30:00"), batch.touched_tasks, batch.touched_threads)
    settled = dict(Task.objects.values_list("task_id", "settled"))
    assert settled == {"task:done": True, "task:waiting": False}
    assert set(Flag.objects.filter(state="open").values_list("subject_id", "kind")) == {
        ("task:waiting", "never_delivered")
    }

    # The lead runs again: it may yet take the waiting task's result, not the done one's.
    again = _run_started(LEAD, 2, "09:40:00")
    with time_machine.travel(_at("09:40:01"), tick=False):
        batch = apply_events(source, again)
        assert batch.touched_tasks == set()  # the lead's events name no task
        catch_up(ns, _at("09:40:01"), batch.touched_tasks, batch.touched_threads)
    assert _evaluated("waiting") == _at("09:40:01")
    assert _evaluated("done") == _at("09:30:00")  # not judged again
    assert not Flag.objects.filter(state="open").exists()  # the lead's run may take it

    # What the namespace's whole judgement finds is what the narrower one left.
    with time_machine.travel(_at("09:40:02"), tick=False):
        evaluate(ns, _at("09:40:02"))
    assert not Flag.objects.filter(state="open").exists()


def test_a_settled_task_is_judged_again_by_its_own_events(source):
    ns = source.namespace_id
    with time_machine.travel(_at("09:30:00"), tick=False):
        batch = apply_events(source, _child_done("done", "09:01", delivered=True))
        catch_up(ns, _at("09:30:00"), batch.touched_tasks, batch.touched_threads)
    assert Task.objects.get(task_id="task:done").settled
    # Its child runs again (a follow-up message): not settled while that runs.
    more = _run_started("thread:done", 2, "09:35:00")
    with time_machine.travel(_at("09:35:01"), tick=False):
        batch = apply_events(source, more)
        catch_up(ns, _at("09:35:01"), batch.touched_tasks, batch.touched_threads)
    assert _evaluated("done") == _at("09:35:01")


def test_a_task_under_way_is_not_judged_again_by_its_parents_events(source):
    # Its flags (stuck's idle clock, say) read its own rows and its child thread's, not
    # its parent's: the lead running again changes nothing for it.
    ns = source.namespace_id
    under_way = _child_done("busy", "09:01", delivered=False)[:3]  # delegated, run started
    with time_machine.travel(_at("09:30:00"), tick=False):
        batch = apply_events(source, _run_started(LEAD, 1, "09:00:00") + under_way)
        catch_up(ns, _at("09:30:00"), batch.touched_tasks, batch.touched_threads)
    task = Task.objects.get(task_id="task:busy")
    assert task.settled and task.next_check_at is not None  # stuck is due on it later
    with time_machine.travel(_at("09:40:01"), tick=False):
        batch = apply_events(source, _run_started(LEAD, 2, "09:40:00"))
        catch_up(ns, _at("09:40:01"), batch.touched_tasks, batch.touched_threads)
    assert _evaluated("busy") == _at("09:30:00")  # not judged again
    # Its own clock still has the sweep judge it (stuck, when its run goes quiet).
    assert Task.objects.get(task_id="task:busy").next_check_at == task.next_check_at
