"""What a T3 token may do and until when: read from the token itself (for the source
page, with no call) and asked of T3 (for the connection check, which proves it).

A T3 session token is `<base64url JSON claims>.<signature>` (T3 `auth/SessionStore.ts`
`issue`): the claims carry `scopes` and `exp` (milliseconds since the epoch). T3 signs
them; Supervisor only reads them, so the page's word is a hint and the check's is proof:
`GET /api/auth/session` with the token answers what T3 itself grants (`authenticated`,
`scopes`, `expiresAt`; contracts `environmentHttp.ts`). `orchestration.dispatchCommand`,
which every action uses, needs `orchestration:operate` (T3 `auth/RpcAuthorization.ts`).
Tokens last 30 days unless issued with `--ttl`.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

from supervisor.core.contract.connectors import ConnectorError, retryable_status

from .rpc import USER_AGENT, where

OPERATE = "orchestration:operate"
SESSION_PATH = "/api/auth/session"
MAX_ANSWER = 64 * 1024


@dataclass(frozen=True)
class Grant:
    """What a token may do: its scopes and when it stops working (None: not said)."""

    scopes: tuple[str, ...]
    expires_at: datetime | None

    @property
    def may_act(self) -> bool:
        return OPERATE in self.scopes


def read_claims(token: str) -> Grant | None:
    """The grant the token states, unverified; None for a token not shaped as T3's."""
    payload, _, signature = token.partition(".")
    if not payload or not signature:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(claims, dict) or claims.get("kind") != "session":
        return None
    scopes = claims.get("scopes")
    return Grant(
        scopes=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
        expires_at=_from_millis(claims.get("exp")),
    )


def session_url(url: str) -> str:
    """The HTTP address of T3's session endpoint beside its WebSocket `url` (under the
    same path prefix, for a T3 behind a proxy at `/t3/ws`)."""
    parts = urlsplit(url)
    scheme = "https" if parts.scheme == "wss" else "http"
    prefix = parts.path.removesuffix("/").removesuffix("/ws")
    return urlunsplit((scheme, parts.netloc, prefix + SESSION_PATH, "", ""))


def ask(url: str, token: str, *, timeout: float) -> Grant | None:
    """What T3 grants `token`, from T3; None when this build has no session endpoint.
    ConnectorError when T3 does not accept the token or cannot be asked."""
    address = session_url(url)
    request = urllib.request.Request(
        address, headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT}
    )
    # Straight to T3, as the WebSocket goes: a proxy from the environment would see the token.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as answer:
            body = answer.read(MAX_ANSWER)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise ConnectorError(
            f"T3 answered {exc.code} at {where(address)}", retryable=retryable_status(exc.code)
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", None) or exc
        raise ConnectorError(
            f"could not ask T3 what the token may do at {where(address)}: {why}", retryable=True
        ) from None
    try:
        state = json.loads(body)
    except ValueError:
        state = None
    if not isinstance(state, dict) or "authenticated" not in state:
        raise ConnectorError(
            f"{where(address)} did not answer as T3's session endpoint does", retryable=False
        )
    if state["authenticated"] is not True:
        raise ConnectorError(
            "T3 does not accept the token (its session endpoint says not authenticated): "
            "it may be revoked or expired; issue a new one with `t3 auth session issue`",
            retryable=False,
        )
    scopes = state.get("scopes")
    return Grant(
        scopes=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
        expires_at=_from_iso(state.get("expiresAt")),
    )


def _from_millis(value) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _from_iso(value) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def until(grant: Grant) -> str:
    """The grant's end in words (" until …"), or "" when T3 did not say."""
    if grant.expires_at is None:
        return ""
    return f" until {grant.expires_at:%Y-%m-%d %H:%M} UTC, when the token expires"
