"""`make run`'s log stays readable: beat sends no T3 follow job while no T3 source
exists (issue 19, point 8)."""

import logging

import pytest
from celery.beat import ScheduleEntry
from celery.utils.imports import symbol_by_name
from django.conf import settings

from supervisor.celery import app
from supervisor.core.sources import do_create_source


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
