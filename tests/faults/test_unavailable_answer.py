"""The answer while the database is down: 503, Retry-After, a JSON error under /api/
and for /metrics, a short page elsewhere; the same from the API's own handler with
DEBUG on (ninja would answer 500 with a traceback). No database, no servers: the
errors are raised where the first query would be."""

from unittest import mock

import psycopg
import pytest
from django.db import OperationalError
from django.test import RequestFactory

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
