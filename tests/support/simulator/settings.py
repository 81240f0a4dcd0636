"""The simulator connector's settings: only how long the simulated orchestrator takes to
answer (`reply_delay`, seconds, default 0). Example: `{"reply_delay": 1.5}`."""

from __future__ import annotations

from typing import Any

from supervisor.core.contract.connectors import SettingsError

KNOWN = ("reply_delay",)
MAX_REPLY_DELAY = 30.0


def check_settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    """The settings, validated and with defaults; SettingsError naming the wrong field."""
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise SettingsError('settings: must be an object, like {"reply_delay": 1.5}')
    for name in settings:
        if name not in KNOWN:
            # A misspelt "reply_dealy" would otherwise be ignored without a word.
            raise SettingsError(f"{name}: is not a simulator setting (known: {', '.join(KNOWN)})")
    delay = settings.get("reply_delay", 0)
    # bool is an int to Python; `"reply_delay": true` is a mistake, not one second.
    if isinstance(delay, bool) or not isinstance(delay, int | float):
        raise SettingsError("reply_delay: must be a number of seconds")
    if not 0 <= delay <= MAX_REPLY_DELAY:
        raise SettingsError(
            f"reply_delay: must be between 0 and {MAX_REPLY_DELAY:g} seconds (got {delay})"
        )
    return {"reply_delay": float(delay)}
