"""The embedded setup's folder (SUPERVISOR_VAR_DIR, var/ by default): made when a
process starts, not when the settings are imported.

It holds the SQLite database, the static root and, unless SECRET_KEY is set, the secret
key made once per checkout: web, worker and beat read the same file, so a link signed by
a worker opens on the web. The filesystem broker makes its own folders (broker.py).
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

KEY_FILE = "secret_key"  # settings.py reads it from there


def prepare() -> None:
    """Make var/ and the static root, and the secret key when none is set."""
    var = settings.VAR_DIR
    var.mkdir(parents=True, exist_ok=True)
    settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
    try:
        settings.SECRET_KEY  # noqa: B018  (Django refuses to read an empty one)
    except ImproperlyConfigured:
        settings.SECRET_KEY = secret_key(var / KEY_FILE)


def secret_key(path) -> str:
    """The key in PATH, made there first if missing (readable by its owner only)."""
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()
