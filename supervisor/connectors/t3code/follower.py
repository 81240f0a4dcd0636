"""Follow one T3 Code state database into one source.

On the first run the projections' current state is imported (or, with `start="log"`,
the event log is read from its first row); then the event log is read by `sequence`, in
batches. Each batch is one transaction: the source's `FollowState` row is locked (two
workers never read the same rows), the rows after its position are read and mapped, the
contract events go through `do_ingest` (their evaluation is enqueued on commit), and
the new position and memory are saved with them. A crash anywhere loses nothing and
doubles nothing: the batch is read again, and its events have the same ids.

A file replaced under the same path (another inode, another first row, or a log that
went backwards) is imported afresh; what Supervisor already holds stays, and facts told
again are duplicates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from supervisor.core import clock
from supervisor.core.ingest.apply import apply_events, do_ingest
from supervisor.core.ingest.batch import IngestResult
from supervisor.core.models import FollowState, Source

from .mapping import Mapper, coalesced
from .schema import StateDB, StateDBError

log = logging.getLogger(__name__)

CHUNK = 20_000  # events per apply_events call (one transaction may hold several)
IMPORT_CHUNK = 5_000  # events per transaction of an import
KEEP_UNKNOWN_NAMES = 200
HEARTBEAT = timedelta(seconds=60)


def _merge(total: IngestResult, result: IngestResult) -> None:
    total.accepted += result.accepted
    total.duplicates += result.duplicates
    total.rejected += result.rejected
    total.touched_tasks |= result.touched_tasks
    total.touched_threads |= result.touched_threads


@dataclass
class Staged:
    """An import stored but not yet adopted: the file it read and where its log stood."""

    marker: str
    position: int
    last_event_id: str
    mapper: Mapper
    events: int
    result: IngestResult


def _locality(event: dict) -> str:
    data = event["data"]
    return data.get("thread") or data.get("child_thread") or data.get("task") or ""


@dataclass
class Progress:
    """What one step (or several) did."""

    imported: int = 0  # contract events from imports
    rows: int = 0  # event rows read
    skipped: int = 0
    unknown: int = 0  # rows and values not understood
    events: int = 0  # contract events sent (imports included)
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    batches: int = 0
    position: int = 0
    locked: bool = False  # another worker holds this source
    replaced: bool = False

    def add(self, other: Progress) -> None:
        for f in fields(self):
            value = getattr(other, f.name)
            if f.name == "position":
                self.position = value or self.position
            elif isinstance(value, bool):
                setattr(self, f.name, getattr(self, f.name) or value)
            else:
                setattr(self, f.name, getattr(self, f.name) + value)

    def summary(self) -> str:
        return (
            f"position {self.position}: {self.rows} rows read ({self.skipped} skipped, "
            f"{self.unknown} not understood), {self.events} events sent "
            f"({self.imported} from an import; {self.accepted} accepted, "
            f"{self.duplicates} duplicates, {self.rejected} rejected)"
        )


class Follower:
    def __init__(
        self,
        source: Source,
        path: str,
        *,
        env: str | None = None,
        batch_size: int = 5000,
        start: str = "import",
        evaluate: bool = True,
        db: StateDB | None = None,
    ):
        if start not in ("import", "log"):
            raise ValueError("start is 'import' or 'log'")
        self.source = source
        self.path = str(path)
        self.env = env
        self.batch_size = batch_size
        self.start = start
        self.evaluate = evaluate
        self.db = db or StateDB(self.path)
        self._state_pk: int | None = None
        # The memory as this follower last saved it: reused while the row is unchanged.
        self._cache: tuple | None = None
        self._known_unknown: set[str] = set()

    # --- loops ----------------------------------------------------------------------

    def follow(self, *, max_batches: int | None = None, time_budget: float | None = None):
        """Read until caught up (or the limits); the Progress of it all."""
        total = Progress()
        started = time.monotonic()
        while True:
            progress = self.step()
            total.add(progress)
            if progress.locked or (progress.rows == 0 and not progress.imported):
                break
            if max_batches is not None and total.batches >= max_batches:
                break
            if time_budget is not None and time.monotonic() - started > time_budget:
                break
        return total

    def run(
        self,
        interval: float,
        *,
        stop: Callable[[], bool] = lambda: False,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        """Follow until `stop()`; an unreadable file is retried with backoff, never fatal."""
        pause = interval
        while not stop():
            try:
                progress = self.follow()
            except StateDBError as exc:
                self.record_error(str(exc))
                log.warning("following %s: %s", self.path, exc)
                pause = min(max(pause * 2, interval), 30.0)
            else:
                pause = interval
                if on_progress is not None:
                    on_progress(progress)
            time.sleep(pause)

    def close(self) -> None:
        self.db.close()

    # --- one batch ------------------------------------------------------------------

    def step(self) -> Progress:
        """One transaction: lock the source's state, read one batch (an import due first
        is stored in transactions of its own, before)."""
        pk = self._state()
        try:
            staged = self._stage_import(pk)
            with transaction.atomic():
                state = (
                    FollowState.objects.select_for_update(skip_locked=True)
                    .defer("memory")
                    .filter(pk=pk)
                    .first()
                )
                if state is None:
                    return Progress(locked=True)
                return self._step(state, staged)
        except BaseException:
            self._cache = None  # the memory may hold what was rolled back
            raise

    def _stage_import(self, pk: int) -> Staged | None:
        """An import, if one is due: its events stored chunk by chunk, each chunk in a
        transaction of its own, so that a large first import never holds the database
        for long (SQLite has one writer). The cursor moves only when the import is
        adopted; until then a crash costs a second import, whose events are duplicates."""
        state = FollowState.objects.defer("memory").get(pk=pk)
        db = self.db
        if db.replaced_on_disk():
            db.close()
        marker = db.identity().marker
        fresh = not state.db_path
        replaced = not fresh and self._replaced(state, marker)
        if not (replaced or (fresh and self.start == "import")):
            return None
        if replaced:
            log.warning(
                "T3 state database %s was replaced (position %s, first row %r -> %r): "
                "importing it afresh",
                self.path,
                state.position,
                state.db_marker,
                marker,
            )
        mapper = Mapper({}, env=self.env, lookup=db)
        top, events = self._import(db, mapper)
        result = IngestResult()
        for start in range(0, len(events), IMPORT_CHUNK):
            with transaction.atomic():
                chunk = self._apply(events[start : start + IMPORT_CHUNK])
            _merge(result, chunk)
        return Staged(marker, top, db.event_id_at(top) or "", mapper, len(events), result)

    def _step(self, state: FollowState, staged: Staged | None) -> Progress:
        progress = Progress()
        db = self.db
        if db.replaced_on_disk():
            db.close()
        identity = db.identity()
        fresh = not state.db_path
        replaced = not fresh and self._replaced(state, identity.marker)
        if fresh or replaced:
            if self.start == "import" or replaced:
                # A replaced file is imported whatever the first run did: its log may
                # repeat or contradict the old one; its projections are what holds now.
                if staged is None or staged.marker != identity.marker:
                    return progress  # the file changed meanwhile: stage it again
                mapper = staged.mapper
                state.position, state.last_event_id = staged.position, staged.last_event_id
                state.imported_at = clock.now()
                state.imports += 1
                progress.imported = progress.events = staged.events
                progress.accepted = staged.result.accepted
                progress.duplicates = staged.result.duplicates
                progress.rejected = len(staged.result.rejected)
            else:
                mapper = Mapper({}, env=self.env, lookup=db)
                state.position, state.last_event_id = 0, ""
            progress.replaced = replaced
            state.db_path = self.path
            self._note_schema(state)
        else:
            mapper = Mapper(self._memory(state), env=self.env, lookup=db)
        memory = mapper.memory
        state.db_marker = identity.marker or state.db_marker
        state.db_inode = identity.inode

        rows = db.rows_after(state.position, self.batch_size)
        events = coalesced(mapper.map_rows(rows))
        if rows:
            state.position, state.last_event_id = rows[-1].sequence, rows[-1].event_id or ""
        progress.rows = len(rows)
        progress.skipped = mapper.skipped
        progress.unknown = mapper.unknown_rows + mapper.unknown_values
        progress.position = state.position
        progress.batches = 1 if (rows or progress.imported) else 0

        result = self._ingest(events)
        progress.events += len(events)
        progress.accepted += result.accepted
        progress.duplicates += result.duplicates
        progress.rejected += len(result.rejected)
        if result.rejected:
            log.error("T3 events rejected by the contract: %s", result.rejected[:5])

        if not (rows or events or fresh or replaced):
            self._heartbeat()
            self._cache = (state.position, state.updated_at, memory)
            return progress
        state.memory = memory
        state.rows_read += len(rows)
        state.rows_skipped += mapper.skipped
        state.rows_unknown += mapper.unknown_rows
        state.values_unknown += mapper.unknown_values
        state.events_sent += progress.events
        state.last_error = ""
        self._count_unknown(state, mapper.unknown)
        state.save()
        self._cache = (state.position, state.updated_at, memory)
        return progress

    def _replaced(self, state: FollowState, marker: str) -> bool:
        """Another log than the one followed: another first row, fewer rows, or another
        row where the last one read was."""
        if state.db_marker and marker != state.db_marker:
            return True
        if not state.position:
            return False
        if self.db.max_sequence() < state.position:
            return True
        at_position = self.db.event_id_at(state.position)
        return at_position is None or (
            bool(state.last_event_id) and at_position != state.last_event_id
        )

    def _import(self, db: StateDB, mapper: Mapper) -> tuple[int, list[dict]]:
        """The projections' current state, read in one snapshot with the log's top."""
        with db.snapshot():
            top = db.max_sequence()
            state = projections(db)
        # Told by entity rather than by kind, so that an import's chunks each create
        # and complete their rows instead of updating the previous chunk's one by one.
        events = sorted(mapper.import_state(**state), key=_locality)
        log.info(
            "imported T3 state database %s up to sequence %s: %s events",
            self.path,
            top,
            len(events),
        )
        return top, events

    def _ingest(self, events: list[dict]) -> IngestResult:
        total = IngestResult()
        for start in range(0, len(events), CHUNK):
            _merge(total, self._apply(events[start : start + CHUNK]))
        return total

    def _apply(self, events: list[dict]) -> IngestResult:
        # do_ingest enqueues the evaluation on commit; a follower made with
        # evaluate=False (benchmarks, some tests) only stores.
        if self.evaluate:
            return do_ingest(self.source, events)
        return apply_events(self.source, events)

    # --- the state row --------------------------------------------------------------

    def _state(self) -> int:
        if self._state_pk is None:
            try:
                state, _ = FollowState.objects.get_or_create(source=self.source)
            except IntegrityError:  # another worker made it first
                state = FollowState.objects.get(source=self.source)
            self._state_pk = state.pk
        return self._state_pk

    def _memory(self, state: FollowState) -> dict:
        if self._cache and self._cache[:2] == (state.position, state.updated_at):
            return self._cache[2]
        return FollowState.objects.values_list("memory", flat=True).get(pk=state.pk) or {}

    def _note_schema(self, state: FollowState) -> None:
        schema = self.db.schema
        for column in schema.unknown_columns:
            state.unknown[f"column:{column}"] = 1
        if schema.unknown_columns:
            log.info(
                "T3 state database %s: columns not known: %s", self.path, schema.unknown_columns
            )

    def _count_unknown(self, state: FollowState, counts) -> None:
        for name, count in counts.items():
            if name not in state.unknown and name not in self._known_unknown:
                log.warning("T3 state database %s: not understood: %s", self.path, name)
            self._known_unknown.add(name)
            if name in state.unknown or len(state.unknown) < KEEP_UNKNOWN_NAMES:
                state.unknown[name] = state.unknown.get(name, 0) + count

    def _heartbeat(self) -> None:
        """An idle file read is news too: the source is alive, not silent (§5)."""
        now = clock.now()
        Source.objects.filter(
            Q(last_event_at__isnull=True) | Q(last_event_at__lt=now - HEARTBEAT), pk=self.source.pk
        ).update(last_event_at=now)

    def record_error(self, message: str) -> None:
        FollowState.objects.filter(pk=self._state()).update(last_error=message[:2000])


def projections(db: StateDB) -> dict:
    """What an import reads of the projections (`Mapper.import_state`'s arguments);
    inside the caller's snapshot, to agree with the log's top read in it."""
    roles = db.schema.has("messages", "role")
    typed = db.schema.has("context_transfers", "type")
    return {
        "threads": db.payloads("threads"),
        "subagents": db.payloads("subagents"),
        "provider_threads": db.payloads("provider_threads"),
        # Assistant messages matter only as runs' final texts, read apart.
        "messages": db.payloads("messages", "role != 'assistant'" if roles else ""),
        "runs": db.payloads("runs"),
        "transfers": db.payloads("context_transfers", "type = 'subagent_result'" if typed else ""),
        "texts": db.last_assistant_texts(),
        "restart_ended": db.runs_ended_by_restart(),
        # Errors of failed runs, commands that may have outlived their run, and the
        # agents' delegate_task calls (other tool calls are many: left out).
        "turn_items": db.payloads(
            "turn_items",
            "type IN ('error', 'command_execution') OR (type = 'dynamic_tool'"
            " AND payload_json LIKE '%delegate\\_task%' ESCAPE '\\')"
            if db.schema.has("turn_items", "type")
            else "",
        ),
    }
