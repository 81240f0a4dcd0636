"""`make run`: migrate, make the first login (admin) if there is none, then run the web
server, a Celery worker, beat and, when no orchestrator is configured, the simulated
fleet, in the foreground; Ctrl-C stops them all (supervisor/ops/startup.py, processes.py)."""

import os
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from supervisor.ops import processes, startup


class Command(BaseCommand):
    help = "Run Supervisor: web server, Celery worker and beat, on the configured settings."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))

    def handle(self, port, host, **options):
        try:
            startup.demo_setting()  # a wrong value stops us before anything starts
            call_command("migrate", verbosity=0, interactive=False)
            first = startup.ensure_first_login()
            if first is not None:
                self.stdout.write(first.notice())
            python = sys.executable
            # One line per request, or per job (a sweep every 5 s), drowns the rest: the
            # password and the address scroll away. Off unless asked for.
            access_log = os.environ.get("SUPERVISOR_ACCESS_LOG", "").strip() == "1"
            job_log = os.environ.get("SUPERVISOR_JOB_LOG", "").strip() == "1"
            commands = processes.service_commands(python, host, port, access_log, job_log)
            envs = {}
            demo = startup.choose_demo()
            if demo.notice:
                self.stdout.write(demo.notice)
            if demo.runs:
                simulator = startup.bind_demo(python)
                commands[processes.SIMULATOR] = simulator.command
                envs[processes.SIMULATOR] = simulator.env
                self.stdout.write(simulator.notice)
        except startup.StartupError as exc:
            raise CommandError(str(exc)) from None
        # The worker's alerts link to this server (settings' SUPERVISOR_BASE_URL default).
        os.environ["HOST"], os.environ["PORT"] = host, str(port)
        processes.run(commands, envs, host, port, say=self.stdout.write, warn=self.stderr.write)
