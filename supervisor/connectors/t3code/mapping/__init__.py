"""T3 Code's rows as contract events: a pure translation, given what was seen last.

T3 stores whole entities (a subagent, a run, a provider thread's roster, a message, a
context transfer) and rewrites them in place; each event row carries the entity after
the change. `Mapper` diffs each one against its memory (a JSON-able dict that the
follower keeps beside its cursor) and says what changed in the contract's words
(docs/event-contract.md §3; t3code-facts.md for T3's side). One module per entity, each
with its handlers as functions over one `MapState` (state.py):

- tasks.py: an `app_owned` subagent is a task (`task.delegated`, `task.reported`);
  deliveries.py: what became of its result (T3's delivery record);
- background.py: a `provider_native` subagent, and each entry of a provider thread's
  roster, is a background item; commands.py: on builds without a roster, a command
  that outlives its run is;
- wakes.py: a message with a notification (or, on older builds, its author) is a wake;
  messages.py: a message as its run's trigger, text, or steered notice;
- runs.py: a run requested, started, finished; turn_items.py: what a run did (its
  error, commands, delegate_task calls, replies);
- delegate_calls.py: an agent's `delegate_task` call is a task requested (or refused);
- transfers.py: a `subagent_result` context transfer names a task's result run, and
  may be its delivery;
- threads.py: a thread as described.

rows.py dispatches the log's rows, projections.py imports the projections as if each
entity had just been seen whole, memory.py is the typed memory and ids.py the facts'
ids: derived from the facts, never from the row that told them, so importing and
following say the same fact with the same id.

This package's own names are those its callers use, re-exported here: `Mapper` and
`coalesced` (the follower), `event_id`, `legacy_notification` and `request_key` (tests).
"""

from __future__ import annotations

from .ids import event_id, request_key
from .mapper import Mapper, coalesced
from .wakes import legacy_notification

__all__ = ["Mapper", "coalesced", "event_id", "legacy_notification", "request_key"]
