"""What a T3 server says it is: `GET /.well-known/t3/environment` answers `serverVersion`
and `capabilities` (a map of names to booleans; T3 `environmentHttp.ts`). Acting reads
what it may rely on from there, never from the version string.

Read once per URL for a short while (`TTL`) and within a short limit: a preview asks,
and a page waiting on a T3 that does not answer would be worse than a careful word. An
answer that does not come is remembered as none for the same while.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from .rpc import USER_AGENT

ENVIRONMENT_PATH = "/.well-known/t3/environment"
TTL = 60.0  # seconds an answer (or its absence) is kept per URL
LIMIT = 2.0  # seconds one read may take, at most (less when the settings say less)
MAX_ANSWER = 64 * 1024


@dataclass(frozen=True)
class Environment:
    """What the server said; `error` instead when it said nothing readable."""

    server_version: str | None = None
    capabilities: dict[str, bool] = field(default_factory=dict)
    error: str | None = None

    @property
    def holds_queue(self) -> bool:
        """Whether a stop holds the thread's queued runs. No build seen (0.0.30, 0.0.33)
        advertises it, and 0.0.33 drops `holdQueue` silently; the capability's name is
        not known yet, so any true capability naming both a hold and a queue counts."""
        return any(
            value is True and "hold" in name.lower() and "queue" in name.lower()
            for name, value in self.capabilities.items()
        )


_cache: dict[str, tuple[float, Environment]] = {}
_lock = threading.Lock()


def environment_url(url: str) -> str:
    """The HTTP address of the environment document beside T3's WebSocket `url` (under
    the same path prefix, for a T3 behind a proxy at `/t3/ws`)."""
    parts = urlsplit(url)
    scheme = "https" if parts.scheme == "wss" else "http"
    prefix = parts.path.removesuffix("/").removesuffix("/ws")
    return urlunsplit((scheme, parts.netloc, prefix + ENVIRONMENT_PATH, "", ""))


def read(url: str, *, timeout: float) -> Environment:
    """The environment of the T3 at `url`, from the cache while it is fresh."""
    now = time.monotonic()
    with _lock:
        kept = _cache.get(url)
        if kept and now - kept[0] < TTL:
            return kept[1]
    found = _ask(environment_url(url), min(timeout, LIMIT))
    with _lock:
        _cache[url] = (time.monotonic(), found)
    return found


def forget() -> None:
    """Drop every cached answer (tests; a source whose T3 was upgraded in place)."""
    with _lock:
        _cache.clear()


def _ask(address: str, timeout: float) -> Environment:
    request = urllib.request.Request(address, headers={"User-Agent": USER_AGENT})
    # Straight to T3, as the WebSocket goes (no proxy from the environment).
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as answer:
            body = json.loads(answer.read(MAX_ANSWER))
    except urllib.error.HTTPError as exc:
        return Environment(error=f"{address} answered {exc.code}")
    except (OSError, ValueError) as exc:
        return Environment(error=f"{address} did not answer: {exc}")
    if not isinstance(body, dict):
        return Environment(error=f"{address} answered no object")
    capabilities = body.get("capabilities")
    return Environment(
        server_version=body.get("serverVersion")
        if isinstance(body.get("serverVersion"), str)
        else None,
        capabilities={str(k): v for k, v in capabilities.items() if isinstance(v, bool)}
        if isinstance(capabilities, dict)
        else {},
    )
