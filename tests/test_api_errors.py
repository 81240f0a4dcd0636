"""Every /api/ answer is JSON `{"error": ...}`, also where no operation answers: a body
over Django's limit (413), a session's POST without its CSRF token (403), a failing
operation (500). The walk of every route and method is in tests/security/test_url_walk.py."""

import json

import pytest
from django.conf import settings
from django.test import Client

from supervisor.api import flags

pytestmark = pytest.mark.django_db

TOO_BIG = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1


def error_of(response) -> str:
    assert response["Content-Type"] == "application/json", response.content[:80]
    return json.loads(response.content)["error"]


@pytest.mark.parametrize(
    "url", ["/api/v1/flags/1", "/api/v1/tasks/task%3At0/actions", "/api/v1/actions/bulk"]
)
def test_a_body_over_the_limit_is_a_json_413(client, source, url):
    body = json.dumps({"action": "acknowledge", "reason": "x" * TOO_BIG})
    response = client.post(
        url,
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert response.status_code == 413
    assert f"larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes" in error_of(response)


def test_a_405_names_the_methods_allowed(client):
    response = client.put("/api/v1/tasks")
    assert response.status_code == 405
    assert response["Allow"] == "GET"
    assert error_of(response) == "PUT is not allowed on /api/v1/tasks; allowed: GET"


def test_a_path_outside_the_versioned_api_is_a_json_404(client):
    response = client.get("/api/v2/tasks")
    assert response.status_code == 404
    assert "no API path /api/v2/tasks" in error_of(response)


def test_a_sessions_post_without_its_csrf_token_is_a_json_403(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/api/v1/flags/1", "{}", content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in error_of(response)


def test_a_csrf_failure_before_any_operation_is_json(user):
    # The docs page is Django's view, not an operation: Django's CSRF check refuses first.
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.delete("/api/v1/docs")
    assert response.status_code == 403
    assert error_of(response).startswith("CSRF check failed: ")


def test_a_failing_operation_is_a_json_500(client, source, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(flags, "namespace_of", fail)
    client.raise_request_exception = False
    response = client.get("/api/v1/flags", headers={"Authorization": f"Bearer {source.token}"})
    assert response.status_code == 500
    assert "error is logged" in error_of(response)
    assert "a bug" not in response.content.decode()
