"""A turn item tells what a run did: its `error` (the message and class a failed run's
end carries), a `command_execution` that may outlive it (commands.py), an agent's
`delegate_task` call (delegate_calls.py), a reply (on builds that write replies as items
only); any of them is the run's activity.
"""

from __future__ import annotations

from . import commands, delegate_calls, runs
from .fields import string
from .memory import KEEP_RUNS, bound
from .state import MapState

# T3's failure classes of a run's error item (facts §2; `usage_limit` on newer builds).
# Another is passed on as T3 wrote it, and counted.
FAILURE_CLASSES = frozenset(
    {
        "provider_error",
        "transport_error",
        "permission_error",
        "validation_error",
        "unknown",
        "usage_limit",
    }
)


def turn_item(state: MapState, p: dict, occurred: str | None) -> None:
    """A turn item's row, by its type; any item of a run under way is its activity."""
    kind, run = p.get("type"), string(p.get("runId"))
    if kind == "error" and run:
        failure = p.get("failure") if isinstance(p.get("failure"), dict) else {}
        message = string(failure.get("message")) or string(p.get("title"))
        if message:
            state.memory.errors[run] = message
            bound(state.memory.errors, KEEP_RUNS)
        failure_class = string(failure.get("class"))[:200]
        if failure_class:
            # T3's own kind of failure (a usage limit, a transport fault): the rules
            # tell an account limit from a passing fault by it.
            if failure_class not in FAILURE_CLASSES:
                state.unknown_value(f"failure.class:{failure_class}")
            state.memory.classes[run] = failure_class
            bound(state.memory.classes, KEEP_RUNS)
    elif kind == "command_execution" and run:
        commands.command(state, p, run, occurred)
    elif kind == "dynamic_tool" and delegate_calls.is_delegate_call(p):
        delegate_calls.delegate_call(state, p, occurred)
    elif kind == "assistant_message" and run in state.memory.runs:
        # A build that writes replies as items only: the item is the run's text.
        text = string(p.get("text"))
        if text and run not in state.memory.texts:
            runs.reply(state, run, string(p.get("updatedAt")), text)
    runs.activity(state, p, occurred)
