"""Operators' actions: writers, previews, outcomes, advice.

Imports ingest, flags, rules, facts and below."""
