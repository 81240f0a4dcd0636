"""Events whose texts test what storage holds."""


def delegated(event_id, task, title, parent="thread:p", child="thread:c"):
    return {
        "id": event_id,
        "type": "task.delegated",
        "at": "2026-11-05T22:40:00Z",
        "data": {"task": task, "parent_thread": parent, "child_thread": child, "title": title},
    }
