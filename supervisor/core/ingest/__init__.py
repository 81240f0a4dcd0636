"""Events in: validation, the one apply path and its batch, the mirror, dead letters, records
only Supervisor may make.

Imports the facts and below."""
