"""The event contract (docs/event-contract.md): parsing, accepted times, names, the connector port.

Imports only core's foundations."""
