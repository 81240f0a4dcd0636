"""What every page's header needs beyond the user: the admin menu's counts.

Read lazily: a page that does not render the menu (an htmx partial, a redirect) runs no
query, and one that does runs one COUNT for each, on small partial indexes.
"""

from __future__ import annotations

from django.utils.functional import cached_property

from supervisor.core.models import DeadLetter, SweepFailure

ADMINISTER_PERMISSION = "core.administer"


class AdminCounts:
    """What waits for an admin: dead letters not yet replayed, and the subjects or steps
    a sweep could not evaluate (the Failures page)."""

    @cached_property
    def dead_letters(self) -> int:
        return DeadLetter.objects.filter(replayed_at__isnull=True).count()

    @cached_property
    def failures(self) -> int:
        return SweepFailure.objects.count()

    @property
    def total(self) -> int:
        return self.dead_letters + self.failures


def admin_counts(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.has_perm(ADMINISTER_PERMISSION):
        return {}
    return {"admin_counts": AdminCounts()}
