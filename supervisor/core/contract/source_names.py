"""The source and namespace names Supervisor keeps for itself, which a source made by
hand (the admin page, `manage.py create_source`) may not take:

- `supervisor@NAMESPACE`, the internal source of each namespace, which records the
  deliveries made by hand: a source made by hand under that name would receive them
  (in its own namespace, leaving the delivery flags open);
- `demo`, the simulated fleet's source and namespace, which `up` binds to the fleet's
  receiver and archives (revoking the source, resolving the namespace's open flags)
  when the demo is off.

A name is compared in its NFKC form, case folded, so that no look-alike of a reserved
name (`Supervisor@prod`, a full-width `ｄｅｍｏ`) passes for Supervisor's own either.
"""

from __future__ import annotations

import unicodedata

INTERNAL_PREFIX = "supervisor@"
# The longest source or namespace name taken from people (the admin form, create_source);
# an internal source's name is longer by its prefix.
NAME_LENGTH = 200
DEMO = "demo"  # the simulated fleet's source and namespace


class ReservedName(ValueError):
    """A name kept for Supervisor's own sources."""


def internal_source_name(namespace: str) -> str:
    return f"{INTERNAL_PREFIX}{namespace}"


def folded(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold()


def reads_as_internal(name: str) -> bool:
    """Whether the name reads as an internal source's, `supervisor@…`."""
    return folded(name).startswith(INTERNAL_PREFIX)


def check_source_name(name: str) -> None:
    """ReservedName, saying why, when a source made by hand may not be named so."""
    if reads_as_internal(name):
        raise ReservedName(
            f"{name!r} is reserved: names starting with {INTERNAL_PREFIX!r} are Supervisor's "
            "own sources, which record the deliveries made by hand; choose another name"
        )
    if folded(name) == DEMO:
        raise ReservedName(
            f"{name!r} is reserved for the simulated fleet's source (the demo); choose another name"
        )


def check_namespace_name(namespace: str) -> None:
    """ReservedName when a source made by hand may not join this namespace."""
    if folded(namespace) == DEMO:
        raise ReservedName(
            f"{namespace!r} is reserved for the simulated fleet (switching the demo off "
            "resolves its namespace's open flags); choose another namespace"
        )
