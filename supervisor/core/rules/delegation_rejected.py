"""delegation_rejected: a thread's delegation was refused (e.g. its parent run had settled)."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.facts.ownership import EARLIEST
from supervisor.core.facts.snapshot import DetectionSettings, Finding, RejectionView, Snapshot

KIND = "delegation_rejected"


def refuses_delegation(rejection: RejectionView) -> bool:
    return rejection.code == "parent_not_active" or rejection.tool == "delegate_task"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    by_thread: dict[str, list[RejectionView]] = {}
    for rejection in snap.rejections:
        if refuses_delegation(rejection):
            by_thread.setdefault(rejection.thread, []).append(rejection)
    return [_finding(thread, rejections) for thread, rejections in sorted(by_thread.items())]


def _finding(thread: str, rejections: list[RejectionView]) -> Finding:
    rejections = sorted(rejections, key=lambda r: (r.at or EARLIEST, r.event_id))
    codes = sorted({r.code for r in rejections})
    return Finding(
        KIND,
        "thread",
        thread,
        {
            "events": [r.event_id for r in rejections],
            "text": (
                f"{len(rejections)} delegation(s) on this thread were refused "
                f"({', '.join(codes)}); the latest: {rejections[-1].message!r}."
            ),
            "rejections": [
                {"tool": r.tool, "code": r.code, "caller": r.caller, "message": r.message}
                for r in rejections
            ],
        },
    )
