"""An alert's links open the server that sent it, in a real browser:
the worker sends an alert to a receiver on loopback, and its task link and its
acknowledge link open this server's pages (they named 127.0.0.1:8000 whatever the port)."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag
from supervisor.notify.models import Channel, Route
from tests.support.alert_receivers import HttpReceiver
from tests.support.browser import RETRY_PORT, log_in, seed
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_alerts_links_open_this_server(new_page, live_app, acting_user, source):
    with HttpReceiver() as receiver:
        channel = Channel.objects.create(
            name="ops", kind="apprise", target=f"json://127.0.0.1:{receiver.port}/hook"
        )
        Route.objects.create(channel=channel, group_window=0, kinds=["stale_result"])
        seed(live_app, source)
        wait_for(lambda: receiver.raw, timeout=60, what="the stale_result alert")
        message = receiver.raw[0]
        task_link = re.search(r"Task: (\S+?)(?:\\\\n|\\n|\")", message).group(1)
        ack_link = re.search(r"Acknowledge or snooze: (\S+?)(?:\\\\n|\\n|\")", message).group(1)
        assert task_link.startswith(live_app.url + "/"), (task_link, live_app.url)
        assert ack_link.startswith(live_app.url + "/alerts/ack/"), ack_link

        page = new_page("light")
        log_in(page, acting_user, "/")
        page.goto(task_link)
        expect(page.get_by_role("heading", level=1)).to_contain_text("Port the retry loop")

        page.goto(ack_link)  # a GET shows the form, and acts on nothing
        stale = Flag.objects.get(subject_id=RETRY_PORT, kind="stale_result", state=Flag.OPEN)
        assert stale.acknowledged_at is None
        page.get_by_role("button", name=re.compile("^Acknowledge")).click()
        expect(page.locator("main")).to_contain_text("cknowledged")
        stale.refresh_from_db()
        assert stale.acknowledged_at is not None
