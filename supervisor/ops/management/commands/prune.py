from django.core.management.base import BaseCommand

from supervisor.core import clock
from supervisor.core.retention import prune, retention_days


class Command(BaseCommand):
    help = (
        "Delete what is past its retention (SUPERVISOR_RETAIN_*_DAYS) and print the rows "
        "deleted per kind; --dry-run counts them and deletes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would go; delete nothing"
        )

    def handle(self, dry_run, **options):
        counts = prune(clock.now(), dry_run=dry_run)
        days = retention_days()
        verb = "would prune" if dry_run else "pruned"
        for name, count in counts.items():
            self.stdout.write(f"{name}: {verb} {count}")
        kept = ", ".join(f"{name} {value or 'forever'}" for name, value in days.items())
        self.stdout.write(f"days kept: {kept}")
