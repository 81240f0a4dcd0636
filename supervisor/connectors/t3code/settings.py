"""The T3 Code connector's settings: where T3's state database is (read by the follower),
where its WebSocket API listens, the bearer token that lets Supervisor act, and how long
to wait for an answer.

Example: `{"db_path": "~/.t3", "url": "ws://127.0.0.1:3773/ws",
"token": "<from t3 auth session issue --token-only>", "timeout": 10}`. Only `token` is
needed to act; without it the source can be followed but not acted for. `db_path` may
name the file or T3's base directory (`locate.state_database` picks the file).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator

from ..settings_check import check

DEFAULT_URL = "ws://127.0.0.1:3773/ws"
KNOWN = ("db_path", "env", "url", "token", "timeout")


class T3CodeSettings(BaseModel):
    # Unknown keys are refused: a misspelt "tokne" would otherwise leave the source mute.
    model_config = ConfigDict(extra="forbid")

    db_path: str | None = None
    # The contract `env` of the followed install's events (its machine; default "default").
    env: str | None = None
    url: str = DEFAULT_URL
    token: str | None = None
    timeout: float = 10

    @field_validator("db_path")
    @classmethod
    def _db_path(cls, path: str | None) -> str | None:
        if path is not None and not path.strip():
            raise ValueError("must be the path of T3's state database, or left out")
        return path

    @field_validator("env")
    @classmethod
    def _env(cls, env: str | None) -> str | None:
        if env is not None and not (1 <= len(env.strip()) <= 200):
            raise ValueError("must be 1 to 200 characters, or left out")
        return env

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url.startswith(("ws://", "wss://")):
            raise ValueError("must start with ws:// or wss://")
        if any(c.isspace() for c in url):
            raise ValueError("must not contain spaces")
        try:
            parts = urlsplit(url)
            host, _ = parts.hostname, parts.port  # .port raises on a bad or out-of-range port
        except ValueError as exc:
            raise ValueError(f"is not a valid URL ({exc})") from None
        if not host:
            raise ValueError("names no host")
        if parts.username or parts.password:
            # Error messages show the URL; the token has its own setting.
            raise ValueError("must not carry credentials: put the token in token")
        return url

    @field_validator("token")
    @classmethod
    def _token(cls, token: str | None) -> str | None:
        if token is None:
            return None
        if not token.strip():
            raise ValueError("must not be empty (leave it out to follow without acting)")
        # It goes into an Authorization header: a space or line break would break it or
        # smuggle in another header.
        if any(c.isspace() or ord(c) < 32 for c in token):
            raise ValueError("must not contain spaces or line breaks (paste the token alone)")
        return token

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, timeout: Any) -> Any:
        # bool is an int to Python; `"timeout": true` is a mistake, not one second.
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ValueError("must be a number of seconds")
        if not 1 <= timeout <= 60:
            raise ValueError(f"must be between 1 and 60 seconds (got {timeout})")
        return timeout


def check_settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    """The settings, validated and with defaults; SettingsError naming the first wrong field."""
    return check(
        T3CodeSettings,
        settings,
        connector="t3code",
        known=KNOWN,
        not_an_object='must be an object, like {"token": "..."}',
    )
