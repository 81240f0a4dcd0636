"""The address a request came from: the socket's, or the one the trusted reverse proxies
in front of Supervisor saw (SUPERVISOR_TRUSTED_PROXIES).

Each proxy appends the address it was connected from to X-Forwarded-For; whatever is
left of those entries the client wrote itself. So the header is read from the right and
only as far as the trusted proxies go (like werkzeug's ProxyFix and Express's `trust
proxy`, which also take either form):

- unset or 0: no proxy; X-Forwarded-For is ignored and the socket's address is the client;
- a number N: N proxies in front; the client is the Nth entry from the right (a request
  with fewer entries did not come through them all: the socket's address);
- addresses and networks (`127.0.0.1, 10.0.0.0/8`): the header counts only when the
  connecting address is one of them; then the client is the rightmost entry that is not.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

VARIABLE = "SUPERVISOR_TRUSTED_PROXIES"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(entry: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An X-Forwarded-For entry as an address; some proxies add a port (`1.2.3.4:80`,
    `[2001:db8::1]:80`)."""
    entry = entry.strip()
    if entry.startswith("[") and "]" in entry:
        entry = entry[1 : entry.index("]")]
    elif entry.count(":") == 1:
        entry = entry.split(":")[0]
    try:
        address = ipaddress.ip_address(entry)
    except ValueError:
        return None
    # A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d.
    return getattr(address, "ipv4_mapped", None) or address


def _spelled(entry: str) -> str:
    """One spelling per address, so that `2001:db8::1` and `2001:0db8:0::1` count as one."""
    address = _address(entry)
    return str(address) if address is not None else entry.strip()


@dataclass(frozen=True)
class TrustedProxies:
    hops: int = 0
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> TrustedProxies:
        text = (text or "").strip()
        if text.isdigit():
            return cls(hops=int(text))
        networks = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            try:
                networks.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise ImproperlyConfigured(
                    f"{VARIABLE}={text!r}: {part!r} is not an IP address or network. Write"
                    " how many proxies are in front (1), or their addresses and networks"
                    " (127.0.0.1, 10.0.0.0/8); leave it unset when there is none."
                ) from None
        return cls(networks=tuple(networks))

    def _trusted(self, entry: str) -> bool:
        address = _address(entry)
        return address is not None and any(address in network for network in self.networks)

    def client(self, remote: str, forwarded: str) -> str:
        """The client's address, from the socket's (`remote`) and X-Forwarded-For."""
        entries = [e for e in (p.strip() for p in (forwarded or "").split(",")) if e]
        if self.hops:
            return _spelled(entries[-self.hops] if len(entries) >= self.hops else remote)
        if not self.networks or not self._trusted(remote):
            return _spelled(remote)
        for entry in reversed(entries):
            if not self._trusted(entry):
                return _spelled(entry)
        # Proxies all the way: the farthest one is the best that is known.
        return _spelled(entries[0] if entries else remote)


@lru_cache(maxsize=4)
def _parsed(text: str) -> TrustedProxies:
    return TrustedProxies.parse(text)


def trusted_proxies() -> TrustedProxies:
    """The configured proxies; ImproperlyConfigured names a bad value."""
    return _parsed(settings.SUPERVISOR_TRUSTED_PROXIES)


def client_address(request) -> str:
    return trusted_proxies().client(
        request.META.get("REMOTE_ADDR") or "unknown", request.META.get("HTTP_X_FORWARDED_FOR", "")
    )
