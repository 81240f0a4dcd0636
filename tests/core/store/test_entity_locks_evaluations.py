"""Evaluations wait on the subjects they share, not on their namespace; a writer
PostgreSQL aborts as one side of a deadlock runs again, once; a periodic job runs one
copy at a time."""

import threading

import pytest
from django.db import connection, connections, transaction

from supervisor.core.models import Thread
from supervisor.core.store import entity_locks
from supervisor.core.store.exclusive import only_one
from supervisor.jobs.evaluation import sweep_due

postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="advisory locks are PostgreSQL's"
)


def in_thread(work, *args):
    """Run `work` on its own database connection; return (thread, its result box)."""
    box = {}

    def run():
        try:
            box["result"] = work(*args)
        except BaseException as exc:  # handed to the test
            box["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


@postgresql
@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_writer_waits_on_a_shared_subject_and_not_on_its_namespace(source):
    holding, release = threading.Event(), threading.Event()

    def hold():
        with transaction.atomic():
            entity_locks.lock_subjects(source.namespace_id, [("task", "a"), ("task", "b")])
            holding.set()
            release.wait(10)

    def take(subject):
        with transaction.atomic():
            entity_locks.lock_subjects(source.namespace_id, [subject])
        return "taken"

    holder, _ = in_thread(hold)
    assert holding.wait(10)
    other, other_box = in_thread(take, ("task", "c"))
    other.join(5)
    assert other_box == {"result": "taken"}  # another subject of the namespace: no wait
    shared, shared_box = in_thread(take, ("task", "b"))
    shared.join(0.5)
    assert shared.is_alive() and shared_box == {}  # the same subject: it waits
    release.set()
    holder.join(5)
    shared.join(5)
    assert shared_box == {"result": "taken"}


@postgresql
@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_writer_aborted_by_a_deadlock_runs_again_and_applies_once(source):
    first, second = (
        Thread.objects.create(namespace_id=source.namespace_id, thread_id=t) for t in "xy"
    )
    both_hold_one = threading.Barrier(2, timeout=10)
    attempts = {"forward": 0, "backward": 0}

    def write(name, rows):
        def attempt():
            attempts[name] += 1
            with transaction.atomic():
                Thread.objects.filter(pk=rows[0].pk).update(title=f"{name} first")
                if attempts[name] == 1:
                    both_hold_one.wait()  # each holds the row the other wants next
                Thread.objects.filter(pk=rows[1].pk).update(title=f"{name} second")
                Thread.objects.filter(pk=rows[1].pk).update(model=name)

        entity_locks.retrying(attempt)
        return name

    forward, forward_box = in_thread(write, "forward", [first, second])
    backward, backward_box = in_thread(write, "backward", [second, first])
    forward.join(30)
    backward.join(30)
    assert forward_box == {"result": "forward"} and backward_box == {"result": "backward"}
    assert sorted(attempts.values()) == [1, 2]  # PostgreSQL aborted one; it ran again
    # Both transactions are applied, each whole: the retried one as it would have been.
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.model, second.model) == ("backward", "forward")
    retried = "forward" if attempts["forward"] == 2 else "backward"
    assert {first.title, second.title} == {f"{retried} first", f"{retried} second"}


@pytest.mark.django_db(transaction=True)
def test_a_second_copy_of_the_sweep_skips_its_turn_while_one_runs(source):
    running, finish = threading.Event(), threading.Event()

    def first_copy():
        with only_one("sweep") as alone:
            running.set()
            finish.wait(10)
            return alone

    first, first_box = in_thread(first_copy)
    assert running.wait(10)
    second, second_box = in_thread(sweep_due)
    second.join(10)
    assert second_box == {"result": None}  # skipped, not run beside the first
    finish.set()
    first.join(10)
    assert first_box == {"result": True}
    assert sweep_due() == 0  # alone again: it runs (nothing is due)
