"""A word-by-word diff of two texts (what the parent was given → the latest result).

Words are compared after collapsing white space, as the contract compares texts; the
original spelling of each word is kept for display. The template renders the segments
as `<del>`/`<ins>` with words a screen reader says aloud ("removed", "added").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

EQUAL, DELETE, INSERT = "equal", "delete", "insert"
_WORD = re.compile(r"\S+")
MIN_EQUAL_RUN = 2  # shorter equal runs between two changes are folded into them


@dataclass(frozen=True)
class Segment:
    op: str  # equal | delete | insert
    text: str


def words(text: str | None) -> list[str]:
    return _WORD.findall(text or "")


def word_diff(old: str | None, new: str | None) -> list[Segment]:
    """Segments that turn `old` into `new`: runs of equal, deleted and inserted words.

    A replaced run of words becomes a deletion followed by an insertion. A lone equal
    word between two changes is folded into them, so that a rewritten sentence reads as
    one change rather than confetti. Words inside a segment are joined by one space.
    """
    a, b = words(old), words(new)
    blocks: list[list] = []  # [equal?, old words, new words]
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        blocks.append([tag == "equal", a[i1:i2], b[j1:j2]])
    for i in range(1, len(blocks) - 1):
        equal, kept, _ = blocks[i]
        if equal and len(kept) < MIN_EQUAL_RUN and not blocks[i - 1][0] and not blocks[i + 1][0]:
            blocks[i] = [False, kept, list(kept)]
    merged: list[list] = []
    for block in blocks:
        if merged and not block[0] and not merged[-1][0]:
            merged[-1][1] += block[1]
            merged[-1][2] += block[2]
        else:
            merged.append([block[0], list(block[1]), list(block[2])])
    segments: list[Segment] = []
    for equal, old_words, new_words in merged:
        if equal:
            segments.append(Segment(EQUAL, " ".join(old_words)))
            continue
        if old_words:
            segments.append(Segment(DELETE, " ".join(old_words)))
        if new_words:
            segments.append(Segment(INSERT, " ".join(new_words)))
    return segments


def same_words(old: str | None, new: str | None) -> bool:
    return words(old) == words(new)
