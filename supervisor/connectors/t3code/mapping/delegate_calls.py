"""An agent's `delegate_task` call is a request for a task (`task.requested`), made
whether or not a task ever comes of it; one T3 (or the provider) refused is
`tool.rejected`. The task it made names it by its `client_request_id`.
"""

from __future__ import annotations

import re
from typing import Any

from ..schema import decoded
from . import tasks
from .fields import first_string, string
from .memory import KEEP_REQUESTS, Request, bound
from .state import MapState

# The agents' tool that delegates a task, as providers name a call of it (Claude:
# `mcp__<server>__delegate_task`; Codex: `<server>.delegate_task`).
DELEGATE_TOOL = "delegate_task"
TOOL_NAME_PARTS = re.compile(r"__|[./:]")


def delegate_call(state: MapState, p: dict, occurred: str | None) -> None:
    """An agent's `delegate_task` call (a `dynamic_tool` item of the parent's run):
    `task.requested` when first seen, whether or not a task ever comes of it. Its
    `client_request_id` is the agent's own `clientRequestId` (T3 keys the task's
    command, and so the task id, by it), else the item's id; the task it made says
    the same (`tasks.request_of`), found by that key, by the call's output (`taskId`), or
    as the open call of the same run with the task's title."""
    item_key, thread = string(p.get("id")), string(p.get("threadId"))
    if not item_key or not thread:
        state.unknown_value("dynamic_tool.id")
        return
    arguments = as_object(p.get("input"))
    key = string(arguments.get("clientRequestId"))[:500] or item_key
    requests = state.memory.requests
    request = requests.get(key)
    if request is None:
        at = state.at(p.get("startedAt"), p.get("createdAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        title = string(arguments.get("title"))[:500] or None
        request = requests[key] = {
            "thread": thread,
            "run": string(p.get("runId")) or None,
            "title": title,
            "task": None,
        }
        bound(requests, KEEP_REQUESTS)
        state.emit(
            "task.requested",
            (key,),
            at,
            {
                "parent_thread": thread,
                "parent_run": request["run"],
                "client_request_id": key,
                "title": title,
            },
        )
    output = as_object(p.get("output"))
    named = output.get("taskId")
    if request["task"] is None and not named and p.get("status") == "failed":
        refused(state, p, request, key, output, occurred)
    if request["task"] is None and isinstance(named, str) and named:
        request["task"] = named
        task = state.memory.tasks.get(named)
        if task is not None and task.get("request") != key and task.get("said"):
            # Told before this call named it: told again, now with the call's id.
            task["request"], task["late_request"] = key, 1
            title, prompt = task.pop("said")
            task["told_request"] = key
            tasks.delegated(state, named, {"title": title, "prompt": prompt or None}, task)


def refused(
    state: MapState, p: dict, request: Request, key: str, output: dict, occurred: str | None
) -> None:
    """A call that failed and named no task: T3 (or the provider) refused it, and
    no task will come of it (`tool.rejected`, once). T3's refusal is its MCP failure
    `{code, message}`; Codex stores a failed call's `{error: message}`."""
    if request.get("refused"):
        return
    at = state.at(p.get("completedAt"), p.get("updatedAt"), occurred)
    if at is None:
        return
    error = output.get("error")
    nested = error if isinstance(error, dict) else {}
    code = first_string(output.get("code"), nested.get("code")) or "failed"
    message = first_string(
        output.get("message"), nested.get("message"), error if isinstance(error, str) else None
    )
    request["refused"] = 1
    state.emit(
        "tool.rejected",
        (key,),
        at,
        {
            "thread": request["thread"],
            "tool": DELEGATE_TOOL,
            "code": code[:200],
            "message": message or "delegate_task failed without a task.",
        },
    )


def is_delegate_call(p: dict) -> bool:
    """Is this `dynamic_tool` item a call of the agents' `delegate_task`?"""
    name = string(p.get("toolName"))
    return bool(name) and TOOL_NAME_PARTS.split(name)[-1] == DELEGATE_TOOL


def as_object(value: Any) -> dict:
    """A tool call's input or output as an object (providers store either, some as
    JSON text)."""
    if isinstance(value, str):
        value = decoded(value)
    if isinstance(value, list):
        # An MCP result's content blocks: the first whose text is a JSON object.
        for block in value:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(decoded(text) if isinstance(text, str) else None, dict):
                return decoded(text)
    return value if isinstance(value, dict) else {}
