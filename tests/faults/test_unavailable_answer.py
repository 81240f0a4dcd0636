"""The answer while the database is down: 503, Retry-After, a JSON error under /api/
and for /metrics, a short page elsewhere; the same from the API's own handler with
DEBUG on (ninja would answer 500 with a traceback). No database, no servers: the
errors are raised where the first query would be."""

from unittest import mock

import psycopg
import pytest
from django.db import DataError, OperationalError
from django.test import Client, RequestFactory

from supervisor.unavailable import DatabaseUnavailableMiddleware

DOWN = [
    OperationalError("connection failed: Connection refused"),
    psycopg.OperationalError("consuming input failed: server closed the connection"),
]


@pytest.mark.parametrize("error", DOWN, ids=["django", "psycopg"])
@pytest.mark.parametrize("debug", [False, True], ids=["production", "debug"])
def test_the_api_answers_503_with_retry_after(client, settings, error, debug):
    settings.DEBUG = debug
    with mock.patch("supervisor.api.auth.source_for_token", side_effect=error):
        response = client.post(
            "/api/v1/events",
            {"events": []},
            content_type="application/json",
            headers={"Authorization": "Bearer some-token"},
        )
    assert response.status_code == 503
    assert response["Retry-After"] == "3"
    assert "the database is unavailable" in response.json()["error"]


@pytest.mark.parametrize(
    ("path", "kind"), [("/metrics", "application/json"), ("/tasks/", "text/html")]
)
def test_metrics_get_json_and_pages_get_a_page(path, kind):
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    response = middleware.process_exception(RequestFactory().get(path), DOWN[0])
    assert response.status_code == 503 and response["Retry-After"] == "3"
    assert response["Content-Type"].startswith(kind)
    assert b"unavailable" in response.content


def test_other_errors_are_left_alone():
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    assert middleware.process_exception(RequestFactory().get("/"), ValueError("a bug")) is None


def refused(error):
    """A psycopg error the server sent, as Django raises it (its own class around it)."""
    wrapper = OperationalError(str(error)) if isinstance(error, psycopg.OperationalError) else None
    wrapper = wrapper or DataError(str(error))
    wrapper.__cause__ = error
    return wrapper


# What the server refuses however often it is sent (psycopg files class 54,
# an index row past the btree limit, under OperationalError).
REFUSED = [
    psycopg.errors.ProgramLimitExceeded(
        'index row size 2824 exceeds btree version 4 maximum 2704 for index "task_parent_title"'
    ),
    psycopg.errors.StringDataRightTruncation("value too long for type character varying(200)"),
    psycopg.errors.NumericValueOutOfRange("integer out of range"),
]


@pytest.mark.parametrize("error", REFUSED, ids=["index-row", "too-long", "out-of-range"])
def test_an_error_no_retry_cures_is_no_503(settings, error):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    with mock.patch("supervisor.api.auth.source_for_token", side_effect=refused(error)):
        response = client.post(
            "/api/v1/events",
            {"events": []},
            content_type="application/json",
            headers={"Authorization": "Bearer some-token"},
        )
    assert response.status_code == 500
    assert "Retry-After" not in response
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    assert middleware.process_exception(RequestFactory().get("/tasks/"), refused(error)) is None


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.SerializationFailure("could not serialize access"),
        psycopg.errors.DeadlockDetected("deadlock detected"),
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        psycopg.errors.TooManyConnections("sorry, too many clients already"),
        psycopg.errors.LockNotAvailable("could not obtain lock"),
    ],
    ids=["serialization", "deadlock", "shutdown", "connections", "lock"],
)
def test_an_error_a_retry_cures_is_a_503(error):
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    response = middleware.process_exception(RequestFactory().get("/tasks/"), refused(error))
    assert response.status_code == 503 and response["Retry-After"] == "3"
