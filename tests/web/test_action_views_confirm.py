"""A preview is what gets sent: a confirm carries what its preview showed (a digest of
the text, target thread, run and connector; for bulk, of the exact tasks) and is
refused with the new preview (409) when anything changed in between."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils.html import escape

from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.previews import preview_id_of, selection_digest
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task
from tests.support.factories import make_tasks
from tests.support.forms import confirm_form
from tests.support.previews import AMENDED, amend_latest_result
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SECRET = "a-test-secret-of-some-length"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
STALE = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


@pytest.fixture
def source(db, receiver):
    source, _ = do_create_source("t3", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 2}
    source.save()
    apply_events(source, SEED000["events"])
    return source


@pytest.fixture
def operator_client(client, user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    client.force_login(user)
    return client


def deliver_url(task) -> str:
    return reverse("web:task-action", args=[task.pk, "deliver"])


def test_a_deliver_whose_text_changed_since_its_preview_sends_nothing(
    operator_client, source, receiver
):
    task = Task.objects.get(task_id=STALE)
    form = {**confirm_form(operator_client.get(deliver_url(task)).content.decode()), "reason": "r"}
    amend_latest_result(source)
    page = operator_client.post(deliver_url(task), form)
    html = page.content.decode()
    assert page.status_code == 409
    assert "Nothing was sent" in html and escape(AMENDED) in html
    assert not Action.objects.exists() and receiver.attempts == 0
    # The new preview's own form confirms what it shows.
    again = operator_client.post(deliver_url(task), {**confirm_form(html), "reason": "r"})
    assert again.status_code == 302
    assert Action.objects.get().text.endswith(AMENDED)


def test_with_htmx_the_new_preview_replaces_the_old_one(operator_client, source):
    task = Task.objects.get(task_id=STALE)
    form = confirm_form(operator_client.get(deliver_url(task)).content.decode())
    amend_latest_result(source)
    fragment = operator_client.post(deliver_url(task), form, headers={"HX-Request": "true"})
    # htmx swaps no 4xx: a 200 told where to go, holding only the new preview.
    assert fragment.status_code == 200
    assert fragment["HX-Retarget"] == "#action-preview"
    html = fragment.content.decode()
    assert "<html" not in html and "Nothing was sent" in html and escape(AMENDED) in html
    assert not Action.objects.exists()


def test_a_confirm_without_the_preview_it_confirms_sends_nothing(operator_client, source):
    task = Task.objects.get(task_id=STALE)
    form = confirm_form(operator_client.get(deliver_url(task)).content.decode())
    del form["preview"]
    assert operator_client.post(deliver_url(task), form).status_code == 409
    assert not Action.objects.exists()


def test_a_bulk_confirm_refuses_other_tasks_of_the_same_count(operator_client, source):
    make_tasks(source, 2, prefix="b")
    query = {"kind": "cancel", "scope": "matching", "q": "task:b"}
    form = confirm_form(operator_client.get(reverse("web:bulk-action"), query).content.decode())
    # The filter now matches two other tasks: the same count, never shown.
    for n, task in enumerate(Task.objects.filter(task_id__startswith="task:b")):
        Task.objects.filter(pk=task.pk).update(task_id=f"task:gone{n}")
    make_tasks(source, 2, prefix="bb", offset=100)
    page = operator_client.post(reverse("web:bulk-action"), form)
    html = page.content.decode()
    assert page.status_code == 409 and "Nothing was done" in html
    assert not Action.objects.exists()
    # The new preview names the tasks it would act on, and carries them.
    now = list(Task.objects.filter(task_id__startswith="task:b"))
    assert {t.task_id for t in now} == {"task:bb0", "task:bb1"}
    assert all(t.task_id in html for t in now)
    selection = confirm_form(html)["selection"]
    assert selection == selection_digest("cancel", now, preview_id_of(selection))


def test_a_preview_shown_again_has_its_own_id_and_the_first_still_confirms(operator_client, source):
    # The digest is of what is shown, not of when: a reloaded preview still confirms.
    # Each preview has its own id: its confirmation is one request however
    # often it is sent, and a deliberate second action takes a new preview.
    task = Task.objects.get(task_id=STALE)
    first = confirm_form(operator_client.get(deliver_url(task)).content.decode())
    second = confirm_form(operator_client.get(deliver_url(task)).content.decode())
    assert preview_id_of(first["preview"]) != preview_id_of(second["preview"])
    assert operator_client.post(deliver_url(task), {**first, "reason": "r"}).status_code == 302
    assert Action.objects.get().confirms == preview_id_of(first["preview"])
