"""Every page says how fresh its data is, and warns when a source has gone quiet."""

from datetime import UTC, datetime

import pytest

from supervisor.core.models import Source

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/tasks/", "/audit/"])
def test_every_page_says_when_its_sources_last_sent(client, user, source, path):
    Source.objects.filter(pk=source.pk).update(last_event_at=datetime(2026, 12, 3, 7, tzinfo=UTC))
    client.force_login(user)
    html = client.get(path).content.decode()
    line = html[html.index('<p id="data-as-of" class="data-as-of"') :]
    assert line[: line.index("</p>")].split(">", 1)[1].startswith("Data as of <time")
    assert 'title="2026-12-03 07:00:00 UTC"' in html


def test_a_quiet_source_turns_it_into_a_warning(client, user, silent_source):
    client.force_login(user)
    html = client.get("/tasks/").content.decode()
    assert 'class="data-as-of is-quiet"' in html
    assert "⚠ orchestrator is quiet" in html and "its tasks may be out of date" in html


def test_the_internal_source_and_its_environment_are_not_offered(client, user, source):
    from supervisor.core.actions.writers import internal_source
    from supervisor.core.ingest.own_records import SUPERVISOR_ENV
    from supervisor.core.models import Environment

    internal_source(source.namespace)
    Environment.objects.create(namespace=source.namespace, name=SUPERVISOR_ENV)
    Environment.objects.create(namespace=source.namespace, name="laptop")
    client.force_login(user)
    html = client.get("/tasks/").content.decode()
    assert f'<option value="{SUPERVISOR_ENV}"' not in html
    assert '<option value="laptop"' in html
    assert "supervisor@" not in html.split('id="data-as-of"')[1].split("</p>")[0]


def test_pages_without_a_socket_ask_for_it_again_and_live_pages_do_not(client, user, silent_source):
    client.force_login(user)
    audit = client.get("/audit/").content.decode()
    assert 'hx-get="/data-as-of/" hx-trigger="every 30s"' in audit
    assert 'hx-get="/data-as-of/"' not in client.get("/").content.decode()
    line = client.get("/data-as-of/").content.decode().strip()
    assert line.startswith('<p id="data-as-of" class="data-as-of is-quiet" hx-get="/data-as-of/"')
    assert "orchestrator is quiet" in line and line.endswith("</p>")
