"""Enqueueing a job by its task name: the modules below `supervisor/jobs` send work to
a worker without importing a Celery module (the jobs import them, not the reverse).

A job's row is the record of what must be done; a message lost here is found again by
the sweep.
"""

from __future__ import annotations

import logging
import time

from celery import current_app

log = logging.getLogger(__name__)

EVALUATE = "supervisor.evaluate"
PERFORM_ACTION = "supervisor.perform_action"
SEND_NOTIFICATION = "supervisor.notify_send"

WARN_EVERY = 60.0  # seconds between warnings while the broker is down
_warned_at, _unsent = -WARN_EVERY, 0
# One quick retry: a request must not wait on a broker that is down. (retry=False is
# slower: it falls back on the connection's own 4 s of connection attempts, measured
# at about 6 s a publish with Redis down; this policy gives up within about 0.1 s.)
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}


def enqueue(name: str, *args, countdown: float | None = None, **options) -> None:
    """Send job `name` with `args`, after `countdown` seconds when given."""
    if countdown:
        options["countdown"] = countdown
    app = current_app
    if app.conf.task_always_eager:
        # Debugging: run the job here, as its task object does (send_task never would).
        if name not in app.tasks:
            app.loader.import_default_modules()  # the jobs, found as a worker finds them
        app.tasks[name].apply_async(args, **options)
    else:
        app.send_task(name, args, **options)


def enqueue_evaluation(namespace_id: int, tasks: list[str], threads: list[str]) -> None:
    """Send the evaluation job; with the broker down, leave it to the sweep. The events
    are committed by then: a failure here must not turn the client's answer into an
    error (it would resend what is stored). The touched subjects are out of date, which
    is what the sweep looks for once the broker is back."""
    try:
        enqueue(EVALUATE, namespace_id, tasks, threads, retry_policy=PUBLISH_RETRY)
    except Exception as exc:  # whatever the transport raises
        global _unsent, _warned_at
        _unsent += 1
        now = time.monotonic()
        if now - _warned_at >= WARN_EVERY:  # one line per outage, not one per batch
            log.warning(
                "broker unavailable, evaluation jobs left to the sweep (%d since the last "
                "warning): %s",
                _unsent,
                exc,
            )
            _warned_at, _unsent = now, 0
