"""A password for `manage.py create_user`, read from a file (its first line) and held
to the same validators as a password set on the site."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError


class PasswordFileError(ValueError):
    """The file cannot be read, holds no password, or the password is refused."""


def password_from_file(path: Path) -> str:
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise PasswordFileError(f"cannot read {path}: {exc}") from None
    password = lines[0] if lines else ""
    if not password:
        raise PasswordFileError(f"{path} holds no password on its first line")
    try:
        validate_password(password)
    except ValidationError as exc:
        raise PasswordFileError(" ".join(exc.messages)) from None
    return password
