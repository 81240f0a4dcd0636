"""delegation_never_started: a parent asked to delegate a task (`task.requested`), and
within `spawn_timeout` neither the delegation with the same request id nor a refusal of
a delegation on that thread followed: the delegate call hangs before any child exists
(issue 31; Codex #24951, #34653)."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts.snapshot import DetectionSettings, Finding, RequestView, Snapshot

from .delegation_rejected import refuses_delegation

KIND = "delegation_never_started"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    late: dict[str, list[RequestView]] = {}
    for due, request in _unanswered(snap, settings):
        if due <= now:
            late.setdefault(request.parent_thread, []).append(request)
    return [_finding(thread, requests, settings) for thread, requests in sorted(late.items())]


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    """("thread", id) -> the earliest later time an unanswered request there falls due."""
    due: dict = {}
    for when, request in _unanswered(snap, settings):
        subject = ("thread", request.parent_thread)
        if when > now and (subject not in due or when < due[subject]):
            due[subject] = when
    return due


def first_requests(snap: Snapshot) -> dict[tuple[str, str], RequestView]:
    """(parent thread, client request id) -> its earliest request (by `at`, then event
    id): a request sent again is one request, asked when it was first asked."""
    first: dict[tuple[str, str], RequestView] = {}
    for request in snap.requests:
        key = (request.parent_thread, request.client_request_id)
        kept = first.get(key)
        if kept is None or (request.at, request.event_id) < (kept.at, kept.event_id):
            first[key] = request
    return first


def _unanswered(snap: Snapshot, settings: DetectionSettings) -> list[tuple[datetime, RequestView]]:
    """Each request no delegation and no refusal answers, with when it counts as hung."""
    delegated = {
        (task.parent_thread, task.client_request_id)
        for task in snap.tasks.values()
        if task.known and task.parent_thread and task.client_request_id
    }
    refused: dict[str, list[datetime]] = {}
    for rejection in snap.rejections:
        if refuses_delegation(rejection) and rejection.at is not None:
            refused.setdefault(rejection.thread, []).append(rejection.at)
    out = []
    for key, request in sorted(first_requests(snap).items()):
        if key in delegated:
            continue
        # A refusal carries no request id: one on the thread at or after the request
        # answers it (delegation_rejected then says why no child exists).
        if any(when >= request.at for when in refused.get(request.parent_thread, ())):
            continue
        out.append((after(request.at, settings.spawn_timeout), request))
    return out


def _finding(thread: str, requests: list[RequestView], settings: DetectionSettings) -> Finding:
    # Nothing here depends on `now`: the evidence changes only with the events.
    requests = sorted(requests, key=lambda r: (r.at, r.event_id))
    named = ", ".join(
        f"{r.client_request_id!r}" + (f" ({r.title!r})" if r.title else "") for r in requests
    )
    return Finding(
        KIND,
        "thread",
        thread,
        {
            "events": [r.event_id for r in requests],
            "text": (
                f"{len(requests)} delegation(s) asked for on this thread never started: "
                f"{named}. No task was delegated for them and no delegation was refused "
                f"within {settings.spawn_timeout:g} s of the request."
            ),
            "requests": [
                {
                    "client_request_id": r.client_request_id,
                    "title": r.title,
                    "parent_run": r.parent_run,
                    "requested_at": r.at.isoformat(),
                }
                for r in requests
            ],
        },
    )
