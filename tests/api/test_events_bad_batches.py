"""Hostile event batches: valid events mixed with huge strings, odd JSON,
invalid UTF-8, lone surrogates and NUL, impossible timestamps and times outside the
window, unknown types and ids of every character class, sent over HTTP as JSON and NDJSON.

For every example: no 5xx; a 4xx has a JSON error and stores nothing; a 200 accepts
exactly the valid events, once, with a dead letter per rejected one, and leaves the
same state as applying only the accepted events; sending the batch again stores nothing.
"""

import base64
import itertools
import json
from dataclasses import dataclass

import pytest
from django.conf import settings as django_settings
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.events import DATA_BY_TYPE
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import (
    BackgroundItem,
    DeadLetter,
    Environment,
    Flag,
    IngestedEvent,
    Run,
    Task,
    TaskReport,
    TaskRequest,
    Thread,
    ToolRejection,
    Wake,
)
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

URL = "/api/v1/events"
LIMIT = django_settings.INGEST_MAX_BYTES
NAMES = itertools.count()

pytestmark = pytest.mark.django_db


@dataclass
class Item:
    """One event of a batch as the text sent, and whether the contract takes it."""

    text: str
    valid: bool
    # The event as the server reads it (for a valid one: to apply it again elsewhere).
    value: object = None


# --- strings -------------------------------------------------------------------------

# Every Unicode category but surrogates (Cs), which are no text, and NUL, which no
# column holds: ids and texts may be made of any of it.
CHARACTERS = st.characters(codec=None, exclude_categories=["Cs"], exclude_characters="\x00")
ID_TEXT = st.one_of(
    st.text(CHARACTERS, min_size=1, max_size=30),
    st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\u00a0\u2028\u2029\u3000\ufeff"), min_size=1),
    st.just("x" * 200),
    st.text(st.characters(categories=["Cc"], exclude_characters="\x00"), min_size=1, max_size=9),
)
# Strings no column can hold: NUL, or half a surrogate pair (a JSON "\ud800" escape).
UNSTORABLE = st.builds(
    lambda head, bad, tail: head + bad + tail,
    st.text(max_size=5),
    st.sampled_from(["\x00", "\ud800", "\udfff", "\udbff", "\udc00"]),
    st.text(max_size=5),
)
counter = itertools.count()


@st.composite
def event_id(draw):
    """A valid, batch-unique id made of any character class."""
    return f"{next(counter)}:{draw(ID_TEXT)}"[:200]


TIMES = st.sampled_from(
    [
        "2026-11-05T22:40:00Z",
        "2026-11-05t22:40:00z",
        "2026-11-05 22:40:00+14:00",
        "2026-11-05T22:40:00.123456789-12:00",
        "2000-01-01T00:00:00Z",
        "2024-02-29T12:00:00+05:30",
    ]
)
# Real times outside the window the supervisor accepts (supervisor/core/contract/times.py).
TIMES_OUTSIDE = st.sampled_from(
    ["0001-01-01T00:00:00Z", "1999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59Z"]
)
IMPOSSIBLE_TIMES = st.sampled_from(
    [
        "0000-01-01T00:00:00Z",
        "99999-01-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2025-02-29T00:00:00Z",
        "2026-11-05T24:00:01Z",
        "2026-11-05T22:40:60Z",
        "2026-11-05T22:40:00",
        "2026-11-05T22:40:00+25:00",
        "2026-11-05T22:40:00+05:60",
        "2026-11-05",
        "yesterday",
        "",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        1762382400,
        1762382400.5,
        None,
        True,
        [],
        {},
    ]
)


# --- valid events ----------------------------------------------------------------------


@st.composite
def valid_event(draw):
    ids = st.one_of(ID_TEXT, st.just("y" * 500)).map(lambda s: s[:500])
    kind = draw(
        st.sampled_from(
            [
                "thread.seen",
                "task.delegated",
                "task.reported",
                "run.requested",
                "run.started",
                "run.finished",
                "background.started",
                "wake.queued",
                "tool.rejected",
                "task.requested",
            ]
        )
    )
    thread, other, entity = draw(ids), draw(ids), draw(ids)
    text = draw(st.text(CHARACTERS, max_size=50))
    data = {
        "thread.seen": {"thread": thread, "title": text, "parent_thread": other},
        "task.delegated": {
            "task": entity,
            "parent_thread": thread,
            "child_thread": other,
            "title": text,
            "mode": draw(st.sampled_from(["async", "wait", None])),
            "requested_at": draw(TIMES),
        },
        "task.reported": {"task": entity, "status": "completed", "summary": text},
        "run.requested": {
            "thread": thread,
            "run": entity,
            "ordinal": draw(st.integers(1, 2**31 - 1)),
            "trigger": {"kind": "delegation", "task": other},
        },
        "run.started": {"thread": thread, "run": entity},
        "run.finished": {"thread": thread, "run": entity, "status": "failed", "summary": text},
        "background.started": {
            "thread": thread,
            "item": entity,
            "kind": "monitor",
            "awaited": draw(st.booleans()),
        },
        "wake.queued": {
            "wake": entity,
            "thread": thread,
            "source": {"kind": "task", "task": other},
            "outcome": "completed",
        },
        "tool.rejected": {"thread": thread, "tool": "x" * 200, "code": text[:200], "message": text},
        "task.requested": {
            "parent_thread": thread,
            "client_request_id": entity,
            "parent_run": other,
            "title": text,
        },
    }[kind]
    if draw(st.booleans()):
        # Unknown fields are ignored, whatever they hold, and kept with the event.
        data[draw(st.text(CHARACTERS, max_size=10))] = draw(odd_but_storable_json())
    event = {"id": draw(event_id()), "type": kind, "at": draw(TIMES), "data": data}
    if draw(st.booleans()):
        event["env"] = draw(ID_TEXT)
    return event


def odd_but_storable_json():
    return st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(10**300), 10**300),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(CHARACTERS, max_size=20),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(CHARACTERS), inner, max_size=4)
        ),
        max_leaves=20,
    )


def _dump(value) -> str:
    # Raw characters where UTF-8 can carry them; lone surrogates only as \u escapes.
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


# --- hostile events -------------------------------------------------------------------


def _nested(depth: int, leaf):
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"n": value}
    return value


def _set(event: dict, path: tuple, value) -> dict:
    event = json.loads(json.dumps(event))
    target = event
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return event


@st.composite
def broken_event(draw):
    """A dict event the contract refuses, for one reason."""
    event = draw(valid_event())
    data_keys = sorted(event["data"])
    reason = draw(
        st.sampled_from(
            [
                "unknown type",
                "impossible time",
                "time outside the window",
                "unstorable id",
                "unstorable field",
                "unstorable key",
                "long id",
                "long data id",
                "missing field",
                "wrong type",
                "deep",
                "data not object",
                "huge int",
            ]
        )
    )
    if reason == "unknown type":
        kind = draw(st.one_of(st.text(CHARACTERS, max_size=20), st.just("run.exploded")))
        return {**event, "type": kind if kind not in DATA_BY_TYPE else kind + "!"}
    if reason == "impossible time":
        return {**event, "at": draw(IMPOSSIBLE_TIMES)}
    if reason == "time outside the window":
        if "requested_at" in event["data"] and draw(st.booleans()):
            return _set(event, ("data", "requested_at"), draw(TIMES_OUTSIDE))
        return {**event, "at": draw(TIMES_OUTSIDE)}
    if reason == "unstorable id":
        return {**event, "id": draw(UNSTORABLE)}
    if reason == "unstorable field":
        return _set(event, ("data", draw(st.sampled_from(data_keys))), draw(UNSTORABLE))
    if reason == "unstorable key":
        return _set(event, ("data", draw(UNSTORABLE)), 1)
    if reason == "long id":
        return {**event, "id": "z" * draw(st.integers(201, 5000))}
    if reason == "long data id":
        ids = ("thread", "task", "run", "wake", "item", "parent_thread", "client_request_id")
        key = next(k for k in ids if k in event["data"])
        return _set(event, ("data", key), "z" * draw(st.integers(501, 5000)))
    if reason == "missing field":
        field = draw(st.sampled_from(["id", "type", "at", "data"]))
        return {k: v for k, v in event.items() if k != field}
    if reason == "wrong type":
        where = draw(st.sampled_from([("id",), ("type",), ("env",), ("data", "thread")]))
        if where == ("data", "thread") and "thread" not in event["data"]:
            where = ("id",)
        return _set(event, where, draw(st.sampled_from([None, 1, 1.0, True, [], {}, ["x"]])))
    if reason == "deep":
        return _set(event, ("data", "deep"), _nested(draw(st.integers(66, 400)), "x"))
    if reason == "data not object":
        return {**event, "data": draw(st.sampled_from([None, [], [{}], "x", 1, 1.5, True]))}
    # A number too big for the run's integer column, or a float where an int goes.
    ordinal = draw(st.sampled_from([2**31, 2**63, 10**400, 0, -1, 1.0, 1.5, "1"]))
    return {
        "id": event["id"],
        "type": "run.requested",
        "at": event["at"],
        "data": {"thread": "t", "run": "r", "ordinal": ordinal, "trigger": {"kind": "other"}},
    }


@st.composite
def item(draw):
    choice = draw(st.integers(0, 9))
    if choice < 5:
        event = draw(valid_event())
        return Item(_dump(event), True, event)
    if choice < 8:
        return Item(_dump(draw(broken_event())), False)
    if choice == 8:
        # Duplicate keys: the last one counts.
        event = draw(valid_event())
        text = _dump(event)
        if draw(st.booleans()):
            return Item('{"type": "no.such", ' + text[1:], True, event)
        return Item(text[:-1] + ', "type": "no.such"}', False)
    # Not an object at all: rejected with id null.
    value = draw(st.sampled_from([None, 1, "event", [], [{"id": "x"}], True]))
    return Item(_dump(value), False)


# --- batches and bodies ---------------------------------------------------------------


@dataclass
class Batch:
    items: list[Item]
    body: bytes
    content_type: str
    # None for a 200; otherwise the status the whole body gets, and words of its error.
    refused: tuple[int, str] | None = None


def _body(texts: list[str], ndjson: bool) -> str:
    if ndjson:
        return "\n".join(texts)
    return '{"events": [' + ", ".join(texts) + "]}"


@st.composite
def batch(draw):
    items = draw(st.lists(item(), max_size=12))
    ndjson = draw(st.booleans())
    content_type = "application/x-ndjson" if ndjson else "application/json"
    texts = [i.text for i in items]
    spoil = draw(
        st.sampled_from(
            ["none"] * 6 + ["utf-8", "nan", "deep", "near limit", "over limit", "huge int"]
        )
    )
    refused = None
    if spoil == "near limit" or spoil == "over limit":
        # A valid event whose summary brings the body to just under or just over 1 MiB.
        pad = {"id": f"pad-{next(counter)}", "type": "run.finished", "at": "2026-11-05T22:40:00Z"}
        pad["data"] = {"thread": "t", "run": "r", "status": "completed", "summary": ""}
        size = len(_body([*texts, _dump(pad)], ndjson).encode())
        extra = draw(st.integers(0, 16))
        pad["data"]["summary"] = "s" * (LIMIT - size - extra if spoil == "near limit" else 0)
        if spoil == "over limit":
            pad["data"]["summary"] = "s" * (LIMIT - size + 1 + extra)
            refused = (413, "1 MiB")
        items = [*items, Item(_dump(pad), True, pad)]
        texts = [i.text for i in items]
    elif spoil == "nan" or spoil == "deep" or spoil == "huge int":
        raw = {
            "nan": draw(st.sampled_from(["NaN", "Infinity", "-Infinity"])),
            "deep": "[" * 100_000 + "]" * 100_000,
            "huge int": "1" * 5000,
        }[spoil]
        event = {"id": f"odd-{next(counter)}", "type": "run.started", "at": "2026-11-05T22:40:00Z"}
        event["data"] = {"thread": "t", "run": "r", "odd": "@@"}
        text = _dump(event).replace('"@@"', raw)
        at = draw(st.integers(0, len(items)))
        items = [*items[:at], Item(text, False), *items[at:]]
        texts = [i.text for i in items]
        if not ndjson:
            refused = (400, "not valid JSON")
    body = _body(texts, ndjson).encode("utf-8")
    if spoil == "utf-8":
        bad = draw(st.sampled_from([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80"]))
        at = draw(st.integers(0, len(body)))
        body = body[:at] + bad + body[at:]
        refused = (400, "not UTF-8")
    return Batch(items, body, content_type, refused)


# --- the state a namespace ends with ---------------------------------------------------

MIRRORED = [
    Thread,
    Task,
    Run,
    BackgroundItem,
    Wake,
    TaskReport,
    ToolRejection,
    TaskRequest,
    Environment,
]
# When a row was written or judged, not what the events said.
NOT_STATE = {"id", "namespace", "source", "last_event_at", "evaluated_at", "next_check_at"}


def state_of(namespace_id: int) -> dict:
    state = {}
    for model in MIRRORED:
        rows = (
            model.objects.filter(task__namespace_id=namespace_id)
            if model is TaskReport
            else model.objects.filter(namespace_id=namespace_id)
        )
        described = []
        for row in rows:
            values = {}
            for field in model._meta.concrete_fields:
                if field.name in NOT_STATE:
                    continue
                value = getattr(row, field.name)
                if isinstance(value, Thread):
                    value = value.thread_id
                elif isinstance(value, Task):
                    value = value.task_id
                values[field.name] = value
            described.append(repr(sorted(values.items())))
        state[model.__name__] = sorted(described)
    return state


def _ingest_rate_unlimited():
    limits = getattr(django_settings, "SUPERVISOR_RATE_LIMITS", None)
    if limits and "ingest" in limits:
        return {"SUPERVISOR_RATE_LIMITS": {**limits, "ingest": (limits["ingest"][0], "0")}}
    return {}


@pytest.fixture(autouse=True)
def _no_ingest_rate_limit(settings):
    # Hundreds of examples from one test: the limit has its own tests.
    for name, value in _ingest_rate_unlimited().items():
        setattr(settings, name, value)


@pytest.mark.slow
@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=batch())
def test_a_hostile_batch_gets_a_clear_answer_and_no_half_applied_state(batch):
    n = next(NAMES)
    sender, token = do_create_source(f"sender-{n}", namespace=f"sent-{n}")
    witness, _ = do_create_source(f"witness-{n}", namespace=f"witness-{n}")
    client = Client()
    headers = {"Authorization": f"Bearer {token}"}

    def send():
        # CONTENT_TYPE again: the test client leaves it out of a request with no body.
        return client.post(
            URL,
            batch.body,
            content_type=batch.content_type,
            headers=headers,
            CONTENT_TYPE=batch.content_type,
        )

    response = send()
    assert response.status_code < 500
    answer = response.json()
    stored = IngestedEvent.objects.filter(source=sender)
    letters = DeadLetter.objects.filter(source=sender)

    if batch.refused:
        status, words = batch.refused
        assert response.status_code == status, answer
        assert isinstance(answer.get("error"), str) and words in answer["error"]
        assert not stored.exists() and not letters.exists()
        assert state_of(sender.namespace_id) == state_of(witness.namespace_id)
        return

    assert response.status_code == 200, answer
    rejected = {r["index"]: r for r in answer["rejected"]}
    expected_rejected = {i for i, it in enumerate(batch.items) if not it.valid}
    mismatched = set(rejected) ^ expected_rejected
    assert not mismatched, (answer, [batch.items[i].text[:500] for i in sorted(mismatched)])
    assert all(isinstance(r["error"], str) and r["error"] for r in rejected.values())
    accepted = [it.value for it in batch.items if it.valid]
    assert answer["accepted"] == len(accepted) and answer["duplicates"] == 0
    # Each accepted event stored once; each rejected one a dead letter with its error.
    assert sorted(stored.values_list("event_id", flat=True)) == sorted(e["id"] for e in accepted)
    assert sorted(letters.values_list("error", flat=True)) == sorted(
        r["error"] for r in rejected.values()
    )
    # No half-applied batch: the state is what the accepted events alone give.
    apply_events(witness, accepted)
    after_first = state_of(sender.namespace_id)
    assert after_first == state_of(witness.namespace_id)

    again = send()
    assert again.status_code == 200
    assert again.json()["accepted"] == 0
    assert again.json()["duplicates"] == len(accepted)
    assert stored.count() == len(accepted)
    assert state_of(sender.namespace_id) == after_first
    # A rejection is recorded each time it is sent, and nothing else.
    assert letters.count() == 2 * len(rejected)


# --- what the runs above found, kept as plain examples ---------------------------------

EVENT = {"id": "e1", "type": "run.started", "at": "2026-11-05T22:40:00Z"}
EVENT_DATA = {"thread": "t", "run": "r"}


def _post(client, token, body, content_type="application/json"):
    if not isinstance(body, (str, bytes)):
        body = json.dumps(body)
    return client.post(
        URL, body, content_type=content_type, headers={"Authorization": f"Bearer {token}"}
    )


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ({**EVENT, "id": "a\x00b"}, "id: contains U+0000"),
        ({**EVENT, "id": "a\ud800"}, "id: contains a lone surrogate U+D800"),
        ({**EVENT, "data": {**EVENT_DATA, "note\x00": 1}}, "the key 'note\\x00'"),
        ({**EVENT, "data": {**EVENT_DATA, "x": [{"y": "\udfff"}]}}, "data.x.0.y: contains"),
        ({**EVENT, "data": {**EVENT_DATA, "x": _nested(80, 1)}}, "nested deeper than 64"),
        ({**EVENT, "at": "9999-12-31T23:59:59-01:00"}, "at: is not a real time"),
        ({**EVENT, "at": "0001-01-01T00:00:00+01:00"}, "at: is not a real time"),
        ({**EVENT, "at": "2026-11-05T22:40:00+05:60"}, "at: must be an RFC 3339 timestamp"),
        (
            {**EVENT, "type": "thread.seen", "data": {"thread": "t", "provider": "p" * 201}},
            "data.provider: String should have at most 200 characters",
        ),
        (
            {
                **EVENT,
                "type": "run.requested",
                "data": {**EVENT_DATA, "ordinal": 2**31, "trigger": {"kind": "other"}},
            },
            "data.ordinal: Input should be less than or equal to 2147483647",
        ),
    ],
    ids=[
        "nul-id",
        "surrogate-id",
        "nul-key",
        "surrogate-deep",
        "too-deep",
        "utc-after-9999",
        "utc-before-1",
        "offset-minute-60",
        "long-provider",
        "ordinal-over-int32",
    ],
)
def test_an_event_no_column_can_hold_is_a_dead_letter(client, source, event, words):
    valid = {**EVENT, "id": "ok", "data": EVENT_DATA}
    response = _post(client, source.token, {"events": [event, valid]})
    assert response.status_code == 200
    answer = response.json()
    assert answer["accepted"] == 1 and len(answer["rejected"]) == 1
    assert words in answer["rejected"][0]["error"]
    letter = DeadLetter.objects.get()
    assert letter.error == answer["rejected"][0]["error"]
    # The letter's body reads back as the event that was sent.
    assert json.loads(letter.body) == json.loads(json.dumps(event))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"events": [{"n": NaN}]}', "NaN is not a JSON value"),
        ('{"events": [{"n": -Infinity}]}', "-Infinity is not a JSON value"),
        ('{"events": ' + "[" * 50_000 + "]" * 50_000 + "}", "nests too deeply"),
        ('{"events": [{"n": ' + "9" * 5000 + "}]}", "Exceeds the limit"),
    ],
    ids=["nan", "infinity", "deep", "huge-int"],
)
def test_a_json_body_python_reads_but_json_does_not_have_is_400(client, source, body, words):
    response = _post(client, source.token, body)
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"] and words in response.json()["error"]
    assert not IngestedEvent.objects.exists() and not DeadLetter.objects.exists()


def test_an_ndjson_line_splits_at_newlines_only_and_keeps_nul_as_an_escape(client, source):
    event = {**EVENT, "data": {**EVENT_DATA, "note": "a\u2028b\u0085c\x1cd"}}
    body = json.dumps(event, ensure_ascii=False) + "\r\n{\x00oops\n"
    response = _post(client, source.token, body, "application/x-ndjson")
    assert response.json()["accepted"] == 1
    assert [r["index"] for r in response.json()["rejected"]] == [1]
    assert IngestedEvent.objects.get().data["note"] == "a\u2028b\u0085c\x1cd"
    assert DeadLetter.objects.get().body == "{\\u0000oops"


@pytest.mark.parametrize(
    ("method", "url", "body", "status", "words"),
    [
        ("get", "/api/v1/tasks?status=%00", None, 400, "status: contains U+0000"),
        ("get", "/api/v1/tasks/a%00", None, 400, "task_id: contains U+0000"),
        ("get", "/api/v1/tasks/line%0Abreak", None, 404, "no task 'line\\nbreak'"),
        ("get", "/api/v1/no/such/path", None, 404, "no API path"),
        ("post", "/api/v1/flags/false", {"action": "resolve"}, 400, "flag_id"),
        ("post", "/api/v1/flags/1", {"action": "snooze", "until": 1762382400}, 400, "until"),
        ("post", "/api/v1/actions/bulk", {"kind": "cancel", "filter": {"q": "\ud800"}}, 400, "q:"),
        (
            "post",
            "/api/v1/actions/bulk",
            {"kind": "cancel", "filter": {"q": "x"}, "confirm": "yes"},
            400,
            "confirm",
        ),
        ("post", "/api/v1/tasks/t/actions", {"kind": "deliver", "run": "r" * 501}, 400, "run"),
    ],
    ids=[
        "nul-query",
        "nul-path",
        "newline-id",
        "unknown-path",
        "flag-id-not-int",
        "until-a-number",
        "surrogate-filter",
        "confirm-not-bool",
        "run-too-long",
    ],
)
def test_bad_api_input_is_a_json_4xx_naming_it(client, source, method, url, body, status, words):
    headers = {"Authorization": f"Bearer {source.token}"}
    if body is None:
        response = client.get(url, headers=headers)
    else:
        response = client.post(
            url, json.dumps(body), content_type="application/json", headers=headers
        )
    assert response.status_code == status, response.content
    assert words in response.json()["error"]


@pytest.mark.parametrize(
    ("moment", "status"),
    [
        ("2026-11-05T22:40:00+22:52", 200),  # read in UTC: PostgreSQL takes up to 15:59
        ("2026-11-05T22:40:00", 400),
        ("9999-12-31T23:59:59-01:00", 400),
    ],
    ids=["offset-postgresql-refuses", "no-offset", "past-9999-in-utc"],
)
def test_a_made_up_cursor_is_read_in_utc_or_refused(client, source, moment, status):
    token = base64.urlsafe_b64encode(json.dumps([moment, 1]).encode()).decode()
    response = client.get(
        f"/api/v1/tasks?cursor={token}", headers={"Authorization": f"Bearer {source.token}"}
    )
    assert response.status_code == status
    if status == 400:
        assert "cursor" in response.json()["error"]


def test_a_snooze_until_an_offset_postgresql_refuses_is_kept_in_utc(client, source):
    scenario = next(p for p in CONTRACT_SCENARIOS if "seed004" in p.name)
    apply_events(source, load_scenario(scenario)["events"])
    evaluate(source.namespace_id, clock.now())
    flag = Flag.objects.filter(state="open").first()
    response = client.post(
        f"/api/v1/flags/{flag.pk}",
        json.dumps({"action": "snooze", "until": "7533-10-17T04:18:22+22:52"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert response.status_code == 200, response.content
    assert response.json()["snoozed_until"].startswith("7533-10-16T05:26:22")
