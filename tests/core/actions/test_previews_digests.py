"""What a preview and a bulk selection carry of what they showed is keyed: a
token that may act but not read is not shown the texts a task would get, and must not be
able to confirm a guess of one by hashing it and comparing. A selection does not carry
the database's own ids of tasks either."""

import hashlib
import json
import zlib

import pytest
from django.core import signing
from django.test import override_settings

from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.previews import delivery_text, preview_action
from supervisor.core.contract.connectors import connector_for
from supervisor.core.models import Source, Task
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db

BULK = "/api/v1/actions/bulk"


@pytest.fixture
def act_only(source):
    """Two tasks whose delivery a connector can send, and a token with `act` alone."""
    make_tasks(source, 2, prefix="g", title="Guess")
    source.connector = "simulator"
    source.save()
    _, token = do_create_source("actor", namespace=source.namespace.name, scopes="act")
    return {"Authorization": f"Bearer {token}"}


def plain_hashes(task: Task) -> set[str]:
    """What a guesser can compute of the delivery text it guessed (here, the right one),
    as the preview once carried it: unkeyed SHA-256, whole and cut short."""
    run = f"{task.child_thread.thread_id}:1"
    text = delivery_text(task, run, "result 0")
    source = Source.objects.get(name="orchestrator")
    label = connector_for(source).label
    shown = ["deliver", task.pk, "thread:lead", run, text, source.pk, label]
    hashes = set()
    for value in (text, json.dumps(shown)):
        whole = hashlib.sha256(value.encode()).hexdigest()
        hashes |= {whole, whole[:32], whole[:16], whole[:8]}
    return hashes


def readable(selection: str) -> object:
    """A selection as anyone can read it without the server's key: a signature only
    proves where it came from; its payload is base64 (zlib-compressed when it starts
    with a dot) JSON."""
    payload = selection.rsplit(":", 1)[0]
    compressed = payload.startswith(".")
    data = signing.b64_decode(payload.removeprefix(".").encode())
    return json.loads(zlib.decompress(data) if compressed else data)


def scalars(value) -> set[str]:
    if isinstance(value, dict):
        return set(map(str, value)) | {s for v in value.values() for s in scalars(v)}
    if isinstance(value, list):
        return {s for v in value for s in scalars(v)}
    return {str(value)}


def test_a_preview_carries_no_plain_hash_of_the_text_it_withholds(client, act_only):
    task = Task.objects.get(task_id="task:g0")
    answer = client.get(
        f"/api/v1/tasks/{task.task_id}/actions/preview", {"kind": "deliver"}, headers=act_only
    )
    assert answer.status_code == 200 and answer.json()["text"] is None
    assert answer.json()["preview"]
    body = answer.content.decode()
    assert not [h for h in plain_hashes(task) if h in body]


def test_a_bulk_selection_carries_no_plain_hash_nor_task_ids(client, act_only):
    answer = client.post(
        BULK,
        {"kind": "deliver", "filter": {"q": "Guess"}},
        content_type="application/json",
        headers=act_only,
    )
    assert answer.status_code == 200 and answer.json()["count"] == 2
    pinned = scalars(readable(answer.json()["selection"]))
    for task in Task.objects.filter(task_id__startswith="task:g"):
        assert str(task.pk) not in pinned
        assert task.task_id not in pinned
    task = Task.objects.get(task_id="task:g0")
    assert not [h for h in plain_hashes(task) if any(h in s for s in pinned)]


def test_a_preview_s_digest_changes_with_the_server_s_key(source, act_only):
    preview = preview_action(Task.objects.get(task_id="task:g0"), "deliver")
    digest = preview.digest
    with override_settings(SECRET_KEY="another-secret-key-of-fifty-characters-or-more-xyz"):
        assert preview.digest != digest
    assert preview.digest == digest  # the same preview under the same key
