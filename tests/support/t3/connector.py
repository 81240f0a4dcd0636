"""The T3 Code connector pointed at a server on loopback, with the token the fake T3 takes."""

import socket

from supervisor.connectors.t3code.connector import T3CodeConnector

TOKEN = "t3-token-0123456789abcdef"


def t3code(url: str, **settings) -> T3CodeConnector:
    return T3CodeConnector(None, {"url": url, "token": TOKEN, "timeout": 2} | settings)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
