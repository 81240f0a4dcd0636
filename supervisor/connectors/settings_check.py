"""Connector settings checked by a pydantic model: the settings with defaults, or a
SettingsError naming the first wrong field in words an admin can act on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from supervisor.core.contract.connectors import SettingsError


def check(
    model: type[BaseModel],
    settings: Any,
    *,
    connector: str,
    known: Iterable[str],
    not_an_object: str,
    words: dict[str, str] | None = None,
) -> dict[str, Any]:
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise SettingsError(f"settings: {not_an_object}")
    try:
        return model.model_validate(settings).model_dump()
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in error["loc"]) or "settings"
        raise SettingsError(f"{field}: {_problem(error, connector, known, words)}") from None


def _problem(error: dict[str, Any], connector: str, known, words) -> str:
    kind = error["type"]
    if words and kind in words:
        return words[kind]
    match kind:
        case "missing":
            return "is required"
        case "extra_forbidden":
            return f"is not a {connector} setting (known: {', '.join(known)})"
        case "value_error":
            return str(error["ctx"]["error"])
        case "string_type":
            return "must be a string"
        case _:
            return error["msg"][:1].lower() + error["msg"][1:]
