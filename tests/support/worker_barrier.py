"""Loaded into test workers with `--include tests.support.worker_barrier`: each evaluation waits,
after reading its snapshot, until every worker of the test has read its own, so that
they all write on the same picture of the world."""

import os
import time

import redis

from supervisor.core.detection import evaluate

_load = evaluate.load_for_subjects


def _held(*args, **kwargs):
    snap = _load(*args, **kwargs)
    barrier = redis.Redis.from_url(os.environ["SUPERVISOR_TEST_BARRIER_URL"])
    key, parties = os.environ["SUPERVISOR_TEST_BARRIER_KEY"], 2
    barrier.incr(key)
    deadline = time.monotonic() + 20
    while int(barrier.get(key)) < parties and time.monotonic() < deadline:
        time.sleep(0.005)
    return snap


if os.environ.get("SUPERVISOR_TEST_BARRIER_KEY"):
    evaluate.load_for_subjects = _held
