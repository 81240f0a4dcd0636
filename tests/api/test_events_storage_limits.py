"""What storage holds: every text the contract accepts is stored whole, and
an index over a text that may run past PostgreSQL's btree limit (about 2,700 bytes a
row, after compression) is built on a hash of it. A text the contract refuses is a
dead letter naming its field; the rest of its batch is accepted, never a 503.

Run on the backend under test: CI's second run is PostgreSQL, where the limit bites."""

import itertools
import json
import random
import string
from types import UnionType
from typing import Annotated, Union, get_args, get_origin

import pytest
from annotated_types import MaxLen
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from supervisor.core.contract.events import DATA_BY_TYPE, Envelope
from supervisor.core.models import DeadLetter, IngestedEvent, Task
from tests.support.storage import delegated

URL = "/api/v1/events"

pytestmark = pytest.mark.django_db


def post(client, token, events):
    headers = {"Authorization": f"Bearer {token}"}
    return client.post(
        URL, json.dumps({"events": events}), content_type="application/json", headers=headers
    )


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


# --- every text field, at every bound ---------------------------------------------------

INDEX_ROW = 2704  # bytes: PostgreSQL's btree limit, before compression is tried
BASES = {
    "thread.seen": {"thread": "thread:x"},
    "task.delegated": {"task": "task:x", "parent_thread": "thread:p", "title": "t"},
    "task.reported": {"task": "task:x", "status": "running"},
    "run.requested": {
        "thread": "thread:x",
        "run": "run:x",
        "ordinal": 1,
        "trigger": {"kind": "delegation", "task": "task:x"},
    },
    "run.started": {"thread": "thread:x", "run": "run:x"},
    "run.activity": {"thread": "thread:x", "run": "run:x"},
    "run.finished": {"thread": "thread:x", "run": "run:x", "status": "failed", "summary": "s"},
    "background.started": {"thread": "thread:x", "item": "item:x", "kind": "command"},
    "background.finished": {"thread": "thread:x", "item": "item:x"},
    "wake.queued": {
        "wake": "wake:x",
        "thread": "thread:x",
        "source": {"kind": "task", "task": "task:x"},
    },
    "wake.delivered": {"wake": "wake:x"},
    "tool.rejected": {"thread": "thread:x", "tool": "t", "code": "c", "message": "m"},
    "task.requested": {"parent_thread": "thread:p", "client_request_id": "r"},
}


def _texts(annotation, metadata=()) -> list:
    """The string types and models among an annotation's alternatives, with their
    bound (None: no bound); Literal enumerations are no text."""
    if get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        return _texts(base, (*metadata, *extra))
    if get_origin(annotation) in (Union, UnionType):
        return [found for arg in get_args(annotation) for found in _texts(arg, metadata)]
    if annotation is str:
        # A bound comes as annotated_types' MaxLen, or inside a pydantic Field(...).
        flat = [n for m in metadata for n in (m.metadata if isinstance(m, FieldInfo) else [m])]
        bounds = [m.max_length for m in flat if isinstance(m, MaxLen)]
        return [min(bounds) if bounds else None]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def text_fields(model, prefix: str) -> list[tuple[str, int | None]]:
    """(path, bound in characters) of every text field of a contract model, nested ones
    included, read from the contract itself: a field added later is posted too."""
    found = []
    for name, info in model.model_fields.items():
        for text in _texts(info.annotation, tuple(info.metadata)):
            if isinstance(text, type):
                found += text_fields(text, f"{prefix}{name}.")
            else:
                found.append((f"{prefix}{name}", text))
    return found


FIELDS = [
    (kind, path, bound)
    for kind, model in DATA_BY_TYPE.items()
    for path, bound in [*text_fields(Envelope, ""), *text_fields(model, "data.")]
    if path not in ("type", "data")
]
ALPHABETS = {  # bytes a character takes in UTF-8, and the characters drawn from
    "latin": (1, "Port the retry loop, déjà vu; "),
    "cjk": (3, [chr(c) for c in range(0x4E00, 0x9FA0)]),
    "letters": (1, string.ascii_letters),
    "astral": (4, [chr(c) for c in range(0x1F300, 0x1F600)]),
}
BATCHES = itertools.count()
# Where a text's length sits: around the btree row (in bytes), far past it, or around
# the contract's own bound (in characters; a field without one gets the row's "over").
ROW = {"under the row": -8, "at the row": 0, "over the row": 8}
BOUND = {"under the bound": -1, "at the bound": 0, "over the bound": 1}
PLACES = [*ROW, "far over the row", *BOUND]


def length(place: str, bound: int | None, width: int) -> int:
    if place in ROW:
        return INDEX_ROW // width + ROW[place]
    if place == "far over the row":
        return 8_000 // width  # a batch of one of each stays under ingest's 1 MiB
    if bound is None:
        return INDEX_ROW // width + ROW["over the row"]
    return bound + BOUND[place]


@st.composite
def batches(draw):
    """One event per text field of the contract, each text at a length drawn among
    PLACES, in an alphabet drawn among ALPHABETS: every field, every example."""
    n = next(BATCHES)
    # One draw for the batch: drawing 2 x 84 choices through hypothesis cost seconds.
    generate = random.Random(draw(st.integers(0, 2**32)))
    probes = []
    for number, (kind, path, bound) in enumerate(FIELDS):
        width, letters = ALPHABETS[generate.choice(sorted(ALPHABETS))]
        size = length(generate.choice(PLACES), bound, width)
        head = f"{n}.{number}-"  # each text its own: no event id repeats
        text = head + "".join(generate.choices(letters, k=size - len(head)))
        probes.append((kind, path, bound, text, f"probe-{n}.{number}"))
    return probes


def placed(kind: str, path: str, text: str, event_id: str) -> dict:
    event = {"id": event_id, "type": kind, "at": "2026-11-05T22:40:00Z"}
    # Entities of its own: a probe sharing a task with another might lose the merge to it.
    own = json.dumps(BASES[kind]).replace(':x"', f':{event_id}"').replace(':p"', f':p{event_id}"')
    event["data"] = json.loads(own)
    *parents, last = path.split(".")
    where = event
    for name in parents:
        where = where.setdefault(name, {})
    where[last] = text
    return event


def value_at(data: dict, path: str):
    for name in path.split("."):
        data = data[name]
    return data


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(probes=batches())
def test_every_text_field_at_every_bound_is_stored_whole_or_a_dead_letter(client, source, probes):
    events = [placed(kind, path, text, event_id) for kind, path, _, text, event_id in probes]
    batch = probes[0][4]  # the first probe's own id (the text itself is no id)
    companion = finished(f"companion-{batch}", f"run:{batch}")
    body = json.dumps({"events": [*events, companion]}, ensure_ascii=False).encode()
    response = client.post(
        URL,
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert response.status_code == 200, response.content[:300]
    answer = response.json()
    refused = {r["index"]: r for r in answer["rejected"]}
    stored = {
        e.event_id: {"id": e.event_id, "env": e.env, "data": e.data}
        for e in IngestedEvent.objects.filter(
            source=source, event_id__in=[e["id"] for e in [*events, companion]]
        )
    }
    assert companion["id"] in stored
    letters = set(DeadLetter.objects.filter(source=source).values_list("error", flat=True))
    for index, ((_, path, bound, text, _), event) in enumerate(zip(probes, events, strict=True)):
        if bound is None or len(text) <= bound:  # the contract takes it: stored whole
            assert index not in refused, (path, len(text), refused[index])
            assert value_at(stored[event["id"]], path) == text, (path, len(text))
        else:  # the contract refuses it: a dead letter naming the field
            error = refused[index]["error"]
            assert error.startswith(f"{path}: String should have at most {bound} "), error
            assert error in letters
    assert answer["accepted"] == len(events) + 1 - len(refused)
