"""Fix and replay a dead letter: the operator's corrected body goes through the one
ingest path; a body that is still wrong is refused before ingest sees it, so the letter
keeps the new error and no second dead letter is made."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from supervisor.core import changes, clock
from supervisor.core.access.roles import actor_name
from supervisor.core.changes import ChangeKind
from supervisor.core.contract.events import (
    EventError,
    event_id_of,
    parse_event,
    read_json,
    storable,
)
from supervisor.core.ingest.apply import do_ingest
from supervisor.core.ingest.batch import IngestResult
from supervisor.core.models import DeadLetter, Source


class ReplayError(ValueError):
    """The fixed body cannot be replayed; the message says where and why."""


def parse_body(text: str) -> list[Any]:
    """The events of a fixed body: a JSON object (one event, or `{"events": [...]}`), a
    JSON array of events, or one event per line (NDJSON)."""
    if not text or not text.strip():
        raise ReplayError("the body is empty")
    try:
        value = read_json(text)
    except ValueError as exc:
        # Lines end at "\n" only (splitlines() also cuts at U+2028, which JSON strings hold).
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        # NDJSON only when every line looks like an object: a typo in pretty-printed
        # JSON must be reported where it is, not as "line 1 is not valid JSON".
        if len(lines) < 2 or not all(line[0] == "{" and line[-1] == "}" for line in lines):
            raise ReplayError(f"the body is not valid JSON: {exc}") from None
        value = []
        for number, line in enumerate(lines, start=1):
            try:
                value.append(read_json(line))
            except ValueError as line_exc:
                raise ReplayError(f"line {number} is not valid JSON: {line_exc}") from None
    if isinstance(value, dict) and isinstance(value.get("events"), list):
        value = value["events"]
    events = value if isinstance(value, list) else [value]
    if not events:
        raise ReplayError("the body holds no event")
    for number, event in enumerate(events, start=1):
        if not isinstance(event, dict):
            raise ReplayError(f"event {number} is not a JSON object")
    return events


def check_events(events: list[Any]) -> None:
    """Every event must pass the contract: one rejected here would become a new dead letter."""
    problems = []
    for number, raw in enumerate(events, start=1):
        try:
            parse_event(raw)
        except EventError as exc:
            event_id = event_id_of(raw)
            where = f"event {number}" + (f" ({event_id})" if event_id else "")
            problems.append(f"{where}: {exc}")
    if problems:
        raise ReplayError("; ".join(problems))


def do_replay_dead_letter(dead_letter: DeadLetter, body_text: str, by=None) -> IngestResult:
    """Apply the fixed body as events of the letter's source and mark the letter replayed;
    ReplayError (kept on the letter as `replay_error`) when it cannot. Replaying again is
    harmless: ingest takes each event id of a source once."""
    try:
        events = parse_body(body_text)
        check_events(events)
        with transaction.atomic():
            letter = DeadLetter.objects.select_for_update().get(pk=dead_letter.pk)
            source = Source.objects.filter(pk=letter.source_id).first()
            if source is None:
                raise ReplayError("its source no longer exists: there is no one to replay it as")
            result = do_ingest(source, events)  # evaluated once the replay commits
            if result.rejected:
                # Checked above, so only storage can refuse one now (core.storage_errors);
                # roll the new dead letters back rather than keep a second copy of this one.
                raise ReplayError("; ".join(r["error"] for r in result.rejected))
            letter.replayed_at, letter.replay_error = clock.now(), None
            letter.save(update_fields=["replayed_at", "replay_error"])
            changes.record(
                ChangeKind.DEAD_LETTER_REPLAYED,
                _subject(letter, source.namespace_id, by),
                events=[event_id_of(e) for e in events],
                accepted=result.accepted,
                duplicates=result.duplicates,
            )
    except ReplayError as exc:
        _keep_error(dead_letter, storable(str(exc)), by)
        raise
    dead_letter.refresh_from_db()
    return result


def _keep_error(dead_letter: DeadLetter, error: str, by) -> None:
    with transaction.atomic():
        DeadLetter.objects.filter(pk=dead_letter.pk).update(replay_error=error)
        namespace_id = (
            Source.objects.filter(pk=dead_letter.source_id)
            .values_list("namespace_id", flat=True)
            .first()
        )
        changes.record(
            ChangeKind.DEAD_LETTER_REPLAY_FAILED,
            _subject(dead_letter, namespace_id, by),
            error=error,
        )
    dead_letter.replay_error = error


def _subject(letter: DeadLetter, namespace_id: int | None, by) -> changes.Subject:
    facts = {"actor": actor_name(by), "dead_letter": letter.pk, "event": letter.event_id}
    return changes.Subject("dead", str(letter.pk), namespace_id, facts)
