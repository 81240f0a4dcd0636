from django.core.management.base import BaseCommand, CommandError

from supervisor.connectors.t3code.follower import Progress
from supervisor.connectors.t3code.schema import StateDBError
from supervisor.ops.follow import FollowError, follower_for


class Command(BaseCommand):
    help = (
        "Follow a T3 Code state database (statev2.sqlite) into a source: import the "
        "projections on the first run, then read the event log as it grows. The file is "
        "opened read-only."
    )

    def add_arguments(self, parser):
        parser.add_argument("--source", required=True, metavar="NAME", help="an existing source")
        parser.add_argument(
            "--db", metavar="PATH", help="the state database (default: the source's db_path)"
        )
        parser.add_argument("--once", action="store_true", help="catch up, then stop")
        parser.add_argument(
            "--interval", type=float, default=1.0, help="seconds between reads (default 1)"
        )
        parser.add_argument("--env", help="the environment (machine) T3 runs on")
        parser.add_argument("--batch", type=int, default=5000, help="rows per transaction")
        parser.add_argument(
            "--from-start",
            action="store_true",
            help="on the first run read the event log from its first row instead of "
            "importing the projections",
        )

    def handle(self, source, db, once, interval, env, batch, from_start, **options):
        try:
            follower, path = follower_for(source, db, env, batch, from_start)
        except FollowError as exc:
            raise CommandError(str(exc)) from None
        try:
            if once:
                self._print(follower.follow())
                return
            self.stdout.write(f"following {path} into {source!r} every {interval:g} s")
            follower.run(interval, on_progress=self._print_news)
        except StateDBError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            pass
        finally:
            follower.close()

    def _print(self, progress: Progress) -> None:
        self.stdout.write(progress.summary())

    def _print_news(self, progress: Progress) -> None:
        if progress.rows or progress.imported:
            self._print(progress)
