"""A message is plain text, and much of it was written by an agent (a child's result, a
task title): it must reach every service as text, never as markup the service renders
(a live `<a>` in an email, a disguised `[link](…)` in a chat, an `@everyone` ping).

Apprise escapes text for HTML services itself (`body_format=TEXT`). For Markdown it
escapes too little (`<`, `@` stay live), and some chat services render Markdown in
what Apprise sends them as plain text (Discord's content), so for those targets the
text is escaped here and handed on as Markdown that means exactly that text."""

from __future__ import annotations

import re

from apprise import NotifyFormat
from apprise.plugins.base import NotifyBase

# Services that render Markdown (and mentions) in their plain-text messages, the title
# joined to the body.
_MARKDOWN_IN_TEXT = frozenset({"discord", "guilded", "mmost", "mmosts"})

# A bare link stays as it is, so the message's own links (task, acknowledge) still
# work; it stops before anything that could open Markdown link or code syntax, which
# is then escaped like the rest.
_BARE_URL = re.compile(r"https?://[^\s<>\[\]()`*|\\\"]+")
_PUNCTUATION = re.compile(r"([!-/:-?\[-`{-~])")  # ASCII punctuation except @
_MENTION = "@\u200b"  # a zero-width space after @: shown as @, never a mention


def as_sent_to(service: NotifyBase, subject: str, body: str) -> tuple[str, str, NotifyFormat]:
    """(title, body, body_format) to hand Apprise so that `service` shows our text."""
    joins_title = _renders_markdown_in_text(service)
    if not joins_title and service.resolve_format(NotifyFormat.TEXT) != NotifyFormat.MARKDOWN:
        return subject, body, NotifyFormat.TEXT  # Apprise escapes it for HTML (and Slack)
    # A title of its own is shown as it is; it is Markdown only where it joins the body.
    if joins_title or service.title_maxlen <= 0:
        subject = markdown_literal(subject)
    return subject, markdown_literal(body), NotifyFormat.MARKDOWN


def _renders_markdown_in_text(service: NotifyBase) -> bool:
    protocols = {
        *_names(getattr(service, "protocol", None)),
        *_names(getattr(service, "secure_protocol", None)),
    }
    return not protocols.isdisjoint(_MARKDOWN_IN_TEXT)


def _names(value) -> tuple[str, ...]:
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def markdown_literal(text: str) -> str:
    """CommonMark that renders as `text`: every ASCII punctuation character outside a
    bare link backslash-escaped, and @ defused."""
    out, at = [], 0
    for link in _BARE_URL.finditer(text):
        out += [_escape(text[at : link.start()]), link.group()]
        at = link.end()
    out.append(_escape(text[at:]))
    return "".join(out)


def _escape(text: str) -> str:
    return _PUNCTUATION.sub(r"\\\1", text).replace("@", _MENTION)
