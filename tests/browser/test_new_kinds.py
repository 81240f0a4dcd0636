"""The failure kinds in a real browser: each sick scenario, moved to end now, opens its
flag through the worker; each flag's page says what it means and what to do, has no
serious accessibility violation in light or dark, and fits 390 px. An account limit
whose text names its reset is snoozed until then in one step."""

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from supervisor.core import clock
from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Flag, Task, Thread
from tests.support.browser import AXE, BLOCKING, RUN_AXE, SCHEMES, describe, log_in, wait_for_socket
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIOS = Path(__file__).parents[1] / "scenarios"
# Each new kind and the scenario that opens it.
SICK = {
    "completed_on_failure": "completed-on-failure",
    "account_limit": "account-limit",
    "misrouted_wake": "misrouted-wake",
    "cancel_not_propagated": "cancel-not-propagated",
    "silent_background_item": "silent-background-item",
    "delegation_never_started": "delegation-never-started",
}
PHONE = {"width": 390, "height": 844}


def _parse(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def moved_to_now(name: str) -> list[dict]:
    """The scenario's events moved so that its `until` is now: the flags open now are
    the ones it expects open at its end."""
    scenario = json.loads((SCENARIOS / f"{name}.json").read_text())
    shift = clock.now() - _parse(scenario["until"])
    events = []
    for event in scenario["events"]:
        moved = {**event, "at": (_parse(event["at"]) + shift).isoformat()}
        data = dict(event.get("data") or {})
        if "requested_at" in data:
            data["requested_at"] = (_parse(data["requested_at"]) + shift).isoformat()
        moved["data"] = data
        events.append(moved)
    return events


def account_limit_resetting_in_three_hours() -> list[dict]:
    """A task that failed a minute ago on a usage limit that resets in 3 hours."""
    at = clock.now() - timedelta(minutes=1)
    stamp = at.isoformat()
    child, run = "thread:limit-child", "thread:limit-child~1"
    text = "You've hit your usage limit. It resets in 3 hours."
    return [
        {
            "id": "limit-1",
            "type": "task.delegated",
            "at": stamp,
            "data": {
                "task": "task:limit",
                "parent_thread": "thread:limit-lead",
                "child_thread": child,
                "title": "Summarise the incident",
            },
        },
        {
            "id": "limit-2",
            "type": "run.requested",
            "at": stamp,
            "data": {
                "thread": child,
                "run": run,
                "ordinal": 1,
                "trigger": {"kind": "delegation", "task": "task:limit"},
            },
        },
        {
            "id": "limit-3",
            "type": "run.finished",
            "at": stamp,
            "data": {"thread": child, "run": run, "status": "failed", "summary": text},
        },
        {
            "id": "limit-4",
            "type": "task.reported",
            "at": stamp,
            "data": {"task": "task:limit", "status": "failed", "summary": text},
        },
    ]


@pytest.fixture
def flagged(live_app, source):
    """Every sick scenario's events sent through the API, with the durations they set;
    waits for each new kind."""
    scenarios = {
        name: json.loads((SCENARIOS / f"{name}.json").read_text()) for name in SICK.values()
    }
    source.settings = {
        k: v for s in scenarios.values() for k, v in (s.get("settings") or {}).items()
    }
    source.save()
    for name in SICK.values():
        events = moved_to_now(name)
        answer = live_app.post_events(source.token, events)
        assert answer["accepted"] == len(events), (name, answer)

    def open_new_kinds():
        return set(
            Flag.objects.filter(state=Flag.OPEN, kind__in=SICK).values_list("kind", flat=True)
        )

    try:
        wait_for(lambda: open_new_kinds() == set(SICK), what="every new kind to open")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: open {open_new_kinds()}\n{live_app.logs()}") from None
    return {kind: Flag.objects.filter(state=Flag.OPEN, kind=kind).first() for kind in SICK}


def flag_page(flag: Flag) -> str:
    if flag.subject_type == "thread":
        return f"/threads/{Thread.objects.get(thread_id=flag.subject_id).pk}/"
    return f"/tasks/{Task.objects.get(task_id=flag.subject_id).pk}/"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_each_new_kind_has_its_words_and_an_accessible_page_that_fits_a_phone(
    new_page, live_app, acting_user, flagged, scheme
):
    page = new_page(scheme, bypass_csp=True)
    log_in(page, acting_user, "/")
    found = []
    for kind, flag in flagged.items():
        entry = kind_of(kind)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(flag_page(flag))
        main = page.locator("[data-live-main]")
        expect(main).to_contain_text(entry.title)
        expect(main).to_contain_text(entry.meaning)
        expect(main).to_contain_text(entry.advice)
        wait_for_socket(page)
        page.add_script_tag(path=AXE)
        violations = page.evaluate(RUN_AXE)
        found += describe(kind, scheme, [v for v in violations if v["impact"] in BLOCKING])
        page.set_viewport_size(PHONE)
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{kind}'s page is {overflow} px wider than a 390 px phone"
    assert not found, "axe found serious or critical violations:\n" + "\n".join(found)


def test_an_account_limit_is_snoozed_until_its_reset_in_one_step(
    new_page, live_app, acting_user, source
):
    events = account_limit_resetting_in_three_hours()
    assert live_app.post_events(source.token, events)["accepted"] == len(events)
    wait_for(
        lambda: Flag.objects.filter(kind="account_limit", state=Flag.OPEN).exists(),
        what="account_limit to open",
    )
    task = Task.objects.get(task_id="task:limit")
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    wait_for_socket(page)
    button = page.get_by_role("button", name=re.compile("Snooze until the reset"))
    expect(button).to_be_visible()
    button.focus()
    page.keyboard.press("Enter")
    flag = Flag.objects.get(kind="account_limit")
    wait_for(
        lambda: Flag.objects.get(pk=flag.pk).snoozed_until is not None,
        what="the flag to be snoozed",
    )
    snoozed = Flag.objects.get(pk=flag.pk).snoozed_until
    reset = events[-1]["at"]
    expected = _parse(reset) + timedelta(hours=3)
    # To the minute, rounded up: the snooze ends once the limit has reset.
    assert expected <= snoozed <= expected + timedelta(minutes=1)
    expect(page.locator("[data-live-main]")).to_contain_text("snoozed until")
    expect(button).to_have_count(0)
