"""The outbound guard itself (supervisor/core/outbound.py): which addresses it refuses
in which spelling, and that while a send is guarded every look-up and every socket is
checked before anything leaves. Nothing is sent off loopback: refusals are checked on
loopback sockets with loopback refused, or before any connect (tests/support/outbound.py)."""

import concurrent.futures
import contextvars
import ipaddress
import socket
import threading

import pytest

from supervisor.core import outbound
from tests.support.outbound import Connects, Names


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("169.254.169.254", "a link-local address"),
        ("169.254.170.2", "a link-local address"),  # ECS task metadata
        ("fe80::1", "a link-local address"),
        ("::ffff:169.254.169.254", "a link-local address"),
        ("::169.254.169.254", "a link-local address"),  # IPv4-compatible
        ("64:ff9b::a9fe:a9fe", "a link-local address"),  # NAT64
        ("2002:a9fe:a9fe::1", "a link-local address"),  # 6to4
        ("fd00:ec2::254", "AWS's metadata address"),
        ("100.100.100.200", "Alibaba Cloud's metadata address"),
        ("0.0.0.0", "an unspecified address"),
        ("0.1.2.3", "an unspecified address"),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast or broadcast address"),
        ("255.255.255.255", "a multicast or broadcast address"),
    ],
)
def test_link_local_metadata_and_unspecified_addresses_are_never_allowed(
    allow_private, address, kind
):
    refusal = outbound.address_refusal(ipaddress.ip_address(address))
    assert refusal is not None and refusal.always
    assert f" is {kind}" in str(refusal)
    assert str(refusal).endswith("never allowed")


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.31.255.255", "a private address"),
        ("192.168.0.1", "a private address"),
        ("100.64.0.1", "a private address"),  # carrier-grade NAT
        ("fd12:3456::1", "a private address"),
        ("::ffff:10.0.0.1", "a private address"),
    ],
)
def test_loopback_and_private_addresses_need_the_setting(settings, address, kind):
    ip = ipaddress.ip_address(address)
    settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = False
    refusal = outbound.address_refusal(ip)
    assert str(refusal).endswith(
        f" is {kind}, allowed only with SUPERVISOR_OUTBOUND_ALLOW_PRIVATE=1"
    )
    settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = True
    assert outbound.address_refusal(ip) is None


def test_an_ipv6_address_that_carries_an_ipv4_one_names_both(refuse_private):
    refusal = outbound.address_refusal(ipaddress.ip_address("::ffff:10.0.0.1"))
    assert refusal.address == "::ffff:a00:1 (10.0.0.1)"


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_public_addresses_are_allowed_without_the_setting(refuse_private, address):
    assert outbound.address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "host",
    ["2852039166", "0251.0376.0251.0376", "0xa9.0xfe.0xa9.0xfe", "0xa9fea9fe", "169.254.43518"],
)
def test_every_ipv4_spelling_is_read_as_the_resolver_reads_it(allow_private, host):
    refusal = outbound.host_refusal(host)
    assert refusal is not None and "a link-local address" in str(refusal)
    assert str(refusal).startswith(host)  # names what was written


def test_names_are_judged_without_resolving_them(refuse_private):
    assert "a loopback address" in str(outbound.host_refusal("localhost"))
    assert "a loopback address" in str(outbound.host_refusal("LocalHost."))
    assert "a loopback address" in str(outbound.host_refusal("app.localhost"))
    assert "metadata" in str(outbound.host_refusal("metadata.google.internal"))
    assert outbound.host_refusal("hooks.example.com") is None  # judged when sent to
    # A bare number where a service puts a token: not an address.
    assert outbound.host_refusal("4174216298", numbers_may_be_names=True) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://hooks.example.com/", "must start with http:// or https://"),
        ("file:///etc/passwd", "must start with http:// or https://"),
        ("gopher://127.0.0.1:6379/_", "must start with http:// or https://"),
        ("http://[::]/", ":: is an unspecified address, which reaches this host, never allowed"),
        ("https://hooks.example.com/x", None),
    ],
)
def test_a_url_is_judged_by_its_scheme_and_its_host(allow_private, url, problem):
    assert outbound.url_refusal(url) == problem


# --- while sending ---------------------------------------------------------------------


@pytest.fixture
def listener():
    """A TCP server on loopback that counts the connections it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def accept():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()
    for conn in accepted:
        conn.close()


def test_a_guarded_connect_to_loopback_is_refused_and_arrives_nowhere(refuse_private, listener):
    port, accepted = listener
    with outbound.guard() as checked, pytest.raises(outbound.OutboundRefused):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    assert accepted == []
    assert [str(r) for r in checked.refusals] == [
        "127.0.0.1 is a loopback address, allowed only with SUPERVISOR_OUTBOUND_ALLOW_PRIVATE=1"
    ]
    # Outside the guard the same connection is nobody's business.
    socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_a_look_up_is_refused_if_any_of_its_addresses_is(allow_private, monkeypatch):
    connects = Connects(monkeypatch)
    Names(monkeypatch, {"mixed.example.test": "93.184.215.14,169.254.169.254"})
    with outbound.guard(), pytest.raises(outbound.OutboundRefused) as caught:
        socket.create_connection(("mixed.example.test", 80), timeout=2)
    assert connects.addresses == []  # refused at the look-up, before the first connect
    assert "169.254.169.254 is a link-local address" in str(caught.value)


def test_a_datagram_to_a_refused_address_is_not_sent(refuse_private):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(0.2)
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with client, outbound.guard(), pytest.raises(outbound.OutboundRefused):
            client.sendto(b"syslog line", server.getsockname())
        with pytest.raises(TimeoutError):
            server.recv(100)


def test_a_local_socket_is_refused_while_guarded(allow_private, tmp_path):
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        client = socket.socket(socket.AF_UNIX)
        with client, outbound.guard(), pytest.raises(outbound.OutboundRefused) as caught:
            client.connect(path)
    assert "a local socket, never allowed" in str(caught.value)


def test_the_guard_holds_in_a_thread_that_copies_the_context(refuse_private, listener):
    """Apprise runs a service in its own worker thread, with a copy of the context."""
    port, accepted = listener
    with outbound.guard() as checked, concurrent.futures.ThreadPoolExecutor(1) as pool:
        context = contextvars.copy_context()
        future = pool.submit(context.run, socket.create_connection, ("127.0.0.1", port), 2)
        with pytest.raises(outbound.OutboundRefused):
            future.result()
    assert accepted == [] and len(checked.refusals) == 1
