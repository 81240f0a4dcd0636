"""Connectors: how Supervisor acts on an orchestrator. One sub-package per connector,
each with the same files: `connector.py` (the Connector) and `settings.py` (its
settings, validated)."""
