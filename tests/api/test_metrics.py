"""GET /metrics: the Prometheus text format, for a token with the `metrics` scope."""

import json
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source, do_revoke_source, parse_scopes
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import DeadLetter, Source, Task, Thread
from supervisor.core.queries.metrics import FLAG_KINDS
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db

URL = "/metrics"


@pytest.fixture
def scraper():
    _, token = do_create_source("prometheus", scopes="metrics")
    return token


def scrape(client, token):
    return client.get(URL, headers={"Authorization": f"Bearer {token}"})


# --- a tiny strict parser of the text format (0.0.4) ----------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(rf"({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*)?\}})? (\S+)")
VALUE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|Inf)|NaN")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m[1], m[1]), text)


def parse(text: str) -> dict:
    """name -> {"type", "help", "samples": {labels tuple: value}}; fails on anything
    the format does not allow (a sample before its TYPE, a repeated series, ...)."""
    assert text.endswith("\n"), "the body ends with a newline"
    families: dict = {}
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert re.fullmatch(NAME, name) and name not in families, line
            families[name] = {"help": _unescape(help_text), "type": None, "samples": {}}
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert name in families and families[name]["type"] is None, line
            assert kind in {"counter", "gauge", "untyped", "summary", "histogram"}, line
            families[name]["type"] = kind
        else:
            match = SAMPLE.fullmatch(line)
            assert match, f"not a sample line: {line!r}"
            name, value = match[1], match[match.lastindex]
            assert name in families and families[name]["type"], f"no TYPE before {line!r}"
            labels = tuple((key, _unescape(raw)) for key, raw in re.findall(LABEL, match[2] or ""))
            assert len({k for k, _ in labels}) == len(labels), line
            assert labels not in families[name]["samples"], f"repeated series {line!r}"
            assert VALUE.fullmatch(value), line
            families[name]["samples"][labels] = float(value)
    return families


def figures(client, token) -> dict:
    response = scrape(client, token)
    assert response.status_code == 200
    return parse(response.content.decode())


def value(families, name, **labels):
    return families[name]["samples"][tuple(labels.items())]


# --- who may read it -------------------------------------------------------------------


def test_without_a_token_it_is_401_with_a_bearer_challenge(client, source):
    response = client.get(URL)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.content.decode().count("\n") == 1


def test_a_read_only_token_is_403(client):
    _, token = do_create_source("reader", scopes="read")
    response = scrape(client, token)
    assert response.status_code == 403
    assert "metrics" in response.content.decode()


def test_a_revoked_token_is_401(client):
    source, token = do_create_source("prometheus", scopes="metrics")
    do_revoke_source(source)
    assert scrape(client, token).status_code == 401


def test_an_unknown_token_is_401(client, scraper):
    assert scrape(client, scraper + "x").status_code == 401


def test_a_logged_in_session_is_not_enough(client, user):
    client.force_login(user)
    assert client.get(URL).status_code == 401


def test_a_post_is_not_allowed(client, scraper):
    response = client.post(URL, headers={"Authorization": f"Bearer {scraper}"})
    assert response.status_code == 405


def test_metrics_is_a_scope_sources_can_be_given():
    assert parse_scopes("metrics") == "metrics"
    assert parse_scopes("metrics,read") == "read,metrics"


def test_create_source_makes_a_metrics_token(client, capsys):
    call_command("create_source", "prom", "--scopes", "metrics")
    token = capsys.readouterr().out.strip()
    assert Source.objects.get(name="prom").scopes == "metrics"
    assert scrape(client, token).status_code == 200


# --- the body ------------------------------------------------------------------------


def test_the_body_is_the_prometheus_text_format(client, source, scraper):
    make_tasks(source, 2)
    response = scrape(client, scraper)
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = parse(response.content.decode())
    assert {name: f["type"] for name, f in families.items()} == {
        "supervisor_events_ingested_total": "counter",
        "supervisor_events_rejected_total": "counter",
        "supervisor_evaluation_lag_seconds": "gauge",
        "supervisor_subjects_awaiting_evaluation": "gauge",
        "supervisor_flags_open": "gauge",
        "supervisor_actions": "gauge",
        "supervisor_notifications": "gauge",
        "supervisor_source_last_event_age_seconds": "gauge",
        "supervisor_dead_letters": "gauge",
        "supervisor_sweep_failures": "gauge",
    }
    assert all(f["help"] for f in families.values())


def _post_events(client, token, events):
    response = client.post(
        "/api/v1/events",
        json.dumps({"events": events}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200
    return response.json()


def _finished(n):
    return {
        "id": f"f{n}",
        "type": "run.finished",
        "at": "2026-11-05T22:45:00Z",
        "data": {"thread": "thread:c", "run": f"run:{n}", "status": "completed", "summary": "ok"},
    }


def test_ingesting_moves_the_counters_by_what_was_accepted_and_rejected(client, source, scraper):
    before = figures(client, scraper)
    valid = [_finished(n) for n in range(3)]
    invalid = {"id": "bad", "type": "run.finished", "at": "not a time", "data": {}}
    assert _post_events(client, source.token, [*valid, invalid])["accepted"] == 3
    after = figures(client, scraper)
    for name, moved in (
        ("supervisor_events_ingested_total", 3),
        ("supervisor_events_rejected_total", 1),
        ("supervisor_dead_letters", 1),
    ):
        assert (
            value(after, name, source=source.name) - value(before, name, source=source.name)
            == moved
        ), name

    assert _post_events(client, source.token, valid)["duplicates"] == 3
    again = figures(client, scraper)
    assert value(again, "supervisor_events_ingested_total", source=source.name) == value(
        after, "supervisor_events_ingested_total", source=source.name
    )
    assert value(again, "supervisor_events_rejected_total", source=source.name) == value(
        after, "supervisor_events_rejected_total", source=source.name
    )


def test_a_rejected_only_batch_counts_but_leaves_the_last_event_time(client, source, scraper):
    _post_events(client, source.token, [{"id": "bad", "type": "nonsense"}])
    source.refresh_from_db()
    assert (source.events_accepted, source.events_rejected) == (0, 1)
    assert source.last_event_at is None
    families = figures(client, scraper)
    assert (("source", source.name),) not in families["supervisor_source_last_event_age_seconds"][
        "samples"
    ]


def test_a_source_with_events_shows_the_age_of_its_last_one(client, source, scraper):
    make_tasks(source, 1)
    Source.objects.filter(pk=source.pk).update(last_event_at=clock.now() - timedelta(seconds=90))
    families = figures(client, scraper)
    age = value(families, "supervisor_source_last_event_age_seconds", source=source.name)
    assert 90 <= age < 120
    # The scraper's own source has sent nothing: it has no age series.
    assert (("source", "prometheus"),) not in families["supervisor_source_last_event_age_seconds"][
        "samples"
    ]


def test_an_open_flag_shows_under_its_kind_and_every_other_kind_is_zero(client, source, scraper):
    do_open_flag(
        source.namespace_id,
        Finding("stuck", "task", "task:t0", {"events": [], "text": "no progress"}),
        clock.now(),
    )
    families = figures(client, scraper)
    opened = {labels[0][1]: n for labels, n in families["supervisor_flags_open"]["samples"].items()}
    assert set(opened) == set(FLAG_KINDS) and "source_silent" in opened
    assert opened["stuck"] == 1
    assert all(n == 0 for kind, n in opened.items() if kind != "stuck")


def _evaluated_all():
    for model in (Task, Thread):
        model.objects.update(evaluated_at=clock.now())


def test_a_task_with_an_unevaluated_event_gives_a_positive_lag(client, source, scraper):
    make_tasks(source, 3)
    _evaluated_all()
    families = figures(client, scraper)
    assert value(families, "supervisor_evaluation_lag_seconds") == 0
    assert value(families, "supervisor_subjects_awaiting_evaluation") == 0

    now = clock.now()
    Task.objects.filter(task_id="task:t1").update(
        evaluated_at=now - timedelta(seconds=120), last_event_at=now - timedelta(seconds=60)
    )
    families = figures(client, scraper)
    assert 60 <= value(families, "supervisor_evaluation_lag_seconds") < 90
    assert value(families, "supervisor_subjects_awaiting_evaluation") == 1


def test_a_never_evaluated_thread_awaits_evaluation(client, source, scraper):
    make_tasks(source, 1)
    _evaluated_all()
    Thread.objects.filter(thread_id="thread:t0").update(
        evaluated_at=None, last_event_at=clock.now() - timedelta(seconds=30)
    )
    families = figures(client, scraper)
    assert value(families, "supervisor_subjects_awaiting_evaluation") == 1
    assert value(families, "supervisor_evaluation_lag_seconds") >= 30


def test_label_values_are_escaped(client, scraper):
    weird = 'we"ird\\name'
    do_create_source(weird, namespace="weird", scopes="ingest")
    body = scrape(client, scraper).content.decode()
    assert 'supervisor_events_ingested_total{source="we\\"ird\\\\name"} 0' in body
    assert value(parse(body), "supervisor_events_ingested_total", source=weird) == 0


def test_a_newline_in_a_label_value_is_escaped(client, scraper):
    do_create_source("two\nlines", namespace="two-lines", scopes="ingest")
    body = scrape(client, scraper).content.decode()
    assert 'source="two\\nlines"' in body
    assert value(parse(body), "supervisor_dead_letters", source="two\nlines") == 0


def test_unreplayed_dead_letters_are_counted_per_source(client, source, scraper):
    DeadLetter.objects.create(source=source, event_id="a", body="{}", error="bad")
    DeadLetter.objects.create(
        source=source, event_id="b", body="{}", error="bad", replayed_at=clock.now()
    )
    families = figures(client, scraper)
    assert value(families, "supervisor_dead_letters", source=source.name) == 1


def _scrape_queries(client, token) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert scrape(client, token).status_code == 200
    return len(queries)


def test_a_scrape_costs_the_same_queries_for_1_or_20_sources_and_flags(client, scraper):
    def grow(upto):
        for n in range(Source.objects.count(), upto):
            source, _ = do_create_source(f"s{n}", scopes="ingest")
            do_open_flag(
                source.namespace_id,
                Finding("source_silent", "source", source.name, {"events": [], "text": "."}),
                clock.now(),
            )
            DeadLetter.objects.create(source=source, event_id="x", body="{}", error="bad")

    grow(2)
    few = _scrape_queries(client, scraper)
    grow(21)
    assert _scrape_queries(client, scraper) == few
    assert few <= 10
