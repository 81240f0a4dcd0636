"""A task's title key: its title as the contract compares it (trimmed, white space
collapsed), written by ingest and filled in for tasks stored before it existed. The same
work delegated again is found by it, in a snapshot and among the subjects an event
changes."""

import importlib

import pytest
from django.apps import apps

from supervisor.core.evaluate import affected_subjects
from supervisor.core.ingest import apply_events
from supervisor.core.models import Task
from tests.core.test_snapshot_scope import delegated

pytestmark = pytest.mark.django_db


def test_ingest_writes_the_title_s_key_beside_the_title(source):
    apply_events(source, [delegated("task:a", "  Port\tthe  retry loop\n", "thread:a")])
    task = Task.objects.get(task_id="task:a")
    assert (task.title, task.title_key) == ("  Port\tthe  retry loop\n", "Port the retry loop")


def test_an_event_on_a_child_thread_reaches_its_task_s_sibling_of_the_same_title(source):
    """A run of the later task's child thread decides whether the earlier one is a
    duplicate: the earlier one is judged again, though its title's white space differs."""
    apply_events(
        source,
        [
            delegated("task:first", "Port the retry loop", "thread:first"),
            delegated("task:again", "Port  the retry loop ", "thread:again"),
            delegated("task:other", "Other work", "thread:other"),
        ],
    )
    tasks, _ = affected_subjects(source.namespace_id, set(), {"thread:again"})
    assert tasks == {"task:first", "task:again"}


def test_the_migration_fills_in_the_keys_of_tasks_stored_before_it(source):
    apply_events(
        source,
        [
            delegated("task:plain", "Port the retry loop", "thread:plain"),
            delegated("task:spaced", " Port the\u00a0 retry  loop", "thread:spaced"),
        ],
    )
    Task.objects.update(title_key="")  # as the column was added
    migration = importlib.import_module("supervisor.core.migrations.0014_task_title_key")
    migration.fill_title_keys(apps, None)
    keys = dict(Task.objects.values_list("task_id", "title_key"))
    assert keys["task:plain"] == keys["task:spaced"] == "Port the retry loop"
