"""A real T3 server's word on a token: the connection check proves it may act and says
until when, and the source page warns before it expires. Skips and fails as
`test_real_server` does."""

from __future__ import annotations

import signal
import subprocess
from datetime import timedelta

import pytest
from django.urls import reverse

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.connectors import ConnectorError, connector_for
from tests.support.cast import ADMIN, login_as
from tests.support.t3.connector import free_port

pytestmark = pytest.mark.real_t3


@pytest.fixture(scope="module")
def server(kit, tmp_path_factory):
    """A real T3 server with nothing on it: (its WebSocket URL, its base dir)."""
    base, port = tmp_path_factory.mktemp("t3-token"), free_port()
    serving = subprocess.Popen(
        [str(kit), "serve", "--port", str(port), "--base-dir", str(base)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        subprocess.run(
            [str(kit), "wait", "--port", str(port), "--timeout", "120", "--pid", str(serving.pid)],
            check=True,
            capture_output=True,
            timeout=180,
        )
        yield f"ws://127.0.0.1:{port}/ws", base
    finally:
        serving.send_signal(signal.SIGTERM)
        try:
            serving.wait(20)
        except subprocess.TimeoutExpired:
            serving.kill()


def issued(kit, base, ttl: str) -> str:
    return subprocess.run(
        [str(kit), "token", "--base-dir", str(base), "--ttl", ttl],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()


@pytest.mark.django_db
def test_the_check_proves_a_real_token_may_act_and_the_page_warns_before_it_expires(
    kit, server, client
):
    url, base = server
    source, _ = do_create_source("t3-token", scopes="ingest,read,act")
    source.connector = "t3code"
    source.connector_settings = {"url": url, "token": issued(kit, base, "3d"), "timeout": 10}
    source.save()
    connector = connector_for(source)

    answer = connector.check_connection(timeout=10)
    assert "T3 says it may act (orchestration:operate) until " in answer, answer
    expires = connector.token_expires()
    assert abs(expires - (clock.now() + timedelta(days=3))) < timedelta(minutes=5)
    assert f"until {expires:%Y-%m-%d %H:%M} UTC" in answer

    login_as(client, ADMIN)
    page = client.get(reverse("web:admin-source", args=[source.pk])).content.decode()
    assert 'class="token-expiry warn"' in page
    assert "expires in 2 days" in page or "expires in 3 days" in page


@pytest.mark.django_db
def test_a_real_server_refuses_a_forged_token_and_the_check_says_so(kit, server):
    url, base = server
    token = issued(kit, base, "1d")
    payload, _, signature = token.partition(".")
    source, _ = do_create_source("t3-forged", scopes="ingest,read,act")
    source.connector = "t3code"
    # The claims are kept and the signature broken: what the page reads stays, T3 says no.
    other = "A" if signature[0] != "A" else "B"
    source.connector_settings = {"url": url, "token": f"{payload}.{other}{signature[1:]}"}
    source.save()

    with pytest.raises(ConnectorError, match="T3 refused the token: 401"):
        connector_for(source).check_connection(timeout=10)
