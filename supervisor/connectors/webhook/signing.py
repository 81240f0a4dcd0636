"""How a webhook body is signed, and how a receiver checks it.

Header `Supervisor-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>`:
the timestamp is signed with the body, so a captured request cannot be replayed
later than `tolerance` seconds (receivers dedupe by `Idempotency-Key` within it).
Supervisor's own resends are signed anew at each send and may come minutes later, or
after an outage: a receiver remembers keys far longer than the tolerance
(docs/reliability.md, "What a receiver may rely on").
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "Supervisor-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"


def signature(secret: str, body: bytes, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def sign(secret: str, body: bytes, now: float | None = None) -> str:
    return signature(secret, body, int(now if now is not None else time.time()))


class BadSignature(ValueError):
    pass


def verify(
    secret: str, body: bytes, header: str | None, *, tolerance: int = 300, now: float | None = None
) -> None:
    """Raise BadSignature (saying why) unless `header` signs `body` with `secret`
    within `tolerance` seconds of now."""
    if not header:
        raise BadSignature(f"missing {HEADER} header")
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError):
        raise BadSignature(f"malformed {HEADER} header (want t=...,v1=...)") from None
    now = time.time() if now is None else now
    if abs(now - timestamp) > tolerance:
        raise BadSignature(f"timestamp {timestamp} is more than {tolerance}s from now")
    expected = signature(secret, body, timestamp).split("v1=", 1)[1]
    if not hmac.compare_digest(expected, given):
        raise BadSignature("signature does not match the body")
