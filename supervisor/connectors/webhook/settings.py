"""The webhook connector's settings: where to POST, the secret that signs each body,
how long to wait for an answer, and any extra headers the receiver wants.

Example: `{"url": "https://hooks.example.com/supervisor", "secret": "0123456789abcdef",
"timeout": 5, "headers": {"X-Team": "agents"}}`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from supervisor.core import outbound

from ..settings_check import check
from . import signing

# The connector sets these itself; letting settings replace them would break signing,
# deduplication or the body's parsing at the receiver.
RESERVED_HEADERS = frozenset(
    h.lower()
    for h in ("Content-Type", "Content-Length", "Host", signing.HEADER, signing.IDEMPOTENCY_HEADER)
)
# RFC 9110 token characters: anything else in a header name is refused by http.client.
HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


class WebhookSettings(BaseModel):
    # Unknown keys are refused: a misspelt "timout" would otherwise be silently ignored.
    model_config = ConfigDict(extra="forbid")

    url: str
    secret: str
    timeout: float = 10
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        try:
            parts = urlsplit(url)
            host, _ = parts.hostname, parts.port  # .port raises on a bad or out-of-range port
        except ValueError as exc:
            raise ValueError(f"is not a valid URL ({exc})") from None
        if not host:
            raise ValueError("names no host")
        if any(c.isspace() for c in url):
            raise ValueError("must not contain spaces")
        if parts.username is not None or parts.password is not None:
            # urllib would take them for part of the host; a header carries credentials.
            raise ValueError(
                "must not carry credentials (user:password@): "
                "send them in a header, such as Authorization"
            )
        # Checked again, after resolution, whenever it is sent to (DNS can change).
        problem = outbound.url_refusal(url)
        if problem:
            raise ValueError(problem)
        return url

    @field_validator("secret")
    @classmethod
    def _secret(cls, secret: str) -> str:
        if len(secret) < 16:
            raise ValueError(f"must be at least 16 characters (it has {len(secret)})")
        return secret

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, timeout: Any) -> Any:
        # bool is an int to Python; `"timeout": true` is a mistake, not one second.
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ValueError("must be a number of seconds")
        if not 1 <= timeout <= 60:
            raise ValueError(f"must be between 1 and 60 seconds (got {timeout})")
        return timeout

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"{name} is set by the connector and cannot be configured")
            # A line break in a value would let settings smuggle in another header.
            if "\r" in value or "\n" in value:
                raise ValueError(f"the value of {name} must not contain a line break")
            problem = _unsendable(value)
            if problem:
                raise ValueError(f"the value of {name} holds {problem}")
        return headers


def _unsendable(value: str) -> str | None:
    """What in a header value cannot be sent, or None: http.client sends header values
    as Latin-1 (RFC 9110 field values), and a control character other than a tab is
    not part of one."""
    for char in value:
        if ord(char) > 0xFF:
            return (
                f"U+{ord(char):04X}, which a header value cannot carry "
                "(it is sent as Latin-1): use ASCII characters"
            )
        if char != "\t" and unicodedata.category(char) == "Cc":
            return f"the control character U+{ord(char):04X}"
    return None


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings, validated and with defaults; SettingsError naming the first wrong field."""
    return check(
        WebhookSettings,
        settings,
        connector="webhook",
        known=("url", "secret", "timeout", "headers"),
        not_an_object="must be an object with url and secret",
        words={"dict_type": "must be an object of header names to values"},
    )
