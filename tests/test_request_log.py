"""`make run`'s log stays readable: an ordinary 403 is one line, not a traceback, and
beat sends no T3 follow job while no T3 source exists."""

import io
import logging
import logging.config
import sys

import pytest
from celery.beat import ScheduleEntry
from celery.utils.imports import symbol_by_name
from django.conf import settings

from supervisor.celery import app
from supervisor.core.access.sources import do_create_source
from tests.support.cast import make_user


@pytest.fixture
def console():
    """What the configured console handler writes, as `make run` shows it."""
    logging.config.dictConfig({**settings.LOGGING, "disable_existing_loggers": False})
    handler = logging.getLogger().handlers[0]
    stream = io.StringIO()
    handler.setStream(stream)
    yield stream
    handler.setStream(sys.stderr)


@pytest.mark.django_db
def test_an_ordinary_403_is_one_line_without_a_traceback(client, console):
    client.force_login(make_user("vic", "viewer"))
    assert client.get("/admin/sources/").status_code == 403
    lines = console.getvalue().splitlines()
    assert lines == ["Forbidden (Permission denied): /admin/sources/ (this page is for admins)"]


@pytest.mark.django_db
def test_a_404_stays_one_line(client, console):
    client.force_login(make_user("vic", "viewer"))
    assert client.get("/no-such-page/").status_code == 404
    assert console.getvalue().splitlines() == ["Not Found: /no-such-page/"]


def follow_entry() -> ScheduleEntry:
    entry = settings.CELERY_BEAT_SCHEDULE["follow_t3"]
    return ScheduleEntry(name="follow_t3", app=app, **entry)


def beat_scheduler(tmp_path):
    scheduler_class = symbol_by_name(app.conf.beat_scheduler)
    return scheduler_class(app=app, schedule_filename=str(tmp_path / "schedule"), lazy=True)


@pytest.mark.django_db
def test_beat_sends_no_t3_follow_job_while_no_t3_source_exists(tmp_path, caplog):
    do_create_source("hooked")  # a source, but not T3's
    caplog.set_level(logging.DEBUG)
    beat_scheduler(tmp_path).apply_entry(follow_entry())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []


@pytest.mark.django_db
def test_beat_follows_once_a_t3_source_exists(tmp_path):
    scheduler = beat_scheduler(tmp_path)
    assert not scheduler.wanted(follow_entry())
    source, _ = do_create_source("my-t3")
    source.connector, source.connector_settings = "t3code", {"db_path": str(tmp_path / "t3")}
    source.save()
    assert scheduler.wanted(follow_entry())


def test_a_server_error_keeps_its_traceback(console):
    try:
        raise RuntimeError("the database went away")
    except RuntimeError:
        logging.getLogger("django.request").error(
            "Internal Server Error: %s", "/tasks/", exc_info=True, extra={"status_code": 500}
        )
    output = console.getvalue()
    assert output.startswith("Internal Server Error: /tasks/\nTraceback (most recent call last):")
    assert "RuntimeError: the database went away" in output
