"""The browsable API page at /api/v1/docs: Swagger UI from our static files, for whoever
may read the API, answering a refused token as the read API does."""

import re

import pytest
from django.test import Client

from supervisor.core.access.sources import do_create_source, do_revoke_source
from tests.support.cast import ADMIN, OPERATOR, VIEWER, make_user

pytestmark = pytest.mark.django_db

DOCS = "/api/v1/docs"


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def token(scopes: str, *, revoked: bool = False) -> str:
    source, token = do_create_source(f"docs-{scopes}-{revoked}", scopes=scopes)
    if revoked:
        do_revoke_source(source)
    return token


@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMIN])
def test_every_logged_in_role_gets_the_page(client, role):
    client.force_login(make_user(f"docs-{role}", role))
    response = client.get(DOCS)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert 'data-openapi-url="/api/v1/openapi.json"' in response.content.decode()


def test_a_stranger_is_sent_to_log_in_and_back(client):
    response = client.get(DOCS)
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/api/v1/docs"


def test_a_token_with_the_read_scope_gets_the_page():
    response = bearer(token("read")).get(DOCS)
    assert response.status_code == 200
    assert 'id="swagger-ui"' in response.content.decode()


def test_a_token_without_read_is_403_naming_the_scope():
    response = bearer(token("ingest,act")).get(DOCS)
    assert response.status_code == 403
    assert response.json() == {"error": "this token lacks the 'read' scope"}


@pytest.mark.parametrize("kind", ["revoked", "unknown", "not bearer"])
def test_a_revoked_or_unknown_credential_is_401_not_the_log_in_page(kind):
    header = {
        "revoked": f"Bearer {token('read', revoked=True)}",
        "unknown": "Bearer sup_not-a-token",
        "not bearer": "Basic b3BlcmF0b3I6cHc=",
    }[kind]
    response = Client(HTTP_AUTHORIZATION=header).get(DOCS)
    assert response.status_code == 401
    assert "bearer token" in response.json()["error"]


@pytest.mark.parametrize(
    "credential",
    ["read", "unscoped", "revoked", "unknown", "session", "session+unscoped", "session+revoked"],
)
def test_the_page_lets_in_and_refuses_whom_the_read_api_does(credential):
    client = Client()
    if credential.startswith("session"):
        client.force_login(make_user("docs-session", VIEWER))
    header = {
        "read": token("read"),
        "unscoped": token("ingest"),
        "revoked": token("read", revoked=True),
        "unknown": "sup_not-a-token",
    }.get(credential.removeprefix("session").removeprefix("+"))
    if header:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {header}"
    api = client.get("/api/v1/tasks")
    assert client.get(DOCS).status_code == api.status_code
    assert api.status_code in (200, 401, 403)


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_only_get_and_head_are_answered(client, method):
    client.force_login(make_user("docs-admin", ADMIN))
    assert getattr(client, method)(DOCS).status_code == 405
    assert client.head(DOCS).status_code == 200


def test_the_page_loads_swagger_ui_and_its_init_script_from_static(client):
    client.force_login(make_user("docs-viewer", VIEWER))
    html = client.get(DOCS).content.decode()
    scripts = re.findall(r'<script src="([^"]+)" defer></script>', html)
    assert scripts[-2:] == [
        "/static/vendor/swagger-ui/swagger-ui-bundle.js",
        "/static/js/api-docs.js",
    ]
    assert '<link rel="stylesheet" href="/static/vendor/swagger-ui/swagger-ui.css">' in html
    for path in scripts + ["/static/vendor/swagger-ui/swagger-ui.css"]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert b"".join(response.streaming_content), path


def test_the_csp_is_the_sites_own(client):
    client.force_login(make_user("docs-viewer", VIEWER))
    page = client.get(DOCS)["Content-Security-Policy"]
    assert page == client.get("/")["Content-Security-Policy"]
    assert "script-src 'self'" in page and "unsafe" not in page
