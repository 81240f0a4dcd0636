"""Run the rules on a namespace and turn their findings into flag openings and resolutions."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from .flags import do_open_flag, do_resolve_flag, do_update_evidence
from .loader import load_namespace
from .models import Flag, Source
from .rules import run_rules
from .snapshot import DetectionSettings

RULE_SUBJECT_TYPES = ("task", "thread")


def detection_settings(namespace_id: int) -> DetectionSettings:
    overrides = Source.objects.filter(namespace_id=namespace_id).order_by("pk")
    return DetectionSettings.from_overrides(
        settings.SUPERVISOR_DETECTION, *(source.settings for source in overrides)
    )


def evaluate_namespace(namespace_id: int, now: datetime) -> None:
    """Make the open flags of a namespace exactly those its rules find now."""
    snap = load_namespace(namespace_id)
    wanted = {
        (f.subject_type, f.subject_id, f.kind): f
        for f in run_rules(snap, detection_settings(namespace_id), now)
    }
    open_flags = {
        (f.subject_type, f.subject_id, f.kind): f
        for f in Flag.objects.filter(
            namespace_id=namespace_id, state=Flag.OPEN, subject_type__in=RULE_SUBJECT_TYPES
        )
    }
    suppressed = {
        (f.subject_type, f.subject_id, f.kind): f
        for f in Flag.objects.filter(
            namespace_id=namespace_id, suppressed=True, subject_type__in=RULE_SUBJECT_TYPES
        )
    }
    for key, flag in open_flags.items():
        if key not in wanted:
            do_resolve_flag(flag, now)
        elif flag.evidence != wanted[key].evidence:
            do_update_evidence(flag, wanted[key].evidence)
    for key, finding in wanted.items():
        if key in open_flags:
            continue
        if key in suppressed:
            continue  # an operator resolved it while the condition held; it still holds
        do_open_flag(namespace_id, finding, now)
    # A condition that stopped holding may open a new flag when it holds again.
    lifted = [flag.pk for key, flag in suppressed.items() if key not in wanted]
    if lifted:
        Flag.objects.filter(pk__in=lifted).update(suppressed=False)
