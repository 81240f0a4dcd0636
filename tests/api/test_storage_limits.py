"""What storage holds (issue 39): every text the contract accepts is stored whole, and
an index over a text that may run past PostgreSQL's btree limit (about 2,700 bytes a
row, after compression) is built on a hash of it. A text the contract refuses is a
dead letter naming its field; the rest of its batch is accepted, never a 503.

Run on the backend under test: CI's second run is PostgreSQL, where the limit bites."""

import json
import random
import string

import pytest
from django.db import connection

from supervisor.core.models import DeadLetter, IngestedEvent, Task

URL = "/api/v1/events"

pytestmark = pytest.mark.django_db


def post(client, token, events):
    headers = {"Authorization": f"Bearer {token}"}
    return client.post(
        URL, json.dumps({"events": events}), content_type="application/json", headers=headers
    )


def delegated(event_id, task, title, parent="thread:p", child="thread:c"):
    return {
        "id": event_id,
        "type": "task.delegated",
        "at": "2026-11-05T22:40:00Z",
        "data": {"task": task, "parent_thread": parent, "child_thread": child, "title": title},
    }


def finished(event_id="f1", run="run:1"):
    return {
        "id": event_id,
        "type": "run.finished",
        "at": "2026-11-05T22:45:00Z",
        "data": {"thread": "thread:c", "run": run, "status": "completed", "summary": "done"},
    }


def letters(count: int, seed: int = 39) -> str:
    """Random letters: text that does not compress."""
    generate = random.Random(seed)
    return "".join(generate.choice(string.ascii_letters) for _ in range(count))


def cjk(count: int, seed: int = 39) -> str:
    generate = random.Random(seed)
    return "".join(chr(generate.randrange(0x4E00, 0x9FA0)) for _ in range(count))


@pytest.mark.parametrize(
    "title", [letters(2_800), cjk(1_000), letters(100_000)], ids=["letters", "cjk", "long"]
)
def test_a_long_title_is_stored_whole_and_its_batch_accepted(client, source, title):
    response = post(client, source.token, [delegated("e1", "task:long", title), finished()])
    assert response.status_code == 200, response.content
    assert response.json() == {"accepted": 2, "duplicates": 0, "rejected": []}
    assert Task.objects.get(task_id="task:long").title == title
    assert IngestedEvent.objects.count() == 2 and not DeadLetter.objects.exists()


def refuse_long_titles():
    """A limit of storage the contract does not know of: on PostgreSQL a plain btree
    index over the title (what task_parent_title was), elsewhere a trigger refusing
    the same rows. Made in the test's transaction, gone with it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"CREATE INDEX storage_probe ON {Task._meta.db_table} (title)")
        else:
            cursor.execute(
                f"CREATE TRIGGER storage_probe BEFORE INSERT ON {Task._meta.db_table} "
                "WHEN length(NEW.title) > 2700 BEGIN SELECT RAISE(ABORT, 'title too long'); END"
            )


def test_what_storage_refuses_for_good_is_a_dead_letter_and_the_batch_goes_on(client, source):
    refuse_long_titles()
    title = letters(3_000)
    events = [finished("f1"), delegated("e1", "task:long", title), finished("f2", "run:2")]
    response = post(client, source.token, events)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert (answer["accepted"], answer["duplicates"]) == (2, 0)
    [refusal] = answer["rejected"]
    assert (refusal["index"], refusal["id"]) == (1, "e1")
    assert refusal["error"].startswith("event: storage cannot hold it: "), refusal
    letter = DeadLetter.objects.get()
    assert (letter.event_id, letter.error) == ("e1", refusal["error"])
    assert json.loads(letter.body)["data"]["title"] == title  # kept whole, to replay
    assert set(IngestedEvent.objects.values_list("event_id", flat=True)) == {"f1", "f2"}
    assert not Task.objects.filter(task_id="task:long").exists()
    source.refresh_from_db()
    assert (source.events_accepted, source.events_rejected) == (2, 1)
    # Sent again: the stored ones are duplicates, the refused one refused again.
    again = post(client, source.token, events).json()
    assert (again["accepted"], again["duplicates"], len(again["rejected"])) == (0, 2, 1)
