"""What `manage.py replay` does with scenario files (contract §7): each replayed into a
throw-away store of its own on a virtual clock; the configured database is not touched."""

from __future__ import annotations

from collections.abc import Iterator

from supervisor.core.detection.scenario import Scenario, ThrowAwayStore, differences, replay


def replay_all(scenarios: list[Scenario]) -> Iterator[tuple[Scenario, dict, list[str]]]:
    """Each scenario with its result and how that differs from what it expects."""
    with ThrowAwayStore() as store:
        for scenario in scenarios:
            store.reset()
            result = replay(scenario)
            yield scenario, result, differences(scenario, result)
