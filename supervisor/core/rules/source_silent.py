"""source_silent: a source with unfinished tasks has sent nothing for `source_silence`.

A dead follower must not look like "all clear". Unlike the other kinds it is judged on
sources, not on a namespace snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from supervisor.core.facts.snapshot import DetectionSettings, Finding

KIND = "source_silent"


@dataclass(frozen=True)
class SourceView:
    name: str
    last_event_at: datetime | None
    unfinished_tasks: int  # known tasks of its namespace whose current report is not terminal
    settings: DetectionSettings


def findings(sources: list[SourceView], now: datetime) -> list[Finding]:
    found = []
    for source in sources:
        if source.unfinished_tasks == 0 or source.last_event_at is None:
            continue
        silent_for = now - source.last_event_at
        if silent_for.total_seconds() < source.settings.source_silence:
            continue
        found.append(
            Finding(
                KIND,
                "source",
                source.name,
                {
                    "events": [],
                    "text": (
                        f"Source {source.name} has sent nothing since "
                        f"{source.last_event_at:%Y-%m-%d %H:%M:%S} UTC while tasks of its "
                        "namespace are unfinished: its orchestrator or follower may be down."
                    ),
                    "last_event_at": source.last_event_at.isoformat(),
                },
            )
        )
    return found
