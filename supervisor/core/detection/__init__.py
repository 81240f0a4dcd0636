"""Running the rules: evaluation, the sweep, source silence, replay, the audit.

Imports any room below it."""
