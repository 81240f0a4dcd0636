"""The worst problem first: at 1280×800 the overview shows the
critical tasks above the fold, before the warnings on threads; "By kind" lists the
critical kinds first; and its counts agree with each other."""

import json
import re

import pytest
from playwright.sync_api import expect

from supervisor.core.flags.kinds import CRITICAL, severity_of
from supervisor.core.models import Flag
from tests.support.browser import VIEWPORT, log_in, seed
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SEED004 = load_scenario(next(p for p in CONTRACT_SCENARIOS if p.name.startswith("seed004")))
THREADS = 3  # coordinators whose delegations were refused: a warning on each thread


def refused_delegations(live_app, source) -> None:
    """seed004 on THREADS threads of their own: one `delegation_rejected` flag each."""
    text = json.dumps(SEED004["events"])
    for n in range(THREADS):
        events = json.loads(
            text.replace("coordinator-claude", f"coordinator-{n}").replace("s004-", f"s004-{n}-")
        )
        assert live_app.post_events(source.token, events)["accepted"] == len(events)
    on_threads = Flag.objects.filter(subject_type="thread", state=Flag.OPEN)
    wait_for(lambda: on_threads.count() == THREADS, what="the threads' flags to open")


def numbers(texts: list[str]) -> list[int]:
    return [int(re.match(r"\s*(\d+)", t).group(1)) for t in texts]


def test_the_overview_shows_the_worst_first(new_page, live_app, acting_user, source):
    refused_delegations(live_app, source)  # the warnings on threads are the oldest
    seeded = seed(live_app, source)
    page = new_page("light")
    log_in(page, acting_user, "/")
    assert page.viewport_size == VIEWPORT  # 1280×800

    # The critical task is above the fold, and before the flags on threads.
    critical = page.locator("#overview-tasks tr.severity-critical").first
    expect(critical).to_contain_text("Port the retry loop")
    box = critical.bounding_box()
    assert box["y"] + box["height"] <= VIEWPORT["height"], f"below the fold: {box}"
    first_thread_flag = page.locator(".thread-flags .flag-card").first
    expect(first_thread_flag).to_be_visible()
    assert first_thread_flag.bounding_box()["y"] > box["y"]

    # "By kind": every critical kind before every warning.
    kinds = page.locator("#overview-counts .count-list").first.locator("code").all_inner_texts()
    severities = [severity_of(k) for k in kinds]
    assert CRITICAL in severities and severities[-1] != CRITICAL
    assert severities == sorted(severities, key=lambda s: s != CRITICAL), kinds

    # The counts agree: the heading, by kind, by environment and the tab's title.
    heading = page.locator("#counts-h").inner_text()
    total = int(re.match(r"(\d+) open flags? awaiting attention", heading).group(1))
    lists = page.locator("#overview-counts .count-list")
    by_kind = numbers(lists.nth(0).locator("li").all_inner_texts())
    by_env = numbers(lists.nth(1).locator("li").all_inner_texts())
    assert total == sum(by_kind) == sum(by_env) == seeded.open_flags  # threads included
    expect(page).to_have_title(re.compile(rf"^\({total}\) "))
