"""Events in: validation, the one apply path, dead letters, records only Supervisor may make.

Imports the facts and below."""
