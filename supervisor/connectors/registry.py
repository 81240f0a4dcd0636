"""Which connectors exist, and the one bound to a source."""

from __future__ import annotations

from django.utils.module_loading import import_string

from .base import Connector, SettingsError

# Dotted paths, imported when needed: connector modules import Django models.
CONNECTORS = {
    "simulator": "supervisor.connectors.simulator.connector.SimulatorConnector",
    "t3code": "supervisor.connectors.t3code.connector.T3CodeConnector",
    "webhook": "supervisor.connectors.webhook.connector.WebhookConnector",
}


def connector_class(name: str) -> type[Connector]:
    if name not in CONNECTORS:
        raise SettingsError(
            f"there is no connector {name!r}; choose from {', '.join(sorted(CONNECTORS))}"
        )
    return import_string(CONNECTORS[name])


def connectors() -> dict[str, type[Connector]]:
    return {name: connector_class(name) for name in CONNECTORS}


def connector_for(source) -> Connector | None:
    """The connector bound to `source`, set up with its settings; None when it has none.
    SettingsError when the bound connector is unknown or its settings are wrong."""
    if not source.connector:
        return None
    try:
        return connector_class(source.connector)(source, source.connector_settings or {})
    except SettingsError as exc:
        raise SettingsError(f"source {source.name!r}: {exc}") from None
