"""Text that goes on one line: into a header (an email's Subject and key, a service's
title), or onto a line of an alert's body. Much of it was written by an agent (a task's
title, a child's result, an id), and a header cannot hold a line break: Django refuses
the message, so it could never be sent. In a body, a line break of any kind (CR, LF, VT,
FF, NEL, the Unicode line and paragraph separators) would let the agent's text start a
line of its own and forge the alert's (`Task:`, the acknowledge link). The other
control characters (an escape, NUL, a direction override or isolate, a zero-width
character) would reorder or hide text unseen, so every one becomes a space."""

from __future__ import annotations

import unicodedata

# Control (C0, DEL, C1 such as NEL), format (direction overrides and isolates, marks,
# zero-width), lone surrogates (no encoding holds them), and the Unicode line and
# paragraph separators.
DROPPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
LIMIT = 200


def single_line(text: str) -> str:
    """`text` as one line: each run of dropped characters and whitespace is one space."""
    kept = "".join(" " if unicodedata.category(c) in DROPPED else c for c in text)
    return " ".join(kept.split())


def header_text(text: str, limit: int = LIMIT) -> str:
    """`text` as one header line of at most `limit` characters."""
    return single_line(text)[:limit]
