"""transient_failure: the task failed on a passing provider or transport fault.

The advice is to continue the child, not to delegate again.

Narrowed (issue 31), a compatible extension: a failure that reads as an account limit
(account_limit: a usage limit, an insufficient quota, a credit balance, or the failure
class `usage_limit`) is not a passing fault, whatever status code it carries (an
insufficient quota is a 429): continuing at once fails again, so this kind does not
open there with its contrary advice.
"""

from __future__ import annotations

import re
from datetime import datetime

from supervisor.core.facts.ownership import judged_tasks
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView

from . import account_limit

KIND = "transient_failure"

PASSING_STATUS = re.compile(r"\b(?:408|429|500|502|503|504|529)\b")
FORBIDDEN = re.compile(r"\b403\b")
CLOUDFLARE = re.compile(r"cloudflare", re.IGNORECASE)
PASSING_PHRASE = re.compile(
    r"overloaded|rate[ _-]?limit|fetch failed|ECONNRESET|ETIMEDOUT|socket hang up|timed out",
    re.IGNORECASE,
)


def passing_fault(text: str | None) -> str | None:
    """The words of `text` that read as a passing fault, or None."""
    if not text:
        return None
    if match := PASSING_STATUS.search(text) or PASSING_PHRASE.search(text):
        return match.group(0)
    # A 403 alone is a real refusal; behind Cloudflare it is a passing challenge.
    if (forbidden := FORBIDDEN.search(text)) and (cloudflare := CLOUDFLARE.search(text)):
        return f"{forbidden.group(0)} {cloudflare.group(0)}"
    return None


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(snap: Snapshot, task: TaskView) -> Finding | None:
    report = task.current_report
    if report is None or report.status != "failed":
        return None
    if account_limit.reading(snap, task) is not None:
        return None  # an account limit: waiting for the reset, not continuing at once
    # One text, joined by a space: a 403 in the summary and "Cloudflare" in the error
    # count together (contract 1.1).
    text = " ".join(part for part in (report.summary, report.error) if part)
    fault = passing_fault(text)
    if fault is None:
        return None
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [report.event_id],
            "text": (
                f"The task failed on what reads as a passing fault ({fault!r}): continue the "
                f"child rather than delegate again."
            ),
            "fault": fault,
        },
    )
