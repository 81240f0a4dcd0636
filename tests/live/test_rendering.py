"""A silence created, edited or ended changes what every page shows (which task's flags
need action), so its change concerns every page, the task pages included."""

from supervisor.live.rendering import concerns, page_of


def note(kind: str, tasks=()) -> dict:
    return {"id": 1, "kind": kind, "tasks": list(tasks), "threads": [], "flag": None}


def test_a_silence_change_concerns_every_page():
    for kind in ("silence.created", "silence.edited", "silence.ended"):
        for view, subject in (("overview", 0), ("list", 0), ("task", 7), ("thread", 3)):
            assert concerns(note(kind), page_of(view, subject, True)), (kind, view)


def test_another_tasks_change_still_does_not_concern_a_task_page():
    assert not concerns(note("task.updated", [8]), page_of("task", 7, True))
