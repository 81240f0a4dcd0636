"""What a fault test sends and what it must find afterwards: a generated history with
its expected open flags (bench/history.py), and the checks every test ends with."""

from __future__ import annotations

import time

from bench.history import History, generate
from tests.support.faults.services import Stack


def history(tasks: int, seed: int) -> History:
    """About 20 events a task ending 90 minutes ago, so every flag is due at once; more
    faulty tasks than the benchmark's mix, so that there are flags to get right."""
    return generate(tasks, seed=seed, stale=0.1, transient=0.06, duplicate=0.03)


def batches(events: list[dict], size: int) -> list[list[dict]]:
    return [events[i : i + size] for i in range(0, len(events), size)]


def expected_flags(made: History) -> set[tuple[str, str, str]]:
    return {("task", task, kind) for task, kind in made.expected}


def settle(stack: Stack, expected: set, timeout: float = 60) -> float:
    """Seconds until the open flags are `expected` and nothing awaits evaluation; then
    two more sweeps must change nothing. Fails with the difference otherwise."""
    started = time.monotonic()
    deadline = started + timeout
    found: set = set()
    while time.monotonic() < deadline:
        found = stack.open_flags()
        if found == expected and stack.backlog() == 0:
            took = time.monotonic() - started
            time.sleep(1.2)  # the sweep runs every 0.5 s
            found = stack.open_flags()
            assert found == expected, describe(expected, found)
            return took
        time.sleep(0.25)
    raise AssertionError(
        f"not settled after {timeout} s (backlog {stack.backlog()}): {describe(expected, found)}"
    )


def describe(expected: set, found: set) -> str:
    missing, extra = sorted(expected - found), sorted(found - expected)
    return f"{len(missing)} missing {missing[:5]}, {len(extra)} unexpected {extra[:5]}"


def stored_once(stack: Stack, source: str, sent: int) -> dict:
    """Figures of what the source's events became: stored, lost, doubled."""
    rows, distinct = stack.stored_events(source)
    return {"stored": distinct, "lost": sent - distinct, "doubled": rows - distinct}
