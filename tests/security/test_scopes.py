"""The scopes each API operation needs: one table (`supervisor.api.scopes.NEEDS`), the
same in docs/security.md, covering every operation, and each operation tried with a
token of each scope: let in with every scope its row lists, 403 naming what it lacks
without one."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from supervisor.api.router import api
from supervisor.api.scopes import NEEDS, Need
from supervisor.core.access.sources import do_create_source
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Task
from tests.support.factories import BASE, make_tasks
from tests.support.walk import MATRIX, TOKEN, patterns, public_route, send

SCOPE_SETS = [("ingest",), ("read",), ("act",), ("metrics",), ("read", "act")]
# The walk's row for each operation that takes a token: its request, and the answer a
# token with every scope gets.
TOKEN_ROWS = {
    key: row
    for row in MATRIX
    if row.url.startswith(("/api/v1/", "/metrics")) and row.answers.get(TOKEN, 0) < 300
    if (key := (row.method, public_route(row.url.format(flag=1)))) in NEEDS and NEEDS[key].scopes
}


def doc_table() -> dict[tuple[str, str], Need]:
    text = (Path(settings.BASE_DIR) / "docs" / "security.md").read_text()
    head = "| method | path | token scopes | by session |"
    lines = text[text.index(head) :].splitlines()[2:]
    table = {}
    for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("|"))]:
        method, path, scopes, session = (c.strip() for c in line.strip("|").split("|"))
        table[(method, path.strip("`"))] = Need(tuple(re.findall(r"`(\w+)`", scopes)), session)
    return table


def test_the_documented_table_is_the_one_in_code():
    assert doc_table() == NEEDS


def test_every_api_operation_and_url_has_a_row():
    schema = api.get_openapi_schema(path_prefix="/api/v1")
    operations = {(m.upper(), path) for path, ops in schema["paths"].items() for m in ops}
    urls = {
        re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        for route in patterns()
        if route.startswith("/api/v1/") or route == "/metrics"
    }
    pages = {("GET", "/api/v1/openapi.json"), ("GET", "/api/v1/docs"), ("GET", "/metrics")}
    assert operations | pages == set(NEEDS)
    # Every URL of the API is in the table, but ninja's root and the JSON 404 for paths
    # no operation has.
    assert urls - {path for _, path in NEEDS} == {"/api/v1/", "/api/v1/{rest}"}


def test_each_operation_that_takes_a_token_has_a_walk_row():
    assert set(TOKEN_ROWS) == {key for key, need in NEEDS.items() if need.scopes}


@pytest.fixture
def objects(source):
    """A task the actions accept (through the simulator) and an open flag."""
    source.connector = "simulator"
    source.save()
    make_tasks(source, 1)
    task = Task.objects.get(task_id="task:t0")
    flag = do_open_flag(
        source.namespace_id, Finding("stuck", "task", task.task_id, {"text": "x"}), BASE
    )
    return {"namespace": source.namespace.name, "flag": flag.pk, "task_id": task.task_id}


@pytest.mark.django_db
@pytest.mark.parametrize("scopes", SCOPE_SETS, ids="+".join)
@pytest.mark.parametrize("key", sorted(TOKEN_ROWS), ids=" ".join)
def test_a_token_of_these_scopes(objects, key, scopes):
    needed = NEEDS[key].scopes
    _, token = do_create_source("scoped", namespace=objects["namespace"], scopes=",".join(scopes))
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = send(client, TOKEN_ROWS[key], objects)
    missing = [s for s in needed if s not in scopes]
    if not missing:
        assert response.status_code == TOKEN_ROWS[key].answers[TOKEN], response.content
    else:
        assert response.status_code == 403, response.content
        for scope in missing:
            assert f"'{scope}'" in response.content.decode()
