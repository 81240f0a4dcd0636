"""The admin pages: sources and tokens, users and roles, dead letters (fix and replay)."""

import json
import re

import pytest
from django.test import Client

from supervisor.core.access.roles import role_of
from supervisor.core.access.sources import do_create_source
from supervisor.core.models import Change, DeadLetter, IngestedEvent, Source, Task
from tests.support.cast import ADMIN, OPERATOR, login_as, make_user
from tests.support.markup import Controls

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r"sup_[A-Za-z0-9_-]{20,}")
WEBHOOK = {"url": "https://hooks.example.com/supervisor", "secret": "0123456789abcdef"}


@pytest.fixture
def admin_client(client):
    login_as(client, ADMIN)
    return client


def delegated(event_id="e1", task="task:1", **data):
    return {
        "id": event_id,
        "type": "task.delegated",
        "at": "2026-11-05T22:40:00Z",
        "data": {
            "task": task,
            "parent_thread": "thread:p",
            "child_thread": "thread:c",
            "title": "Port",
            "mode": "async",
            **data,
        },
    }


def send(token, events):
    return Client().post(
        "/api/v1/events",
        json.dumps({"events": events}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


def read(token):
    return Client().get("/api/v1/tasks", headers={"Authorization": f"Bearer {token}"})


def create_source(client, name="ci", scopes=("ingest",), connector="", settings=""):
    return client.post(
        "/admin/sources/new/",
        {
            "name": name,
            "namespace": "",
            "scopes": list(scopes),
            "connector": connector,
            "connector_settings": settings,
        },
    )


# --- sources ------------------------------------------------------------------------


def test_a_new_sources_token_is_shown_once_and_ingests(admin_client):
    response = create_source(admin_client, scopes=["ingest"])
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    (token,) = set(TOKEN.findall(response.content.decode()))
    source = Source.objects.get(name="ci")
    assert source.scopes == "ingest" and source.namespace.name == "ci"
    assert token.startswith(source.token_prefix)

    listing = admin_client.get("/admin/sources/").content.decode()
    assert token not in listing and source.token_prefix in listing
    assert token not in admin_client.get(f"/admin/sources/{source.pk}/").content.decode()

    assert send(token, [delegated()]).json()["accepted"] == 1
    assert read(token).status_code == 403  # no read scope


def test_a_new_source_gets_the_scopes_ticked(admin_client):
    response = create_source(admin_client, scopes=["ingest", "read"])
    (token,) = set(TOKEN.findall(response.content.decode()))
    assert send(token, [delegated()]).status_code == 200
    assert read(token).status_code == 200
    change = Change.objects.get(kind="source.created")
    assert change.subject_type == "source" and change.subject_id == "ci"
    assert change.payload["actor"] == "user:as-admin"
    assert change.payload["scopes"] == "ingest,read"


def test_a_source_with_a_taken_name_is_a_form_error(admin_client, source):
    response = create_source(admin_client, name=source.name)
    assert response.status_code == 200
    assert "exists already" in response.content.decode()
    assert Source.objects.count() == 1


@pytest.mark.parametrize(
    ("name", "namespace", "field", "message"),
    [
        ("supervisor@ci", "", "name", "is reserved: names starting with"),
        ("ci", "demo", "namespace", "is reserved for the simulated fleet"),
    ],
)
def test_a_name_supervisor_keeps_is_a_form_error(admin_client, name, namespace, field, message):
    response = admin_client.post(
        "/admin/sources/new/",
        {"name": name, "namespace": namespace, "scopes": ["ingest"], "connector": ""},
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert message in html and f'id="id_{field}_error"' in html
    assert not Source.objects.exists()


def test_no_scope_ticked_is_a_form_error(admin_client):
    response = create_source(admin_client, scopes=[])
    assert response.status_code == 200
    assert 'id="id_scopes_error"' in response.content.decode()
    assert not Source.objects.exists()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"secret": "0123456789abcdef"}, "webhook settings: url: is required"),
        ({**WEBHOOK, "url": "ftp://x"}, "webhook settings: url: must start with http"),
        ({**WEBHOOK, "secret": "short"}, "webhook settings: secret: must be at least 16"),
    ],
)
def test_bad_connector_settings_are_a_form_error_naming_the_field(admin_client, settings, named):
    response = create_source(admin_client, connector="webhook", settings=json.dumps(settings))
    html = response.content.decode()
    assert response.status_code == 200
    assert named in html
    assert 'id="id_connector_settings_error"' in html
    assert not Source.objects.exists()


def test_connector_settings_that_are_not_json_are_a_form_error(admin_client):
    response = create_source(admin_client, connector="webhook", settings="{url: nope")
    assert "not valid JSON" in response.content.decode()
    assert not Source.objects.exists()


def test_a_source_is_created_with_its_connector(admin_client):
    create_source(admin_client, connector="webhook", settings=json.dumps(WEBHOOK))
    source = Source.objects.get(name="ci")
    assert source.connector == "webhook" and source.connector_settings == WEBHOOK


def test_revoking_a_token_makes_it_401(admin_client, source):
    assert send(source.token, [delegated()]).status_code == 200
    response = admin_client.post(f"/admin/sources/{source.pk}/revoke/", {"confirm": "1"})
    assert response.status_code == 302
    assert send(source.token, [delegated("e2")]).status_code == 401
    source.refresh_from_db()
    assert source.revoked_at is not None
    assert Change.objects.get(kind="source.revoked").payload["actor"] == "user:as-admin"


def test_revoking_needs_the_confirmation(admin_client, source):
    admin_client.post(f"/admin/sources/{source.pk}/revoke/", {})
    assert send(source.token, [delegated()]).status_code == 200


def test_rotating_shows_a_new_token_once_and_the_old_one_stops(admin_client, source):
    response = admin_client.post(f"/admin/sources/{source.pk}/rotate/", {"confirm": "1"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    (token,) = set(TOKEN.findall(response.content.decode()))
    assert token != source.token
    assert send(source.token, [delegated()]).status_code == 401
    assert send(token, [delegated()]).json()["accepted"] == 1
    assert token not in admin_client.get(f"/admin/sources/{source.pk}/").content.decode()
    assert Change.objects.filter(kind="source.token_rotated").count() == 1


def test_rotating_a_revoked_token_makes_the_source_live_again(admin_client, source):
    admin_client.post(f"/admin/sources/{source.pk}/revoke/", {"confirm": "1"})
    response = admin_client.post(f"/admin/sources/{source.pk}/rotate/", {"confirm": "1"})
    (token,) = set(TOKEN.findall(response.content.decode()))
    assert send(token, [delegated()]).status_code == 200


def test_binding_a_connector(admin_client, source):
    response = admin_client.post(
        f"/admin/sources/{source.pk}/connector/",
        {"connector": "webhook", "connector_settings": json.dumps(WEBHOOK)},
    )
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.connector == "webhook" and source.connector_settings == WEBHOOK
    change = Change.objects.get(kind="source.connector")
    # The settings hold a secret: they are not copied into the change log.
    assert change.payload == {"actor": "user:as-admin", "connector": "webhook", "previous": ""}


def test_a_bad_binding_keeps_the_old_one_and_names_the_field(admin_client, source):
    response = admin_client.post(
        f"/admin/sources/{source.pk}/connector/",
        {"connector": "webhook", "connector_settings": json.dumps({"url": "https://x.example"})},
    )
    assert response.status_code == 200
    assert "webhook settings: secret: is required" in response.content.decode()
    source.refresh_from_db()
    assert source.connector == ""


def test_unbinding_a_connector(admin_client, source):
    Source.objects.filter(pk=source.pk).update(connector="webhook", connector_settings=WEBHOOK)
    admin_client.post(f"/admin/sources/{source.pk}/connector/", {"connector": ""})
    source.refresh_from_db()
    assert (source.connector, source.connector_settings) == ("", {})


def test_internal_sources_are_hidden(admin_client, source):
    internal, _ = do_create_source("supervisor-internal", namespace=source.namespace.name)
    Source.objects.filter(pk=internal.pk).update(internal=True)
    listing = admin_client.get("/admin/sources/").content.decode()
    assert source.name in listing and "supervisor-internal" not in listing
    assert admin_client.get(f"/admin/sources/{internal.pk}/").status_code == 404
    revoke = admin_client.post(f"/admin/sources/{internal.pk}/revoke/", {"confirm": "1"})
    assert revoke.status_code == 404


def test_the_sources_list_shows_what_an_admin_needs(admin_client, source):
    html = admin_client.get("/admin/sources/").content.decode()
    shown = (source.name, source.namespace.name, source.scopes, source.token_prefix, "live")
    assert all(text in html for text in shown)


# --- users --------------------------------------------------------------------------


def test_the_users_list_shows_roles(admin_client):
    make_user("ann", "operator")
    html = admin_client.get("/admin/users/").content.decode()
    assert "ann" in html and "as-admin" in html
    assert '<option value="operator" selected>operator</option>' in html


def test_creating_a_user_shows_the_generated_password_once(admin_client, django_user_model):
    response = admin_client.post(
        "/admin/users/new/", {"username": "ann", "role": "operator", "password": ""}
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    password = re.search(r'<code class="token">([^<]+)</code>', response.content.decode())[1]
    assert Client().login(username="ann", password=password)
    ann = django_user_model.objects.get(username="ann")
    assert role_of(ann) == "operator"
    assert password not in admin_client.get("/admin/users/").content.decode()


def test_creating_a_user_with_a_password_redirects(admin_client):
    response = admin_client.post(
        "/admin/users/new/",
        {"username": "bob", "role": "viewer", "password": "a long enough password"},
    )
    assert response.status_code == 302 and response.url == "/admin/users/"
    assert Client().login(username="bob", password="a long enough password")


def test_a_short_password_is_a_form_error(admin_client, django_user_model):
    response = admin_client.post(
        "/admin/users/new/", {"username": "bob", "role": "viewer", "password": "short"}
    )
    assert response.status_code == 200 and "too short" in response.content.decode()
    assert not django_user_model.objects.filter(username="bob").exists()


def test_changing_a_role(admin_client):
    ann = make_user("ann", "viewer")
    response = admin_client.post(f"/admin/users/{ann.pk}/role/", {"role": "operator"}, follow=True)
    assert "ann is now operator." in response.content.decode()
    assert role_of(ann) == "operator"
    change = Change.objects.filter(kind="user.role", subject_id="ann").latest("pk")
    assert change.payload == {"actor": "user:as-admin", "role": "operator", "previous": "viewer"}


def test_the_last_admin_cannot_demote_themselves(client):
    admin = login_as(client, ADMIN)
    response = client.post(f"/admin/users/{admin.pk}/role/", {"role": "viewer"}, follow=True)
    assert "last admin" in response.content.decode()
    assert role_of(admin) == "admin"


def test_the_admin_links_show_for_admins_only(client):
    admin_html = Client()
    login_as(admin_html, ADMIN)
    html = admin_html.get("/").content.decode()
    assert 'href="/admin/dead-letters/"' in html and 'href="/audit/"' in html
    login_as(client, OPERATOR)
    html = client.get("/").content.decode()
    assert 'href="/admin/dead-letters/"' not in html and 'href="/audit/"' in html


# --- dead letters -------------------------------------------------------------------


@pytest.fixture
def letter(source):
    """A task.delegated without its title: rejected and kept as a dead letter."""
    bad = delegated("e1")
    del bad["data"]["title"]
    result = send(source.token, [bad]).json()
    assert result["rejected"][0]["error"] == "data.title: Field required"
    return DeadLetter.objects.get()


def replay(client, letter, body):
    text = body if isinstance(body, str) else json.dumps(body)
    return client.post(f"/admin/dead-letters/{letter.pk}/replay/", {"body": text})


def test_the_list_shows_dead_letters_newest_first(admin_client, letter, source):
    send(source.token, [{"id": "e2", "type": "nope", "at": "2026-11-05T22:40:00Z", "data": {}}])
    html = admin_client.get("/admin/dead-letters/").content.decode()
    assert html.index("unknown event type") < html.index("data.title: Field required")
    assert source.name in html


def test_a_dead_letter_shows_its_body_pretty_printed(admin_client, letter):
    html = admin_client.get(f"/admin/dead-letters/{letter.pk}/").content.decode()
    assert "data.title: Field required" in html
    assert "&quot;type&quot;: &quot;task.delegated&quot;," in html  # indented JSON
    assert '<label for="id_body">' in html


def test_fix_and_replay_applies_the_event_once(
    admin_client, letter, source, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = replay(admin_client, letter, delegated("e1", title="Fixed"))
    assert response.status_code == 302
    # One evaluation of the touched task, after commit (ingest also moves the
    # environment's latest time after it).
    evaluations = [c for c in callbacks if "evaluate_after_commit" in c.__qualname__]
    assert len(evaluations) == 1
    assert Task.objects.get(task_id="task:1").title == "Fixed"
    assert IngestedEvent.objects.filter(source=source, event_id="e1").count() == 1
    letter.refresh_from_db()
    assert letter.replayed_at is not None and letter.replay_error is None
    change = Change.objects.get(kind="dead_letter.replayed")
    assert (change.subject_type, change.subject_id) == ("dead", str(letter.pk))
    assert change.payload["actor"] == "user:as-admin" and change.payload["accepted"] == 1


def test_replaying_twice_takes_the_event_once(admin_client, letter, source):
    replay(admin_client, letter, delegated("e1", title="Fixed"))
    response = replay(admin_client, letter, delegated("e1", title="Fixed again"))
    assert response.status_code == 302
    assert IngestedEvent.objects.filter(source=source).count() == 1
    assert Task.objects.get(task_id="task:1").title == "Fixed"  # the first one wins
    assert DeadLetter.objects.count() == 1


def test_a_still_bad_body_keeps_the_letter_with_the_new_error(admin_client, letter):
    still_bad = delegated("e1", mode="sometimes")
    response = replay(admin_client, letter, still_bad)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Not replayed: event 1 (e1): data.mode:" in html
    assert "sometimes" in html  # the admin's text is kept in the form
    assert DeadLetter.objects.count() == 1
    assert not IngestedEvent.objects.exists()
    letter.refresh_from_db()
    assert letter.replayed_at is None
    assert letter.replay_error.startswith("event 1 (e1): data.mode:")
    assert Change.objects.filter(kind="dead_letter.replay_failed").count() == 1


def test_a_body_that_is_not_json_is_not_replayed(admin_client, letter):
    response = replay(admin_client, letter, '{"id": "e1",\n  "type": ')
    assert "the body is not valid JSON" in response.content.decode()
    assert DeadLetter.objects.count() == 1 and not IngestedEvent.objects.exists()


def test_a_body_may_be_ndjson_or_an_array(admin_client, letter, source):
    lines = "\n".join(json.dumps(delegated(f"e{n}", task=f"task:{n}")) for n in (1, 2))
    assert replay(admin_client, letter, lines).status_code == 302
    assert replay(admin_client, letter, [delegated("e3", task="task:3")]).status_code == 302
    assert set(IngestedEvent.objects.values_list("event_id", flat=True)) == {"e1", "e2", "e3"}


# --- markup -------------------------------------------------------------------------


def test_every_control_on_the_admin_pages_has_a_label(admin_client, letter, source):
    pages = [
        "/admin/sources/",
        "/admin/sources/new/",
        f"/admin/sources/{source.pk}/",
        "/admin/users/",
        "/admin/users/new/",
        "/admin/dead-letters/",
        f"/admin/dead-letters/{letter.pk}/",
        "/audit/",
    ]
    seen = 0
    for url in pages:
        parser = Controls()
        html = admin_client.get(url).content.decode()
        parser.feed(html)
        seen += len(parser.controls)
        assert parser.unlabelled() == [], url
        # Every form that posts carries its CSRF token.
        assert html.count('method="post"') == html.count('name="csrfmiddlewaretoken"'), url
    assert seen > 15
