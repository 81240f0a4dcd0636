"""A task.delegated event at one moment, naming its child thread."""

AT = "2026-11-05T22:40:00.000Z"


def delegated(task_id: str, title: str, child: str) -> dict:
    return {
        "id": f"delegated-{task_id}",
        "type": "task.delegated",
        "at": AT,
        "data": {
            "task": task_id,
            "parent_thread": "thread:parent",
            "child_thread": child,
            "title": title,
            "mode": "async",
            "prompt": "p",
        },
    }
