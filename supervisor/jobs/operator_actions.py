"""The operator-action job: perform one action, claim -> connector -> record. The row
is the record (core/actions/writers.py claims and records it, sending.py says what is sent);
the connector is the one bound to the action's source, found through core's connector port."""

from __future__ import annotations

import logging

from celery import shared_task

from supervisor.core import clock
from supervisor.core.actions import sending
from supervisor.core.actions import writers as actions
from supervisor.core.contract.connectors import ConnectorError, SettingsError, connector_for

log = logging.getLogger(__name__)


@shared_task(name="supervisor.perform_action", acks_late=True, soft_time_limit=60, time_limit=90)
def perform_action(action_id: int) -> str:
    return perform(action_id)


def perform(action_id: int) -> str:
    """Claim the action, send it through its connector once, record what happened.
    Returns the state it was left in (or "skipped" when it was not ours to send)."""
    action = actions.do_claim_action(action_id, clock.now())
    if action is None:
        return "skipped"
    try:
        if action.source is None:
            raise SettingsError("the source that was to act for this task is gone")
        connector = connector_for(action.source)
        if connector is None:
            raise SettingsError(f"source {action.source.name} no longer has a connector")
        receipt = connector.perform(
            sending.outgoing_for(action), timeout=actions.config()["timeout"]
        )
    except SettingsError as exc:
        return actions.do_record_failure(action, str(exc), clock.now(), retryable=False)
    except ConnectorError as exc:
        return actions.do_record_failure(
            action, str(exc), clock.now(), retryable=exc.retryable, detail=exc.detail
        )
    except Exception as exc:  # a bug or an unexpected answer: keep the row honest
        log.exception("action %s: connector failed", action_id)
        return actions.do_record_failure(
            action, f"unexpected error: {exc}", clock.now(), retryable=True
        )
    return actions.do_record_success(action, receipt, clock.now())
