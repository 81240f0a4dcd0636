"""What `manage.py follow_t3` follows: a source's T3 Code state database, found from the
command's options or the source's connector settings."""

from __future__ import annotations

from supervisor.connectors.t3code.follower import Follower
from supervisor.connectors.t3code.locate import state_database
from supervisor.core.models import Source


class FollowError(ValueError):
    """The source or its database is not known: nothing is followed."""


def follower_for(
    source_name: str,
    db: str | None = None,
    env: str | None = None,
    batch_size: int = 5000,
    from_start: bool = False,
) -> tuple[Follower, str]:
    """A follower of the source's state database (`db`, else its `db_path` setting),
    with the path it reads. It imports the projections on its first run, or, with
    `from_start`, reads the event log from its first row."""
    found = Source.objects.filter(name=source_name).first()
    if found is None:
        raise FollowError(f"there is no source {source_name!r}: create it first (create_source)")
    settings = found.connector_settings or {}
    path = db or settings.get("db_path")
    if not path:
        raise FollowError(f"give --db: source {source_name!r} has no db_path in its settings")
    follower = Follower(
        found,
        state_database(path),
        env=env or settings.get("env"),
        batch_size=batch_size,
        start="log" if from_start else "import",
    )
    return follower, path
