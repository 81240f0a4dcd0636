"""Where Supervisor may send: the one guard for every request that leaves it on an
address an admin chose (alert channels, webhook connectors, and their tests).

Never to a link-local address (cloud metadata services answer there), a cloud metadata
address, an unspecified one (0.0.0.0 and :: reach this host) or a multicast one; to
loopback and private addresses only with SUPERVISOR_OUTBOUND_ALLOW_PRIVATE (on for
`make run` and the tests, off behind HTTPS). An address is judged as the socket will
use it: IPv4 in any spelling (decimal, octal, hex, short) as the resolver reads it, and
IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) by that address.

Two checks. `url_refusal` reads a URL without resolving it, for forms and settings: a
clear error when the address is written in the URL. `guard()` checks while a request is
sent: every look-up's addresses (all of them) before the first connection, and then the
address each socket connects or sends to, so that a name resolving elsewhere the second
time (DNS rebinding) is still refused, and so is any transport a library uses. It does
so through Python's audit events (PEP 578), whatever library makes the request.
"""

from __future__ import annotations

import contextvars
import ipaddress
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings

SETTING = "SUPERVISOR_OUTBOUND_ALLOW_PRIVATE"
SCHEMES = ("http", "https")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata services that answer outside the link-local ranges.
METADATA = {
    ipaddress.ip_address("fd00:ec2::254"): "AWS's metadata address",
    ipaddress.ip_address("100.100.100.200"): "Alibaba Cloud's metadata address",
    ipaddress.ip_address("192.0.0.192"): "Oracle Cloud's metadata address",
    ipaddress.ip_address("168.63.129.16"): "Azure's host address",
}
METADATA_NAMES = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data"}
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


@dataclass(frozen=True)
class Refusal:
    """Why one address is refused: `kind` in words; `always` if no setting allows it."""

    address: str
    kind: str
    always: bool

    @property
    def rule(self) -> str:
        return "never allowed" if self.always else f"allowed only with {SETTING}=1"

    def __str__(self) -> str:
        return f"{self.address} is {self.kind}, {self.rule}"

    def without_address(self) -> str:
        """For a target that is a secret (an alert channel's): the kind, not the address."""
        return f"its host is {self.kind}, {self.rule}"


class OutboundRefused(OSError):
    """A connection the guard refused; an OSError, so that a library reports it as the
    connection failure it is, while `guard().refusals` keeps the reason."""

    def __init__(self, refusal: Refusal):
        super().__init__(str(refusal))
        self.refusal = refusal


def allow_private() -> bool:
    return bool(getattr(settings, SETTING, False))


def address_refusal(address: Address, *, shown: str | None = None) -> Refusal | None:
    """Why `address` may not be sent to, or None."""
    judged = [address, *_carried_ipv4(address)]
    shown = shown or " ".join([str(address), *(f"({ipv4})" for ipv4 in judged[1:])])
    for one in judged:
        if one in METADATA:
            return Refusal(shown, METADATA[one], always=True)
        if one.is_link_local:
            return Refusal(
                shown, "a link-local address, where cloud metadata services answer", True
            )
        if one.is_unspecified or (one.version == 4 and one in _THIS_NETWORK):
            return Refusal(shown, "an unspecified address, which reaches this host", True)
        if one.is_multicast or one == ipaddress.IPv4Address("255.255.255.255"):
            return Refusal(shown, "a multicast or broadcast address", True)
    if allow_private():
        return None
    final = judged[-1]  # where the packets go: the IPv4 address an IPv6 one carries
    if final.is_loopback:
        return Refusal(shown, "a loopback address", always=False)
    if not final.is_global:
        return Refusal(shown, "a private address", always=False)
    return None


def _carried_ipv4(address: Address) -> list[ipaddress.IPv4Address]:
    if address.version == 4:
        return []
    if address.ipv4_mapped:
        return [address.ipv4_mapped]
    if address.sixtofour:
        return [address.sixtofour]
    if address in _NAT64 or (int(address) >> 32 == 0 and int(address) > 1):
        # NAT64 (64:ff9b::a.b.c.d) and the old IPv4-compatible form (::a.b.c.d)
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return []


def _parsed(host: str) -> list[Address]:
    """The addresses a numeric host stands for, read as the resolver reads it (it takes
    `2852039166`, `0251.0376.0251.0376` and `169.254.43518` for 169.254.169.254); []
    for a name."""
    try:
        infos = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return []
    return [_address(info[4][0]) for info in infos]


def _address(text: str) -> Address:
    return ipaddress.ip_address(text.split("%", 1)[0])  # without an IPv6 zone


def host_refusal(host: str, *, numbers_may_be_names: bool = False) -> Refusal | None:
    """Why `host` (as written in a URL) may not be sent to, judged without resolving
    it, or None (a name is judged again when it is sent to). `numbers_may_be_names`:
    a bare number is a token, not an address (Apprise's `discord://ID/…`)."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name in METADATA_NAMES:
        return Refusal(host, "a cloud metadata service's name", always=True)
    if name == "localhost" or name.endswith(".localhost"):
        if allow_private():
            return None
        return Refusal(host, "a loopback address", always=False)
    if numbers_may_be_names and not any(c in name for c in ".:"):
        return None
    for address in _parsed(name.split("%", 1)[0]):  # without an IPv6 zone
        refusal = address_refusal(address, shown=host)
        if refusal:
            return refusal
    return None


def url_refusal(url: str, schemes: tuple[str, ...] = SCHEMES) -> str | None:
    """What is wrong with sending to `url`, judged without resolving it, or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme.lower() not in schemes:
        return "must start with " + " or ".join(f"{s}://" for s in schemes)
    refusal = host_refusal(host) if host else None
    return str(refusal) if refusal else None


# --- the guard while sending ---------------------------------------------------------


@dataclass
class Guard:
    """One guarded send: the refusals met, whatever the library made of them."""

    refusals: list[Refusal] = field(default_factory=list)

    def refuse(self, refusal: Refusal) -> OutboundRefused:
        self.refusals.append(refusal)
        return OutboundRefused(refusal)


# A context variable, not a thread-local: Apprise runs a service in a worker thread with
# a copy of the caller's context, which then carries the same Guard.
_active: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("outbound", default=None)
_resolving: contextvars.ContextVar[bool] = contextvars.ContextVar("resolving", default=False)
_installed = False
_install_lock = threading.Lock()


@contextmanager
def guard() -> Iterator[Guard]:
    """While open, in this context and the threads that copy it: every look-up's
    addresses are checked before the library gets them, and every socket's address
    before it connects or sends; a refused one raises OutboundRefused there."""
    _install()
    current = Guard()
    token = _active.set(current)
    try:
        yield current
    finally:
        _active.reset(token)


def _install() -> None:
    global _installed
    with _install_lock:
        if not _installed:
            # An audit hook stays for the life of the process: outside guard() it
            # returns at once.
            sys.addaudithook(_audit)
            _installed = True


_EVENTS = frozenset({"socket.getaddrinfo", "socket.connect", "socket.sendto", "socket.sendmsg"})


def _audit(event: str, args: tuple) -> None:
    if event not in _EVENTS:
        return
    current = _active.get()
    if current is None or _resolving.get():
        return
    if event == "socket.getaddrinfo":
        host, port, family, type_, proto = args
        _check_resolved(current, host, port, family, type_, proto)
        return
    sock, address = args[0], args[-1]
    if address is None:  # sendmsg on a connected socket: its connect was checked
        return
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        raise current.refuse(Refusal(str(address), "a local socket", always=True))
    host, port = address[0], address[1]
    try:
        addresses = [_address(host)]
    except ValueError:  # a name handed to connect() itself: resolve it as connect will
        _check_resolved(current, host, port, sock.family, sock.type, 0)
        return
    for one in addresses:
        refusal = address_refusal(one)
        if refusal:
            raise current.refuse(refusal)


def _check_resolved(current: Guard, host, port, family, type_, proto) -> None:
    """Every address `host` resolves to, before the library's own look-up returns."""
    if isinstance(host, bytes):
        host = host.decode("idna")
    token = _resolving.set(True)  # this look-up raises the same event
    try:
        infos = socket.getaddrinfo(host, port, family, type_, proto)
    except (OSError, UnicodeError, ValueError):
        return  # the library's own look-up fails the same way and says so
    finally:
        _resolving.reset(token)
    for info in infos:
        refusal = address_refusal(_address(info[4][0]))
        if refusal:
            raise current.refuse(refusal)
