"""Bulk flag actions, browser notifications and the bounded live list in a real browser.

The browser edge stubbed here is `window.Notification` (an init script counts what the
page constructs); everything else is the real app: daphne, the worker, the socket.
"""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core import clock
from supervisor.core.flags.writers import awaiting_attention
from supervisor.core.models import Flag
from tests.support.browser import EXPECTED_OPEN, SEED000, log_in, open_kinds, seed, wait_for_socket
from tests.support.factories import task_events
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# Notifications granted, each one constructed is kept in window.__notices; each time a
# tab has closed its notice window (under the Web Lock "supervisor-notices", claims and
# notice done) is counted.
NOTIFICATION_STUB = """
window.__notices = [];
window.__noticeWindows = 0;
function StubNotification(title, options) {
  window.__notices.push({ title: title, tag: (options || {}).tag });
}
StubNotification.permission = "granted";
StubNotification.requestPermission = function () { return Promise.resolve("granted"); };
StubNotification.prototype.close = function () {};
window.Notification = StubNotification;
if (navigator.locks) {
  var takeLock = navigator.locks.request.bind(navigator.locks);
  navigator.locks.request = function (name, options, work) {
    if (typeof options === "function") { work = options; options = {}; }
    return takeLock(name, options, function (lock) {
      var done = work(lock);
      if (name !== "supervisor-notices") return done;
      // counted once the window's work (claims, then the notice) has finished
      return Promise.resolve(done).finally(function () { window.__noticeWindows++; });
    });
  };
}
"""


def test_bulk_acknowledge_of_matching_tasks_brings_the_title_count_down(
    new_page, live_app, acting_user, source
):
    seeded = seed(live_app, source)
    page = new_page("light")
    log_in(page, acting_user, "/tasks/?state=open")
    expect(page).to_have_title(re.compile(rf"^\({seeded.open_flags}\) Tasks · Supervisor$"))

    page.get_by_label("Act on tasks:").select_option("acknowledge")
    page.get_by_label("every task matching the filters").check()
    page.get_by_role("button", name="Preview…").click()
    confirm = page.get_by_role("button", name=re.compile(r"^Confirm: acknowledge \d+ flags"))
    confirm.click()
    expect(page.locator("#messages")).to_contain_text("Acknowledged")
    left = Flag.objects.filter(awaiting_attention(clock.now())).count()
    assert left < seeded.open_flags
    expected = rf"^\({left}\) Tasks · Supervisor$" if left else r"^Tasks · Supervisor$"
    expect(page).to_have_title(re.compile(expected))


# The second tab reads the claims as if the first tab's write had not reached its process
# yet, as Chromium's localStorage does under load: the claims must not rest on it alone.
LAGGING_CLAIMS = """
(function () {
  var getItem = Storage.prototype.getItem;
  Storage.prototype.getItem = function (key) {
    return key === "supervisor:notified-flags" ? null : getItem.call(this, key);
  };
})();
"""


def _one_notice_for_two_tabs(new_page, live_app, acting_user, source, second_script=None):
    first = new_page("light")
    first.context.add_init_script(NOTIFICATION_STUB)
    log_in(first, acting_user, "/tasks/")
    second = first.context.new_page()  # the same browser: the same session and storage
    if second_script:
        second.add_init_script(second_script)
    second.goto("/")
    tabs = (first, second)
    for tab in tabs:
        wait_for_socket(tab)

    assert live_app.post_events(source.token, SEED000["events"])["accepted"]
    wait_for(lambda: open_kinds() == EXPECTED_OPEN, what="seed000's flags to open")

    def notices():
        return [n for tab in tabs for n in tab.evaluate("window.__notices")]

    def both_windows_closed():
        return all(tab.evaluate("window.__noticeWindows") for tab in tabs)

    wait_for(lambda: both_windows_closed() or len(notices()) > 1, what="the notice windows")
    shown = notices()
    assert len(shown) == 1, shown
    assert shown[0]["title"].startswith(f"{len(EXPECTED_OPEN)} flags opened: "), shown


def test_two_tabs_get_one_notification_for_a_burst_of_flags(
    new_page, live_app, acting_user, source
):
    _one_notice_for_two_tabs(new_page, live_app, acting_user, source)


def test_a_tab_whose_storage_lags_behind_shows_no_second_notification(
    new_page, live_app, acting_user, source
):
    _one_notice_for_two_tabs(new_page, live_app, acting_user, source, LAGGING_CLAIMS)


def test_the_live_list_keeps_its_newest_rows_and_says_how_many_more(
    new_page, live_app, acting_user, source
):
    page = new_page("light")
    log_in(page, acting_user, "/tasks/")
    wait_for_socket(page)
    # The bound is 200 rows; the list may say fewer, which keeps this test short.
    page.evaluate("document.getElementById('task-rows').setAttribute('data-keep-rows', '3')")
    events = [e for n in range(5) for e in task_events(n, prefix="live")]
    assert live_app.post_events(source.token, events)["accepted"] == len(events)

    rows = page.locator("#task-rows tr.task-row")
    more = page.locator("#dropped-tasks")
    expect(more).to_have_text("2 more — show")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Task 4")
    expect(rows.last).to_contain_text("Task 2")
    page.keyboard.press("j")
    expect(rows.first).to_have_class(re.compile(r"\bkb-focus\b"))

    more.get_by_role("link", name="show").click()
    expect(page.locator("#task-rows tr.task-row")).to_have_count(2)
    expect(page.locator("#task-rows tr.task-row").first).to_contain_text("Task 1")
