"""Operators' actions: previews, writers, idempotency, sending through connectors, outcomes,
advice.

Imports ingest, flags, rules, facts and below."""
