"""The beat job that follows every T3 Code source: one pass over each source whose
connector is `t3code` and whose settings name a `db_path`.

Each batch locks the source's FollowState row (`skip_locked`), so two workers never read
the same rows: a worker that finds a source taken moves on to the next. Followers are
kept per worker process, so the state file stays open and the memory decoded between
beats.
"""

from __future__ import annotations

import logging

from celery import shared_task

from supervisor.connectors.t3code.follower import Follower
from supervisor.connectors.t3code.locate import state_database
from supervisor.connectors.t3code.schema import StateDBError
from supervisor.core.models import Source

log = logging.getLogger(__name__)

# A pass gives each source this long before moving on; the next beat carries on.
BUDGET_PER_SOURCE = 20.0

_followers: dict[int, Follower] = {}


def follower_for(source: Source) -> Follower | None:
    path = (source.connector_settings or {}).get("db_path")
    if not path:
        return None
    path = state_database(path)
    env = (source.connector_settings or {}).get("env")
    follower = _followers.get(source.pk)
    if follower is None or follower.path != str(path) or follower.env != env:
        if follower is not None:
            follower.close()
        follower = _followers[source.pk] = Follower(source, str(path), env=env)
    follower.source = source
    return follower


def t3_sources():
    return Source.objects.filter(connector="t3code", revoked_at__isnull=True)


def has_t3_sources() -> bool:
    """Whether the follow job has anything to read (beat sends it only then)."""
    return any(
        (settings or {}).get("db_path")
        for settings in t3_sources().values_list("connector_settings", flat=True)
    )


@shared_task(name="supervisor.follow_t3", soft_time_limit=240, time_limit=300)
def follow_t3_sources() -> dict[str, int]:
    """Read what is new in each T3 state database; {source name: rows read}."""
    read: dict[str, int] = {}
    for source in t3_sources().order_by("pk"):
        follower = follower_for(source)
        if follower is None:
            continue
        try:
            progress = follower.follow(time_budget=BUDGET_PER_SOURCE)
        except StateDBError as exc:
            follower.record_error(str(exc))
            log.warning("source %s: %s", source.name, exc)
            continue
        except Exception as exc:  # one source's fault must not stop the others' follow
            log.exception("source %s: following its T3 state database failed", source.name)
            follower.record_error(f"following failed: {type(exc).__name__}: {exc}")
            _followers.pop(source.pk, None)  # the next beat starts from a fresh follower
            follower.close()
            continue
        read[source.name] = progress.rows
    return read
