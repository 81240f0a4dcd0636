"""The client's address behind the trusted proxies: X-Forwarded-For read from the right,
only as far as the proxies that are trusted go."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from supervisor.client_address import TrustedProxies

NONE = TrustedProxies.parse("")
ONE = TrustedProxies.parse("1")
TWO = TrustedProxies.parse("2")
LISTED = TrustedProxies.parse("127.0.0.1, 10.0.0.0/8, ::1")


@pytest.mark.parametrize(
    "proxies, remote, forwarded, client",
    [
        # No proxy: whatever the header says, the socket's address.
        (NONE, "198.51.100.4", "203.0.113.9", "198.51.100.4"),
        (TrustedProxies.parse("0"), "198.51.100.4", "203.0.113.9", "198.51.100.4"),
        # One proxy: the entry it appended, not the ones the client sent before it.
        (ONE, "127.0.0.1", "6.6.6.6, 203.0.113.9", "203.0.113.9"),
        (ONE, "127.0.0.1", "203.0.113.9", "203.0.113.9"),
        (ONE, "127.0.0.1", "", "127.0.0.1"),  # did not come through the proxy
        # Two proxies: the second entry from the right; too few entries, the socket's.
        (TWO, "10.0.0.2", "6.6.6.6, 203.0.113.9, 10.0.0.1", "203.0.113.9"),
        (TWO, "10.0.0.2", "203.0.113.9", "10.0.0.2"),
        # Listed proxies: only a listed peer's header counts, read past listed entries.
        (LISTED, "198.51.100.4", "203.0.113.9", "198.51.100.4"),
        (LISTED, "127.0.0.1", "6.6.6.6, 203.0.113.9", "203.0.113.9"),
        (LISTED, "127.0.0.1", "6.6.6.6, 203.0.113.9, 10.1.2.3", "203.0.113.9"),
        (LISTED, "::ffff:127.0.0.1", "203.0.113.9", "203.0.113.9"),
        (LISTED, "::1", "10.0.0.7, 10.0.0.8", "10.0.0.7"),  # proxies all the way
        (LISTED, "127.0.0.1", "", "127.0.0.1"),
        # One spelling per address: a port or another way to write it is the same client.
        (ONE, "127.0.0.1", "203.0.113.9:51234", "203.0.113.9"),
        (ONE, "127.0.0.1", "[2001:db8::1]:443", "2001:db8::1"),
        (ONE, "127.0.0.1", "2001:0db8:0:0::1", "2001:db8::1"),
        (ONE, "127.0.0.1", "unknown", "unknown"),
    ],
)
def test_the_client_is_read_from_the_right(proxies, remote, forwarded, client):
    assert proxies.client(remote, forwarded) == client


@pytest.mark.parametrize("text", ["proxy.example.com", "10.0.0.0/33", "-1", "1.5", "127.0.0.1, x"])
def test_a_bad_value_names_the_variable_the_part_and_the_forms(text):
    with pytest.raises(ImproperlyConfigured) as raised:
        TrustedProxies.parse(text)
    message = str(raised.value)
    assert f"SUPERVISOR_TRUSTED_PROXIES={text!r}" in message
    assert "is not an IP address or network" in message
    assert "(1)" in message and "127.0.0.1, 10.0.0.0/8" in message
