"""The source page's "Test connection" of a webhook source reaches the receiver and
says what answered, or why nothing did, with the URL."""

import pytest

from supervisor.core.sources import do_bind_connector
from tests.receiver import Receiver
from tests.web.cast import ADMIN, OPERATOR, login_as

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
