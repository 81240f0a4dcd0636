"""The suite's workers kept apart (tests/support/parallel.py): each its own var folder and,
against Redis, its own databases, none shared with another worker or `make run`'s."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.support import parallel

URLS = {
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15",
    "CHANNEL_LAYER_URL": "redis://127.0.0.1:6379/14",
    "CACHE_URL": "redis://127.0.0.1:6379/8",
}


def test_each_worker_has_redis_databases_no_other_worker_has():
    taken = {}
    for index in range(parallel.REDIS_WORKERS):
        for role in parallel.ROLES:
            db = parallel.redis_db(role, index, URLS)
            assert 0 < db < 16, (index, role, db)
            assert db not in taken, f"gw{index} {role} and {taken.get(db)} share {db}"
            taken[db] = f"gw{index} {role}"
    # The first worker (or a run without workers) keeps what the URLs name.
    assert [parallel.redis_db(role, 0, URLS) for role in URLS] == [15, 14, 8]


def test_a_worker_past_redis_databases_is_a_clear_error():
    with pytest.raises(RuntimeError, match="run it with fewer"):
        parallel.redis_db("CACHE_URL", parallel.REDIS_WORKERS, URLS)


def test_no_database_for_a_url_that_does_not_name_redis():
    assert parallel.redis_db("CELERY_BROKER_URL", 1, {"CELERY_BROKER_URL": "filesystem://"}) is None
    assert parallel.redis_db("CACHE_URL", 0, {}) is None


def test_this_worker_has_a_var_folder_of_its_own():
    if not parallel.WORKER:
        pytest.skip("a run without pytest-xdist workers keeps the var folder it was given")
    assert Path(settings.VAR_DIR).name == parallel.WORKER
    assert os.environ["SUPERVISOR_VAR_DIR"] == str(settings.VAR_DIR)


@pytest.mark.django_db
def test_this_worker_has_a_test_database_of_its_own():
    if not parallel.WORKER:
        pytest.skip("a run without pytest-xdist workers has one test database")
    name = connection.settings_dict["NAME"]
    if connection.vendor == "sqlite":  # a file of the worker's var folder
        assert Path(name).parent == Path(settings.VAR_DIR)
    else:  # pytest-django names the worker's test database after it
        assert name.endswith(f"_{parallel.WORKER}")
