"""Rate limits on the cache: failed log-ins per address and account, ingest per token.

A sliding window made of two fixed ones: the previous window's count fades out as the
current one runs, so a burst at a window's edge cannot pass twice the limit. Two cache
keys per limit, read in one round trip. When the cache cannot be reached the limit is
not applied: refusing every request because Redis is down would do more harm than what
the limit guards against.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache as store
from django.core.exceptions import ImproperlyConfigured

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rate:
    limit: int  # requests
    window: float  # seconds

    @classmethod
    def parse(cls, text: str, name: str) -> Rate | None:
        """'600/60' is 600 per 60 s; '0' or '' is no limit."""
        text = (text or "").strip()
        if text in {"", "0"}:
            return None
        try:
            limit, window = text.split("/")
            rate = cls(int(limit), float(window))
        except ValueError:
            rate = None
        if rate is None or rate.limit < 1 or rate.window <= 0:
            raise ImproperlyConfigured(
                f"{name}={text!r}: write REQUESTS/SECONDS (for example 600/60), or 0 for no limit"
            )
        return rate


def configured(kind: str) -> Rate | None:
    """The limit named `kind` in SUPERVISOR_RATE_LIMITS (its variable, its text)."""
    variable, text = settings.SUPERVISOR_RATE_LIMITS[kind]
    return Rate.parse(text, variable)


def _keys(scope: str, key: str, rate: Rate, now: float) -> tuple[str, str, float]:
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]  # no address or name in Redis
    index = math.floor(now / rate.window)
    elapsed = now - index * rate.window
    return f"rl:{scope}:{digest}:{index - 1}", f"rl:{scope}:{digest}:{index}", elapsed


def wait(scope: str, key: str, rate: Rate | None, now: float | None = None) -> int:
    """Seconds to wait before one more request passes; 0 when it passes now."""
    if rate is None:
        return 0
    now = time.time() if now is None else now
    previous_key, current_key, elapsed = _keys(scope, key, rate, now)
    try:
        counts = store.get_many([previous_key, current_key])
    except Exception as exc:  # any cache failure: do not limit
        log.warning("rate limit %s not applied: the cache is unreachable (%s)", scope, exc)
        return 0
    previous, current = counts.get(previous_key, 0), counts.get(current_key, 0)
    allowed = rate.limit - 1  # what may have passed for one more to pass
    fading = 1 - elapsed / rate.window
    if previous * fading + current <= allowed:
        return 0
    if current <= allowed:
        # Wait until enough of the previous window has faded out.
        seconds = rate.window * (1 - (allowed - current) / previous) - elapsed
    else:
        # Wait into the next window, where this window's count fades in turn.
        seconds = rate.window - elapsed + rate.window * (1 - allowed / current)
    return max(1, math.ceil(seconds))


def count(scope: str, key: str, rate: Rate | None, now: float | None = None) -> None:
    """Count one request (or one failure) against the limit."""
    if rate is None:
        return
    now = time.time() if now is None else now
    _, current_key, _ = _keys(scope, key, rate, now)
    try:
        # Kept two windows: the next window still reads it as its previous one.
        store.add(current_key, 0, timeout=math.ceil(2 * rate.window) + 1)
        store.incr(current_key)
    except ValueError:
        store.set(current_key, 1, timeout=math.ceil(2 * rate.window) + 1)  # expired between
    except Exception as exc:  # any cache failure: do not limit
        log.warning("rate limit %s not counted: the cache is unreachable (%s)", scope, exc)


def take(scope: str, key: str, rate: Rate | None) -> int:
    """For a request limited on every call: 0 and counted when it passes, else the
    seconds to wait (a refused request is not counted)."""
    seconds = wait(scope, key, rate)
    if not seconds:
        count(scope, key, rate)
    return seconds
