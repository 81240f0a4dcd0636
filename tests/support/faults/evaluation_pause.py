"""Loaded into a fault-suite worker with `--include tests.support.faults.evaluation_pause`: when
SUPERVISOR_TEST_PAUSE_FILE is set, the first evaluation stops inside its write
transaction, after its flags are written and before it records the evaluation and
commits, and writes that file, so that the test can SIGKILL the worker right there."""

import os
import time
from pathlib import Path

from supervisor.core.detection import evaluate

_record = evaluate._record_evaluation


def _paused(*args, **kwargs):
    Path(os.environ["SUPERVISOR_TEST_PAUSE_FILE"]).write_text("holding")
    while True:
        time.sleep(1)


if os.environ.get("SUPERVISOR_TEST_PAUSE_FILE"):
    evaluate._record_evaluation = _paused
