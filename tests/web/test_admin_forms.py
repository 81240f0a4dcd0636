"""Credentials inside a connector's URL (a user and password before the host, a token,
key or signature in the query) are never shown on the admin pages, and the masked
settings posted back keep the stored URL, as the mark keeps a stored secret."""

import html
import json
import re

import pytest

from supervisor.core.models import Source
from tests.support.cast import ADMIN, login_as

pytestmark = pytest.mark.django_db

CREDENTIALS = ["hook-user", "hook-pass-3141", "tok-2718", "sig-1618", "key-1414"]
URL = (
    "https://hook-user:hook-pass-3141@hooks.example.com/in?team=agents"
    "&token=tok-2718&sig=sig-1618&api_key=key-1414"
)
SHOWN = (
    "https://********@hooks.example.com/in?team=agents&token=********&sig=********&api_key=********"
)
WEBHOOK = {"url": URL, "secret": "0123456789abcdef", "timeout": 5}
SETTINGS_FIELD = re.compile(r'<textarea name="connector_settings"[^>]*>(.*?)</textarea>', re.S)


@pytest.fixture
def admin_client(client):
    login_as(client, ADMIN)
    return client


@pytest.fixture
def hooked(source):
    Source.objects.filter(pk=source.pk).update(connector="webhook", connector_settings=WEBHOOK)
    source.refresh_from_db()
    return source


def shown_settings(page) -> dict:
    return json.loads(html.unescape(SETTINGS_FIELD.search(page.content.decode()).group(1)))


def assert_no_credential(page) -> None:
    text = page.content.decode()
    assert not [c for c in CREDENTIALS if c in text]


def test_the_source_page_shows_the_url_with_its_credentials_masked(admin_client, hooked):
    page = admin_client.get(f"/admin/sources/{hooked.pk}/")
    assert page.status_code == 200
    assert shown_settings(page) == {**WEBHOOK, "url": SHOWN, "secret": "********"}
    assert_no_credential(page)


def test_the_sources_list_and_the_connection_test_show_no_credential(admin_client, hooked):
    assert_no_credential(admin_client.get("/admin/sources/"))
    tested = admin_client.post(f"/admin/sources/{hooked.pk}/test/", follow=True)
    assert "Connection test of" in tested.content.decode()
    assert_no_credential(tested)


def test_the_masked_settings_posted_back_keep_the_stored_url(admin_client, hooked):
    # Credentials before the host are refused now (they cannot work): the query's stay.
    workable = {**WEBHOOK, "url": URL.replace("hook-user:hook-pass-3141@", "")}
    Source.objects.filter(pk=hooked.pk).update(connector_settings=workable)
    settings = shown_settings(admin_client.get(f"/admin/sources/{hooked.pk}/"))
    answer = admin_client.post(
        f"/admin/sources/{hooked.pk}/connector/",
        {"connector": "webhook", "connector_settings": json.dumps({**settings, "timeout": 7})},
    )
    assert answer.status_code == 302
    hooked.refresh_from_db()
    assert hooked.connector_settings == {**workable, "timeout": 7}


def test_stored_credentials_before_the_host_are_refused_when_posted_back(admin_client, hooked):
    settings = shown_settings(admin_client.get(f"/admin/sources/{hooked.pk}/"))
    page = admin_client.post(
        f"/admin/sources/{hooked.pk}/connector/",
        {"connector": "webhook", "connector_settings": json.dumps(settings)},
    )
    assert "url: must not carry credentials" in page.content.decode()
    assert_no_credential(page)
    hooked.refresh_from_db()
    assert hooked.connector_settings == WEBHOOK


def test_a_masked_url_edited_by_hand_is_refused_and_the_stored_one_kept(admin_client, hooked):
    settings = shown_settings(admin_client.get(f"/admin/sources/{hooked.pk}/"))
    settings["url"] = settings["url"].replace("/in?", "/elsewhere?")
    page = admin_client.post(
        f"/admin/sources/{hooked.pk}/connector/",
        {"connector": "webhook", "connector_settings": json.dumps(settings)},
    )
    assert page.status_code == 200
    assert "stands for a stored secret of this connector only" in page.content.decode()
    assert_no_credential(page)
    hooked.refresh_from_db()
    assert hooked.connector_settings == WEBHOOK


def test_a_new_url_replaces_the_stored_one(admin_client, hooked):
    settings = shown_settings(admin_client.get(f"/admin/sources/{hooked.pk}/"))
    new = "https://hooks.example.com/v2?token=fresh-0001"
    admin_client.post(
        f"/admin/sources/{hooked.pk}/connector/",
        {"connector": "webhook", "connector_settings": json.dumps({**settings, "url": new})},
    )
    hooked.refresh_from_db()
    assert hooked.connector_settings == {**WEBHOOK, "url": new}


def test_a_t3_url_with_a_token_in_its_query_is_masked(admin_client, source):
    url = "ws://127.0.0.1:3773/ws?session=tok-2718&v=2"
    Source.objects.filter(pk=source.pk).update(
        connector="t3code", connector_settings={"url": url, "token": "tok-9999"}
    )
    page = admin_client.get(f"/admin/sources/{source.pk}/")
    assert shown_settings(page)["url"] == "ws://127.0.0.1:3773/ws?session=********&v=2"
    assert "tok-2718" not in page.content.decode()
