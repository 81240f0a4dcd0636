"""Roles, sources and their tokens.

Imports the change log, the contract and the models."""
