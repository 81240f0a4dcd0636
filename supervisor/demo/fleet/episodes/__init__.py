"""The fleet's episodes, one module per failure of the field reports (../shared/seeds)
and one per healthy shape (`healthy/`), as `core/rules` has one module per flag kind.

Each module has `EPISODE` (records.Episode: the failure it carries, the flag kinds
Supervisor must show for it and why, whether it is paired or remote-only, how the
launcher plans it) and its coroutine: `flow(fleet, task, run, work, ref, plan)`, the
task's life after the launcher's plain delegation, or `after_turn(fleet, plan, work,
ref, prun)`, everything after the parent's turn when that is not one plain delegation.

A new flag kind adds a rule in `core/rules` and an episode here beside it; `mismatches`
says where the registry and the flag catalogue disagree (a test holds it to none).
"""

from __future__ import annotations

from collections.abc import Mapping

from . import (
    account_limit,
    cancel_not_propagated,
    completed_on_failure,
    delegation_never_started,
    duplicate_delegation,
    late_wake,
    left_by_restart,
    misrouted_wake,
    never_delivered,
    orphan_wake,
    parent_not_active,
    remote_monitor,
    serialized_wait,
    silent_background_item,
    stale_finalize,
    stuck,
    transient_failure,
)
from .healthy import (
    background,
    monitor,
    monitor_unawaited,
    real_failure,
    retry,
    reviewer,
    simple,
)

# In this order the launcher draws from them: another order is another fleet.
FAILING = (
    stale_finalize,
    remote_monitor,
    transient_failure,
    serialized_wait,
    parent_not_active,
    duplicate_delegation,
    orphan_wake,
    stuck,
    late_wake,
    never_delivered,
    left_by_restart,
    delegation_never_started,
    completed_on_failure,
    account_limit,
    misrouted_wake,
    cancel_not_propagated,
    silent_background_item,
)
HEALTHY = (simple, background, monitor, monitor_unawaited, reviewer, retry, real_failure)
EPISODES = HEALTHY + FAILING
BY_SHAPE = {module.EPISODE.shape: module for module in EPISODES}

# Kinds no episode shows, and what shows them instead.
SHOWN_ELSEWHERE = {"source_silent": "the runner withholding events (simulate --outage)"}

# The tables the fleet's callers and tests read, from the episodes' declarations.
FAILURES = tuple(module.EPISODE.failure for module in FAILING)
# Healthy tasks (None) must open nothing: no owed work at their report, their latest
# result handed and reached, wakes delivered at once, activity well inside `stuck_after`.
EXPECTED_FLAGS: dict[str | None, tuple[str, ...]] = {
    None: (),
    **{module.EPISODE.failure: module.EPISODE.opens for module in FAILING},
}
# Kinds a failure raises and resolves again before `until`: raised, not open at the end.
PASSING_FLAGS: dict[str | None, tuple[str, ...]] = {
    module.EPISODE.failure: module.EPISODE.passing for module in FAILING if module.EPISODE.passing
}
# Flags on the failing task's child thread.
THREAD_FLAGS: dict[str, tuple[str, ...]] = {
    module.EPISODE.failure: module.EPISODE.child_thread_opens
    for module in FAILING
    if module.EPISODE.child_thread_opens
}
# Flags on the failing task's parent thread.
PARENT_THREAD_FLAGS: dict[str, tuple[str, ...]] = {
    module.EPISODE.failure: module.EPISODE.parent_thread_opens
    for module in FAILING
    if module.EPISODE.parent_thread_opens
}
# Failures that take two delegations (the first of the pair is healthy).
PAIRED = frozenset(module.EPISODE.failure for module in FAILING if module.EPISODE.paired)
# Failures that need the child on another environment.
REMOTE_ONLY = frozenset(module.EPISODE.failure for module in FAILING if module.EPISODE.remote_only)
HEALTHY_SHAPES = tuple((module.EPISODE.shape, module.EPISODE.weight) for module in HEALTHY)


def kinds_shown(episode) -> set[str]:
    """The flag kinds an episode makes Supervisor raise, on its task or its threads."""
    return {
        *episode.opens,
        *episode.passing,
        *episode.child_thread_opens,
        *episode.parent_thread_opens,
    }


def mismatches(catalogue: Mapping, episodes=EPISODES) -> list[str]:
    """Where `episodes` and the flag `catalogue` (core/flags/kinds.py) disagree: a kind
    shown by no episode (nor `SHOWN_ELSEWHERE`), a kind the catalogue lacks, a failure
    or shape claimed twice, a healthy shape that opens a flag, a module with no
    coroutine."""
    found = []
    shapes: dict[str, str] = {}
    shown: set[str] = set()
    for module in episodes:
        episode, name = module.EPISODE, module.__name__.rsplit(".", 1)[-1]
        if episode.shape in shapes:
            found.append(f"{name} and {shapes[episode.shape]} both claim {episode.shape!r}")
        shapes[episode.shape] = name
        if episode.failure is None and kinds_shown(episode):
            found.append(f"{name} is healthy yet opens {sorted(kinds_shown(episode))}")
        if episode.failure not in (None, episode.shape):
            found.append(f"{name} carries {episode.failure!r} under shape {episode.shape!r}")
        unknown = sorted(kinds_shown(episode) - set(catalogue))
        if unknown:
            found.append(f"{name} claims {unknown}, not in the catalogue")
        if not hasattr(module, "flow") and not hasattr(module, "after_turn"):
            found.append(f"{name} has no coroutine: `flow` or `after_turn`")
        shown |= kinds_shown(episode)
    for kind in catalogue:
        if kind not in shown and kind not in SHOWN_ELSEWHERE:
            found.append(f"{kind} has no episode")
    for kind in SHOWN_ELSEWHERE:
        if kind not in catalogue:
            found.append(f"{kind}, shown elsewhere, is not in the catalogue")
    return found
