"""How bad each flag kind is: critical when a parent acts on a wrong or missing result
(or a child's work is being thrown away), warning when something is slow or odd."""

from __future__ import annotations

CRITICAL, WARNING = "critical", "warning"
RANK = {WARNING: 1, CRITICAL: 2}

SEVERITY = {
    # The parent went on with a text that is not the child's latest result.
    "stale_result": CRITICAL,
    # A newer result exists and the parent never got it.
    "undelivered_result": CRITICAL,
    # The result exists and nothing will bring it: the parent waits for good.
    "never_delivered": CRITICAL,
    # Called done while owned work still ran: the parent has a partial answer.
    "premature_completion": CRITICAL,
    # Reported failed while the child works on: the parent may redo or drop the work.
    "failed_while_running": CRITICAL,
}


def severity_of(kind: str) -> str:
    """Every other kind (stuck, late or orphan wakes, lag, duplicates, passing faults)
    needs a look but leaves no wrong answer with the parent yet: warning."""
    return SEVERITY.get(kind, WARNING)


def at_least(kind: str, minimum: str) -> bool:
    return RANK[severity_of(kind)] >= RANK.get(minimum, 1)
