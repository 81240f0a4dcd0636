"""Which pages may open the live socket: the site's own origin, or a trusted one.

Channels' AllowedHostsOriginValidator compares only the Origin's host with ALLOWED_HOSTS,
so a page on another port of the same host (`http://127.0.0.1:9999`) or the other
scheme would read live frames with the operator's cookie. This gate accepts an Origin
only when its host is in ALLOWED_HOSTS and its scheme, host and port are exactly

- those of the socket's own Host header, with the scheme Django would give the request
  (https with SUPERVISOR_HTTPS, else SECURE_PROXY_SSL_HEADER's answer, else `wss` ->
  https and `ws` -> http), as Django's CSRF check compares a form post's Origin; or
- those of an origin in CSRF_TRUSTED_ORIGINS (`https://*.example.com` matches its
  subdomains, as for CSRF).

Browsers always send Host and Origin on a handshake. Without Host (a tool or a test:
Channels' WebsocketCommunicator sends none) the socket's own origin is any host of
ALLOWED_HOSTS on the port the server listens on (the scope's `server`, else PORT).
Without Origin, with a malformed one or with two, the socket is refused (close 4403,
before the session is read).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": 80, "https": 443}
REFUSED = 4403


class SameOriginValidator:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards WebSocket connections only")
        if allowed_origin(scope):
            return await self.application(scope, receive, send)
        message = await receive()  # the handshake's websocket.connect
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.close", "code": REFUSED})


def allowed_origin(scope) -> bool:
    origins = _header_values(scope, b"origin")
    if len(origins) != 1:
        return False
    origin = _parse_origin(origins[0])
    if origin is None or not validate_host(origin[1], settings.ALLOWED_HOSTS):
        return False
    return origin in _own_origins(scope, origin) or _trusted(origin)


def _header_values(scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key == name]


def _parse_origin(text: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a serialized origin `scheme://host[:port]`, else None."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    # Exactly `scheme://netloc`, as browsers send it: no path, query, user or spaces.
    if parts.scheme not in DEFAULT_PORTS or "@" in parts.netloc:
        return None
    if text != f"{parts.scheme}://{parts.netloc}":
        return None
    return _host_port(parts.netloc, parts.scheme)


def _host_port(netloc: str, scheme: str) -> tuple[str, str, int] | None:
    host, port = split_domain_port(netloc)
    if not host or (port and not 0 < int(port) < 65536):
        return None
    return scheme, host, int(port) if port else DEFAULT_PORTS[scheme]


def _own_origins(scope, origin: tuple[str, str, int]) -> set[tuple[str, str, int]]:
    scheme = _request_scheme(scope)
    hosts = _header_values(scope, b"host")
    if len(hosts) > 1:
        return set()
    if hosts:
        own = _host_port(hosts[0], scheme)
        return {own} if own else set()
    server = scope.get("server") or (None, settings.PORT)
    # No Host header: the origin's host stands for ours when it is an allowed one
    # (checked by the caller); the scheme and the port must still be ours.
    return {(scheme, origin[1], int(server[1]))}


def _request_scheme(scope) -> str:
    """The scheme Django gives an HTTP request coming the same way as this socket."""
    if getattr(settings, "HTTPS", False):
        return "https"  # every page is served over https; plain http is redirected
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        meta_name, secure_value = proxy_header
        name = meta_name.removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")
        values = _header_values(scope, name)
        if values:
            first = ",".join(values).split(",", 1)[0].strip()
            return "https" if first == secure_value else "http"
    return "https" if scope.get("scheme") in {"wss", "https"} else "http"


def _trusted(origin: tuple[str, str, int]) -> bool:
    scheme, host, port = origin
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        parts = urlsplit(trusted.lower())
        if parts.scheme != scheme:
            continue
        if "*" in parts.netloc:
            netloc = f"{host}:{port}" if port != DEFAULT_PORTS[scheme] else host
            if is_same_domain(netloc, parts.netloc.lstrip("*")):
                return True
        elif _host_port(parts.netloc, parts.scheme) == origin:
            return True
    return False
