"""Beat's scheduler: Celery's own (the schedule kept in a file), except that an entry
with nothing to do is not sent at all, so neither beat nor a worker logs a line for it.

`make run` without a T3 source sent the T3 follow job every second for nothing: three
log lines a second, nearly half of a newcomer's log (issue 19, point 8). Whether there
is work is asked at each due time, so a source made while beat runs is followed within
one interval.
"""

from __future__ import annotations

import logging

from celery.beat import PersistentScheduler, ScheduleEntry
from django.db import DatabaseError, connection

log = logging.getLogger(__name__)


def t3_sources_exist() -> bool:
    # Imported here: beat imports this module before Django is set up.
    from supervisor.jobs.follow_t3 import has_t3_sources

    return has_t3_sources()


# Task name -> whether it has anything to do now.
ONLY_WHEN = {"supervisor.follow_t3": t3_sources_exist}


class Scheduler(PersistentScheduler):
    def wanted(self, entry: ScheduleEntry) -> bool:
        check = ONLY_WHEN.get(entry.task)
        if check is None:
            return True
        try:
            return check()
        except DatabaseError:
            # The worker will say what is wrong with the database; send as before.
            connection.close()
            return True

    def apply_entry(self, entry: ScheduleEntry, producer=None):
        if not self.wanted(entry):
            log.debug("Scheduler: %s has nothing to do; not sent", entry.name)
            return
        super().apply_entry(entry, producer=producer)
