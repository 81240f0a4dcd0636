"""Channels group names, in one place."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .rendering import Page

# Each process's relay renders for its own sockets: their page groups are its own.
PROCESS = uuid.uuid4().hex[:12]


def page(page: Page) -> str:
    """This process's sockets that show `page`: the relay sends them its frame."""
    return f"live.{PROCESS}.{page.view}.{page.subject}.{int(page.can_act)}"


def user(user_pk: int) -> str:
    """Every socket of a user: told to re-read its session when that may have changed."""
    return f"live.user.{user_pk}"
