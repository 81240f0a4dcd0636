"""Rate limits on the cache: failed log-ins per address and account, ingest per token.

The window slides: it is counted in slices (SLICES of them), and a request passes when
the slices that overlap the last window hold fewer than the limit. The oldest slice
counts whole though only part of it is in the window, so no more than the limit ever
passes in any window; the price is that a sender at exactly the limit may be refused
up to one slice early. (Two fixed windows, the previous one's count weighted by how
much of it is left, assumed its requests evenly spread: a burst at its end let 630 of
640 pass in 16 s against 600 a minute.)

`take` counts before it decides, with the cache's atomic increment, and takes its count
back when it refuses: parallel requests each see the others, where reading the counts
and then counting let eight clients pass together. A request that turns out not to
count (a log-in whose password was right) is handed back with `give_back`. When the
cache cannot be reached the limit is not applied: refusing every request because Redis
is down would do more harm than what the limit guards against.
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


SLICES = 30  # per window: a sender at the limit may be refused up to 1/30 of it early


def _slices(scope: str, key: str, rate: Rate, now: float) -> tuple[list[str], float]:
    """The keys of the slices that overlap the window ending `now`, oldest first (the
    last is the current one), and a slice's length in seconds."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]  # no address or name in Redis
    length = rate.window / SLICES
    current = math.floor(now / length)
    return [f"rl:{scope}:{digest}:{i}" for i in range(current - SLICES, current + 1)], length


def _seconds(counts: list[int], rate: Rate, length: float, now: float) -> int:
    """Seconds until enough of the oldest slices have left the window for one more."""
    first = math.floor(now / length) - SLICES
    over = sum(counts) - (rate.limit - 1)
    for offset, count_in_slice in enumerate(counts):
        over -= count_in_slice
        if over <= 0:
            # Slice `first + offset` leaves the window one window after its end.
            return max(1, math.ceil((first + offset + 1) * length + rate.window - now))
    return max(1, math.ceil(rate.window))


def _read(keys: list[str]) -> list[int]:
    found = store.get_many(keys)
    return [found.get(k, 0) for k in keys]


def _increment(key: str, rate: Rate) -> int:
    """The slice's count after one more, atomically (Redis INCR; locmem under its lock)."""
    # Kept a window past its end: later windows still overlap it.
    timeout = math.ceil(rate.window * (1 + 2 / SLICES)) + 1
    for _ in range(2):
        store.add(key, 0, timeout=timeout)
        try:
            return store.incr(key)
        except ValueError:  # expired between the two calls: add it again
            continue
    raise RuntimeError(f"rate-limit counter {key} expires as soon as it is added")


def wait(scope: str, key: str, rate: Rate | None, now: float | None = None) -> int:
    """Seconds to wait before one more request passes; 0 when it passes now."""
    if rate is None:
        return 0
    now = time.time() if now is None else now
    keys, length = _slices(scope, key, rate, now)
    try:
        counts = _read(keys)
    except Exception as exc:  # any cache failure: do not limit
        log.warning("rate limit %s not applied: the cache is unreachable (%s)", scope, exc)
        return 0
    if sum(counts) < rate.limit:
        return 0
    return _seconds(counts, rate, length, now)


def take(scope: str, key: str, rate: Rate | None, now: float | None = None) -> int:
    """For a request limited on every call: 0 and counted when it passes, else the
    seconds to wait (a refused request is not counted)."""
    if rate is None:
        return 0
    now = time.time() if now is None else now
    keys, length = _slices(scope, key, rate, now)
    try:
        mine = _increment(keys[-1], rate)
        counts = [*_read(keys[:-1]), mine]
        if sum(counts) <= rate.limit:
            return 0
        store.decr(keys[-1])  # refused: not counted
    except Exception as exc:  # any cache failure: do not limit
        log.warning("rate limit %s not applied: the cache is unreachable (%s)", scope, exc)
        return 0
    counts[-1] -= 1
    return _seconds(counts, rate, length, now)


def give_back(scope: str, key: str, rate: Rate | None, now: float) -> None:
    """Uncount a request `take` passed at `now` (the same `now`: its slice)."""
    if rate is None:
        return
    keys, _ = _slices(scope, key, rate, now)
    try:
        store.decr(keys[-1])
    except ValueError:  # the slice has expired: nothing left to give back
        pass
    except Exception as exc:  # any cache failure: do not limit
        log.warning("rate limit %s not given back: the cache is unreachable (%s)", scope, exc)
