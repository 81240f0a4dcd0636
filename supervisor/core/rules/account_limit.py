"""account_limit: a usage or spend limit of the account ended the child (Claude Code
#83412, #87489, Roo #7780). Continuing at once fails again: the advice is to continue
after the reset, which the evidence names when the text gives it.

Raised on T whose current report is `failed` when its text (the summary and the error
joined by a space, as transient_failure reads it) reads as an account limit, or the
report, or the run it is judged by (completed_on_failure.judged_run), carries
`failure_class: "usage_limit"`. Resolved by a later report of T that is not such a
failure (the child continued, or the orchestrator reported it again).

Told apart from a passing fault: "Rate limit reached" and a per-minute quota are
passing (transient_failure); a usage limit, an insufficient quota, a credit balance, a
spend limit are not. Where both read, this kind wins and transient_failure stays shut.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from supervisor.core.facts.ownership import judged_tasks
from supervisor.core.facts.snapshot import (
    DetectionSettings,
    Finding,
    ReportView,
    Snapshot,
    TaskView,
)

from .completed_on_failure import judged_run

KIND = "account_limit"
USAGE_LIMIT = "usage_limit"  # T3's failure class for it

# Always the account's: no passing fault is worded so.
ACCOUNT_PHRASE = re.compile(
    r"usage[ _-]?limit|insufficient[ _-]?quota|credit balance|out of credits"
    r"|(?:no|insufficient) credits|spend(?:ing)?[ _-]?limit|billing (?:details|hard limit|limit)"
    r"|payment required|hit your (?:usage )?limit|(?:5-hour|weekly|daily|monthly) limit"
    r"|(?<!rate )(?<!rate_)(?<!rate-)(?<!rate)limit reached\b[^.!?\n]{0,80}?\bresets?\b",
    re.IGNORECASE,
)
# A quota is the account's unless the text says it is per minute (or second): a
# per-minute quota is a rate limit, a passing fault (scenario transient-one-text); a
# disk quota is the machine's, a real failure.
QUOTA = re.compile(
    r"(?<!disk )quota[ _-]?(?:exceeded|reached)"
    r"|(?:exceeded|out of|over) (?:your |the )?(?:current )?quota",
    re.IGNORECASE,
)
PER_MOMENT = re.compile(r"per[ _-]?(?:minute|second)|rate[ _-]?limit", re.IGNORECASE)

# The reset, where the text gives it. "resets"/"try again"/"retry"/"available again",
# then a moment: in a span ("in 3 hours", "in 4 days 23 hours"), at a time stamp
# ("at 2026-12-06T17:00Z"), at a clock time ("at 5pm", "17:00 UTC", "3am (Europe/Paris)").
_LEAD = r"(?:resets?|reset at|try again|retry|available again|until)"
_UNIT = r"(?:d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)"
SPAN = re.compile(
    rf"\b{_LEAD}\s+in\s+(?P<span>\d+\s*{_UNIT}\b(?:[\s,]*(?:and\s+)?\d+\s*{_UNIT}\b)*)",
    re.IGNORECASE,
)
SPAN_PART = re.compile(rf"(\d+)\s*({_UNIT})\b", re.IGNORECASE)
STAMP = re.compile(
    rf"\b{_LEAD}\s+(?:at\s+|on\s+|after\s+)?"
    r"(?P<stamp>\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)",
    re.IGNORECASE,
)
CLOCK = re.compile(
    rf"\b{_LEAD}\s+(?:at\s+)?(?P<hour>\d{{1,2}})(?::(?P<minute>\d{{2}}))?\s*(?P<half>[ap]\.?m\.?)?"
    r"(?:\s*\(?\s*(?P<zone>UTC|GMT|Z\b|[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)\)?)?",
    re.IGNORECASE,
)
# Claude Code's own: "Claude AI usage limit reached|1765040400" (the reset, Unix seconds).
EPOCH = re.compile(r"limit reached\|(?P<epoch>\d{10})\b", re.IGNORECASE)


def account_limit_words(text: str | None) -> str | None:
    """The words of `text` that read as an account limit, or None."""
    if not text:
        return None
    if match := ACCOUNT_PHRASE.search(text):
        return match.group(0)
    if (match := QUOTA.search(text)) and not PER_MOMENT.search(text):
        return match.group(0)
    return None


def reset_time(text: str | None, at: datetime) -> tuple[datetime, str] | None:
    """When the limit resets, as `text` says it, and the words that said it; a span or a
    clock time counts from `at` (the report's time), in UTC unless the text names a zone.
    A clock time is the next one at or after `at`."""
    if not text:
        return None
    if match := EPOCH.search(text):
        return datetime.fromtimestamp(int(match["epoch"]), UTC), match.group(0)
    if match := STAMP.search(text):
        stamp = match["stamp"].upper().replace(" ", "T").replace("Z", "+00:00")
        try:
            when = datetime.fromisoformat(stamp)
        except ValueError:
            when = None
        if when is not None:
            when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
            return when, match.group(0)
    if match := SPAN.search(text):
        span = timedelta()
        for number, unit in SPAN_PART.findall(match["span"]):
            span += timedelta(**{_unit(unit): int(number)})
        return at + span, match.group(0)
    for match in CLOCK.finditer(text):
        if when := _clock(match, at):
            return when, match.group(0).strip()
    return None


def _unit(unit: str) -> str:
    unit = unit.lower()
    if unit.startswith("d"):
        return "days"
    if unit.startswith("h"):
        return "hours"
    if unit.startswith("m"):
        return "minutes"
    return "seconds"


def _clock(match: re.Match, at: datetime) -> datetime | None:
    hour, minute, half = int(match["hour"]), int(match["minute"] or 0), match["half"]
    if half is None and match["minute"] is None:
        return None  # "resets 5" is no time of day
    if half is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.lower().startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    zone = match["zone"]
    try:
        tz = UTC if zone is None or zone.upper() in ("UTC", "GMT", "Z") else ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        tz = UTC
    local = at.astimezone(tz)
    when = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when < local:
        when += timedelta(days=1)
    return when.astimezone(UTC)


def reading(snap: Snapshot, task: TaskView) -> dict | None:
    """What reads as an account limit on T's current report (its evidence), or None."""
    report = task.current_report
    if report is None or report.status != "failed":
        return None
    text = report_text(report)
    words = account_limit_words(text)
    run = judged_run(snap, task)
    classes = [c for c in (report.failure_class, run.failure_class if run else None) if c]
    if words is None and USAGE_LIMIT not in classes:
        return None
    reset = reset_time(text, report.at)
    return {
        "limit": words,
        "failure_class": USAGE_LIMIT if USAGE_LIMIT in classes else None,
        "resets_at": _to_the_second_up(reset[0]) if reset else None,
        "reset_words": reset[1] if reset else None,
        "run": run.id if run is not None and run.failure_class == USAGE_LIMIT else None,
    }


def _to_the_second_up(when: datetime) -> str:
    """Rounded up: a snooze until the named reset must not end before the limit resets."""
    if when.microsecond:
        when = when.replace(microsecond=0) + timedelta(seconds=1)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_events(snap: Snapshot, evidence: dict) -> list[str]:
    """The finish of the run whose failure class counted."""
    run = snap.runs.get(evidence["run"] or "")
    return [run.finished_event] if run is not None and run.finished_event else []


def report_text(report: ReportView) -> str:
    """The summary and the error as one text, joined by a space (contract 1.1)."""
    return " ".join(part for part in (report.summary, report.error) if part)


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = []
    for task in judged_tasks(snap):
        evidence = reading(snap, task)
        if evidence is None:
            continue
        report = task.current_report
        said = (
            f"reads as an account limit ({evidence['limit']!r})"
            if evidence["limit"]
            else "the orchestrator classes it usage_limit"
        )
        reset = evidence["resets_at"]
        when = (
            f"; the limit resets at {reset[:10]} {reset[11:16]} UTC ({evidence['reset_words']!r})"
            if reset
            else "; the text does not say when the limit resets"
        )
        found.append(
            Finding(
                KIND,
                "task",
                task.id,
                {
                    "events": [report.event_id, *_run_events(snap, evidence)],
                    "text": f"The task failed on what {said}{when}: continue the child after "
                    "the reset, not before (it would fail again).",
                    **evidence,
                },
            )
        )
    return found
