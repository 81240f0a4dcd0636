"""stale_result: the parent was handed a text that is not the task's latest result.

Reads `core.facts.reading` by the contract's words (§4, §5): handed, latest result,
reached."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.facts import reading
from supervisor.core.facts.ownership import judged_tasks, run_name
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView

KIND = "stale_result"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(snap: Snapshot, task: TaskView) -> Finding | None:
    handings = reading.handed_by_contract(snap, task)
    latest = reading.latest_result_by_contract(snap, task)
    if not handings or latest is None or latest.summary is None:
        return None
    if reading.handed_text_by_contract(snap, task, latest.summary):
        return None
    if reading.reached_by_contract(snap, task, latest.summary):
        return None
    texts = list(dict.fromkeys(h.text for h in handings))
    events = [h.event_id for h in handings] + [latest.finished_event]
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": list(dict.fromkeys(e for e in events if e is not None)),
            "text": (
                f"The parent was handed {_quoted(texts)}, but the latest result, from "
                f"{run_name(latest)}, is {latest.summary!r} and has not reached it."
            ),
            "handed": [{"text": h.text, "via": h.via} for h in handings],
            "latest_result": latest.summary,
            "latest_run": latest.id,
        },
    )


def _quoted(texts: list[str]) -> str:
    return " and ".join(repr(text) for text in texts)
