"""The source page's "Test connection" of a webhook source reaches the receiver and
says what answered, or why nothing did, with the URL."""

import pytest

from supervisor.core.access.sources import do_bind_connector
from tests.support.cast import ADMIN, OPERATOR, login_as
from tests.support.receiver import Receiver

pytestmark = pytest.mark.django_db

SECRET = "0123456789abcdef"


def bound(source, url: str):
    do_bind_connector(source, "webhook", {"url": url, "secret": SECRET, "timeout": 2})
    return source


def test_the_webhook_test_reaches_the_receiver_and_names_it(client, source):
    login_as(client, ADMIN)
    with Receiver(secret=SECRET) as receiver:
        bound(source, receiver.url)
        html = client.post(f"/admin/sources/{source.pk}/test/", follow=True).content.decode()
    assert receiver.attempts == 1 and receiver.deliveries == []
    assert f"Connection test of orchestrator: webhook {receiver.url} took a signed probe" in html
    assert "nothing to reach" not in html


def test_a_failing_receiver_is_reported_as_a_failure(client, source):
    login_as(client, ADMIN)
    with Receiver(secret=SECRET) as receiver:
        receiver.refuse(500, "boom")
        bound(source, receiver.url)
        html = client.post(f"/admin/sources/{source.pk}/test/", follow=True).content.decode()
    assert "message-error" in html
    assert (
        f"Connection test of orchestrator failed: webhook {receiver.url} answered 500: boom" in html
    )


def test_an_operator_may_not_run_the_test(client, source):
    login_as(client, OPERATOR)
    with Receiver(secret=SECRET) as receiver:
        bound(source, receiver.url)
        assert client.post(f"/admin/sources/{source.pk}/test/").status_code == 403
    assert receiver.attempts == 0


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ({"headers": {"X-Team": "agents \u2603"}}, "the value of X-Team holds U+2603"),
        ({"url": "http://bot:pw@127.0.0.1:9/"}, "url: must not carry credentials"),
    ],
)
def test_stored_settings_that_cannot_work_are_a_clear_error(client, source, stored, named):
    # Stored before the check refused them: the test says what is wrong with them.
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": SECRET, **stored}
    source.save()
    login_as(client, ADMIN)
    response = client.post(f"/admin/sources/{source.pk}/test/", follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Connection test of orchestrator failed: source &#x27;orchestrator&#x27;" in html
    assert named in html
    assert "pw" not in html.split("failed:")[1].split("</")[0]
