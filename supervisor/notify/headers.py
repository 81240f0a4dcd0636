"""Text that goes into a header (an email's Subject and key, a service's title) is one
plain line. Much of it was written by an agent (a task's title), and a header cannot
hold a line break: Django refuses the message, so it could never be sent. The other
control characters (an escape, NUL, a direction override, a Unicode line separator)
would reach the reader unseen, so every one is dropped."""

from __future__ import annotations

import unicodedata

# Control (C0, DEL, C1 such as NEL), format (direction overrides, zero-width), lone
# surrogates (no encoding holds them), and the Unicode line and paragraph separators.
DROPPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
LIMIT = 200


def header_text(text: str, limit: int = LIMIT) -> str:
    """`text` as one header line: each run of dropped characters and whitespace is one
    space, and it holds at most `limit` characters."""
    kept = "".join(" " if unicodedata.category(c) in DROPPED else c for c in text)
    return " ".join(kept.split())[:limit]
