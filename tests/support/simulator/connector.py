"""The simulator connector, for tests: actions answered in-process by a simulated
orchestrator. Admins are not offered it; tests/conftest.py registers it.

The answer (`answers.py`) is made from what the mirror knows of the target thread and
ingested as the source's own events, in one transaction with the evaluation of what
they touched enqueued on commit: exactly as if the orchestrator had reported them.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import transaction

from supervisor.core import clock
from supervisor.core.contract.connectors import (
    Capabilities,
    Connector,
    ConnectorError,
    Outgoing,
    Receipt,
)
from supervisor.core.ingest.apply import do_ingest
from supervisor.core.models import Namespace, Run, Task
from supervisor.demo.answers import ThreadView, answer_events

from . import settings as simulator_settings


class SimulatorConnector(Connector):
    name = "simulator"
    label = "Simulated orchestrator"

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        return simulator_settings.check_settings(settings)

    def capabilities(self) -> Capabilities:
        return Capabilities(message=True, stop=True)

    def send_message(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        return self.answer(outgoing, timeout=timeout)

    def stop_run(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        return self.answer(outgoing, timeout=timeout)

    def answer(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        """Ingest the simulated orchestrator's answer; `duplicate` when it had taken this
        idempotency key before (every event of the answer was already ingested)."""
        delay = min(self.settings["reply_delay"], timeout)
        if delay > 0:
            time.sleep(delay)
        namespace_id = self.source.namespace_id
        with transaction.atomic():
            # The ordinal an answer takes is read, then written: one answer at a time.
            Namespace.objects.select_for_update().filter(pk=namespace_id).first()
            view = view_from_mirror(namespace_id, outgoing)
            events = answer_events(outgoing, view, clock.now())
            result = do_ingest(self.source, events)
        if result.rejected:
            # Our own events refused: a bug in the simulator, not something a retry fixes.
            raise ConnectorError(
                f"the simulator's answer was rejected: {result.rejected[0]['error']}",
                retryable=False,
                detail=str(result.rejected),
            )
        return Receipt(
            status="ok",
            detail=f"{result.accepted} event(s) accepted, {result.duplicates} duplicate(s)",
            duplicate=result.accepted == 0,
        )


def view_from_mirror(namespace_id: int, outgoing: Outgoing) -> ThreadView:
    """The target thread as the mirror has it: its runs' ordinals, its latest unfinished
    run, and the environment its runs (or else the task's delegation) come from."""
    runs = list(
        Run.objects.filter(namespace_id=namespace_id, thread__thread_id=outgoing.thread_id)
        .exclude(ordinal=None)
        .order_by("ordinal", "run_id")
        .values_list("run_id", "ordinal", "finished_event", "env")
    )
    active = [run_id for run_id, _, finished, _ in runs if finished is None]
    env = next((e for *_, e in reversed(runs) if e), None)
    if env is None:
        env = (
            Task.objects.filter(namespace_id=namespace_id, task_id=outgoing.task_id)
            .values_list("env", flat=True)
            .first()
        )
    return ThreadView(
        thread=outgoing.thread_id,
        runs={run_id: ordinal for run_id, ordinal, _, _ in runs},
        active_run=active[-1] if active else None,
        env=env or "default",
    )
