"""Loaded into a test worker with `--include tests.support.action_pause`: when
SUPERVISOR_TEST_PAUSE_FILE is set, a worker that has claimed an action writes that file
and stops there, before sending, so the test can SIGKILL it at exactly that point."""

import os
import time
from pathlib import Path

from supervisor.core.actions import sending

_outgoing_for = sending.outgoing_for


def _paused(action):
    Path(os.environ["SUPERVISOR_TEST_PAUSE_FILE"]).write_text(str(action.pk))
    while True:
        time.sleep(1)


if os.environ.get("SUPERVISOR_TEST_PAUSE_FILE"):
    sending.outgoing_for = _paused
