"""`make run`'s demo fleet: which failures open it, the detection settings it is timed
against, and its pace. `simulate` and `manage.py up` read these."""

from __future__ import annotations

# `make run`'s demo: every task and thread kind opens within its first five minutes.
# The opening starts the slow failures first (a finalize waiting on a long background
# item, a hang timed against `stuck_after`), the quick ones (a held wait call) last.
DEMO_OPENING: tuple[str | None, ...] = (
    "stale_finalize",
    "remote_monitor",
    "duplicate_delegation",
    "stuck",
    # Timed against `stuck_after` like stuck: among the slow ones, not at the end.
    "silent_background_item",
    "left_by_restart",
    "late_wake",
    "orphan_wake",
    "never_delivered",
    "transient_failure",
    "parent_not_active",
    # Quick (`cancel_grace` after a short run), yet not last: the held wait call is.
    "cancel_not_propagated",
    "serialized_wait",
    "delegation_never_started",
    "completed_on_failure",
    "account_limit",
    "misrouted_wake",
)
DEMO_DETECTION = {
    "delivery_grace": 20,
    "orphan_grace": 20,
    "wake_timeout": 100,
    "stuck_after": 150,
    "wake_start_timeout": 90,
    "dispatch_lag": 5,
    "source_silence": 45,
    "spawn_timeout": 30,
    "cancel_grace": 20,
}
# The opening's last episode starts by then, however many failures it carries, so that
# the quick ones at its end still flag within the demo's first five minutes.
OPENING_SPAN = 200.0
DEMO_DURATIONS = 0.25  # work and waits at a quarter of a real fleet's
DEMO_RATE = 3.0  # delegations per minute
