"""The network edge of the outbound guard's tests: nothing leaves loopback, and names
resolve as a test says.

`Connects` records every socket connect; one to an address off loopback is stopped
before it leaves (as an unreachable network would), so a test that lets one through
fails on the record, never by reaching 169.254.169.254 or a private network.
`Names` answers getaddrinfo for the names a test gives (a list of answers is given out
in turn, for a name that changes between two look-ups), raising the audit event the
real resolver raises; every other name goes to the real resolver.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys


class Connects:
    def __init__(self, monkeypatch):
        self.addresses: list[tuple] = []
        real = socket.socket.connect

        def connect(sock, address):
            self.addresses.append(address)
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
                raise OSError(errno.ENETUNREACH, "the tests send nothing off loopback")
            return real(sock, address)

        monkeypatch.setattr(socket.socket, "connect", connect)

    @property
    def off_loopback(self) -> list[tuple]:
        return [a for a in self.addresses if isinstance(a, tuple) and not _loopback(a[0])]


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class Names:
    def __init__(self, monkeypatch, table: dict[str, str | list[str]]):
        self.answers = {name: [a] if isinstance(a, str) else list(a) for name, a in table.items()}
        self.asked: list[str] = []
        real = socket.getaddrinfo

        def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
            name = host.decode() if isinstance(host, bytes) else host
            if name not in self.answers or flags & socket.AI_NUMERICHOST:
                return real(host, port, family, type, proto, flags)
            sys.audit("socket.getaddrinfo", host, port, family, type, proto)
            self.asked.append(name)
            answers = self.answers[name]
            address = answers.pop(0) if len(answers) > 1 else answers[0]
            port = int(port or 0)
            infos = []
            for one in address.split(","):
                ip = ipaddress.ip_address(one)
                if ip.version == 4:
                    infos.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (one, port)))
                else:
                    infos.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (one, port, 0, 0)))
            return infos

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
