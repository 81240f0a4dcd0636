"""Judge `source_silent` on every source and write its flags."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Q

from .evaluate import reconcile
from .models import Source, Task
from .rules import source_silent
from .snapshot import TERMINAL_STATUSES, DetectionSettings


def evaluate_sources(now: datetime) -> None:
    unfinished = dict(
        Task.objects.filter(known=True)
        .filter(Q(status__isnull=True) | ~Q(status__in=TERMINAL_STATUSES))
        .values_list("namespace_id")
        .annotate(n=Count("pk"))
    )
    sources = list(Source.objects.filter(revoked_at__isnull=True, internal=False))
    views = [
        source_silent.SourceView(
            name=source.name,
            last_event_at=source.last_event_at,
            unfinished_tasks=unfinished.get(source.namespace_id, 0),
            settings=DetectionSettings.from_overrides(
                settings.SUPERVISOR_DETECTION, source.settings
            ),
        )
        for source in sources
    ]
    by_namespace = defaultdict(set)
    for source in sources:
        by_namespace[source.namespace_id].add(("source", source.name))
    found = source_silent.findings(views, now)
    for namespace_id, subjects in by_namespace.items():
        wanted = {
            (f.subject_type, f.subject_id, f.kind): f
            for f in found
            if (f.subject_type, f.subject_id) in subjects
        }
        reconcile(namespace_id, subjects, wanted, now, kinds=[source_silent.KIND])
