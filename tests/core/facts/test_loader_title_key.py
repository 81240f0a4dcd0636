"""A task's title key: its title as the contract compares it (trimmed, white space
collapsed), written by ingest and filled in for tasks stored before it existed. The same
work delegated again is found by it, in a snapshot and among the subjects an event
changes."""

import importlib
import random
import re

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core.detection.evaluate import affected_subjects
from supervisor.core.facts.loader import load_for_subjects, same_work_tasks
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import EMPTY_MD5, Task
from tests.support.delegations import delegated

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


def long_title(words: int = 500) -> str:
    """Random letters and CJK in words: no compression brings it under a btree row."""
    generate = random.Random(39)
    letters = "abcXYZ\u5b9f\u884c\u8a66"
    return " ".join("".join(generate.choices(letters, k=6)) for _ in range(words))


def test_long_titles_match_when_equal_and_never_when_they_differ(source):
    """The index is over the key's hash; the keys themselves decide."""
    title = long_title()
    apply_events(
        source,
        [
            delegated("task:first", title, "thread:first"),
            delegated("task:again", f"  {title.replace(' ', ' \t ', 1)} ", "thread:again"),
            delegated("task:other", title[:-1] + "Q", "thread:other"),
        ],
    )
    tasks, _ = affected_subjects(source.namespace_id, set(), {"thread:again"})
    assert tasks == {"task:first", "task:again"}
    snap = load_for_subjects(source.namespace_id, {"task:first"}, set())
    assert set(snap.tasks) == {"task:first", "task:again"}
    hashes = dict(Task.objects.values_list("task_id", "title_hash"))
    assert hashes["task:first"] == hashes["task:again"] != hashes["task:other"]


def test_the_migration_fills_in_the_hashes_of_tasks_stored_before_it(source):
    title = long_title()
    apply_events(
        source,
        [
            delegated("task:plain", "Port the retry loop", "thread:plain"),
            delegated("task:long", title, "thread:long"),
        ],
    )
    Task.objects.update(title_hash=EMPTY_MD5)  # as the column was added
    migration = importlib.import_module("supervisor.core.migrations.0025_storage_limits")
    migration.fill_title_hashes(apps, None)
    hashes = dict(Task.objects.values_list("task_id", "title_hash"))
    assert hashes == {
        "task:plain": Task.hash_title("Port the retry loop"),
        "task:long": Task.hash_title(title),
    }


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
@pytest.mark.services
@pytest.mark.parametrize("path", ["loader", "evaluate"])
def test_same_work_is_probed_by_parent_and_title_hash(source, path):
    """Both reads of the same work (loader.same_work_tasks, evaluate.affected_subjects)
    probe task_parent_title_hash on both columns, whatever the table's size: the plan is
    asked with sequential scans off, so it tells whether the index can serve the query."""
    # A parent of many tasks: neither the namespace nor the parent alone is a probe.
    others = [delegated(f"task:{n}", f"Other work {n}", f"thread:{n}") for n in range(300)]
    apply_events(source, [delegated("task:first", long_title(), "thread:first"), *others])
    first = Task.objects.get(task_id="task:first")
    parent, key = first.parent_thread_id, first.title_key
    with connection.cursor() as cursor, CaptureQueriesContext(connection) as queries:
        cursor.execute(f"ANALYZE {Task._meta.db_table}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        if path == "loader":
            same_work_tasks(source.namespace_id, {(parent, key)})
        else:
            affected_subjects(source.namespace_id, set(), {"thread:first"})
        [sql] = [q["sql"] for q in queries if "title_hash" in q["sql"]]
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "task_parent_title_hash" in plan, plan[:2000]
    assert re.search(r"Index Cond: .*parent_thread_id.*title_hash", plan), plan[:2000]
