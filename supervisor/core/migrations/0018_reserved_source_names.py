"""Sources made by hand under a name that reads as an internal source's (`supervisor@…`),
before such names were kept for Supervisor (issue 29): each is renamed `renamed-NAME`
and the rename is recorded, so that a namespace's internal source can take its own name
and deliveries made by hand are recorded in their own namespace. Its token, namespace,
scopes and connector are kept. A source named `demo` is left alone: `up` has made it the
demo's (see docs/decisions.md)."""

import unicodedata

from django.db import migrations

INTERNAL_PREFIX = "supervisor@"  # core.source_names, copied: migrations do not import the app
NAME_LIMIT = 200  # Source.name


def reads_as_internal(name: str) -> bool:
    return unicodedata.normalize("NFKC", name).casefold().startswith(INTERNAL_PREFIX)


def free_name(Source, previous: str) -> str:
    base = f"renamed-{previous}"[: NAME_LIMIT - 4]
    name, n = base, 1
    while Source.objects.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def rename_sources_under_kept_names(apps, schema_editor):
    Source = apps.get_model("core", "Source")
    Change = apps.get_model("core", "Change")
    made_by_hand = Source.objects.filter(internal=False).order_by("pk")
    for pk, previous in made_by_hand.values_list("pk", "name"):
        if not reads_as_internal(previous):
            continue
        source = Source.objects.get(pk=pk)
        source.name = free_name(Source, previous)
        source.save(update_fields=["name"])
        why = f"names starting with {INTERNAL_PREFIX!r} are Supervisor's own sources"
        Change.objects.create(
            namespace_id=source.namespace_id,
            kind="source.renamed",
            subject_type="source",
            subject_id=source.name,
            payload={"actor": "system", "previous": previous, "why": why},
        )
        # Said where `migrate` is run: a command naming the source must use its new name.
        print(f"\n  Renamed source {previous!r} to {source.name!r}: {why}.")


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0017_task_report_delivery_record"),
    ]

    operations = [
        migrations.RunPython(rename_sources_under_kept_names, migrations.RunPython.noop),
    ]
