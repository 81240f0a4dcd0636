"""JSON shapes of contract §6, shared by the API and the pages' data attributes."""

from supervisor.core.models import Flag, Task


def flag_json(flag: Flag) -> dict:
    return {
        "id": flag.pk,
        "kind": flag.kind,
        "state": flag.state,
        "subject": {
            "type": flag.subject_type,
            "id": flag.subject_id,
            "namespace": flag.namespace.name,
        },
        "opened_at": flag.opened_at,
        "resolved_at": flag.resolved_at,
        "acknowledged_at": flag.acknowledged_at,
        "snoozed_until": flag.snoozed_until,
        "evidence": flag.evidence,
    }


def task_summary_json(task: Task, open_flags: list[str]) -> dict:
    return {
        "id": task.task_id,
        "namespace": task.namespace.name,
        "title": task.title,
        "parent_thread": task.parent_thread.thread_id if task.parent_thread_id else None,
        "child_thread": task.child_thread.thread_id if task.child_thread_id else None,
        "mode": task.mode,
        "status": task.status,
        "work_state": task.work_state,
        "summary": task.summary,
        "delegated_at": task.delegated_at,
        "reported_at": task.reported_at,
        "open_flags": sorted(open_flags),
        "assignee": task.assignee.get_username() if task.assignee_id else None,
        "assigned_at": task.assigned_at,
    }


def action_json(action) -> dict:
    return {
        "id": action.pk,
        "kind": action.kind,
        "state": action.state,
        "task": action.task.task_id,
        "namespace": action.task.namespace.name,
        "run": action.run_id,
        "target_thread": action.target_thread_id,
        "text": action.text,
        "reason": action.reason,
        "actor": action.actor_name,
        "attempts": action.attempts,
        "last_error": action.last_error,
        # What the connector did beside the action, in words (a dispose, queued runs)
        "notes": (action.response or {}).get("notes", []),
        "created_at": action.created_at,
        "finished_at": action.finished_at,
    }


def preview_json(preview) -> dict:
    """An action's preview: what would be sent, where, through what, and its digest."""
    task = preview.task
    return {
        "kind": preview.kind,
        "task": task.task_id,
        "namespace": task.namespace.name,
        "allowed": preview.allowed,
        "refusal": preview.refusal,
        "target_thread": preview.target_thread,
        "run": preview.run,
        "text": preview.text,
        "source": preview.source.name if preview.source else None,
        "connector": preview.connector_label or None,
        "affects": preview.affects,
        # deliver: the child's other finished runs with a result, choosable as `run`
        "other_results": [
            {k: r[k] for k in ("run", "ordinal", "owned", "why")}
            | {"finished_at": r["finished_at"].isoformat() if r["finished_at"] else None}
            for r in preview.other_results
        ],
        # The task's open flags this action answers, and those that stay open after it
        "answers": [{"flag": kind, "how": how} for kind, how in preview.answers],
        "stays_open": [{"flag": kind, "why": why} for kind, why in preview.stays_open],
        "preview": preview.digest if preview.allowed else None,
    }
