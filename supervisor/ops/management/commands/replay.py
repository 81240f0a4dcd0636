import json
import sys

from django.core.management.base import BaseCommand, CommandError

from supervisor.core.detection.scenario import Scenario, ScenarioError
from supervisor.ops.replay import replay_all


class Command(BaseCommand):
    help = (
        "Replay scenario files (contract §7) into throw-away stores on a virtual clock; "
        "print one JSON line each. --check compares with their expectations."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+")
        parser.add_argument("--check", action="store_true", help="exit 1 on any difference")

    def handle(self, files, check, **options):
        try:
            scenarios = [Scenario.load(path) for path in files]
        except ScenarioError as exc:
            raise CommandError(str(exc)) from None
        failed = False
        for scenario, result, problems in replay_all(scenarios):
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            if check:
                for problem in problems:
                    failed = True
                    self.stderr.write(f"{scenario.name}: {problem}")
        if failed:
            sys.exit(1)
