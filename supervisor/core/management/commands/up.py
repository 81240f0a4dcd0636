"""`make run`: migrate, make an operator login if there is none, then run the web server,
a Celery worker and beat in the foreground; Ctrl-C stops them all."""

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run Supervisor: web server, Celery worker and beat, on the configured settings."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))

    def handle(self, port, host, **options):
        call_command("migrate", verbosity=0, interactive=False)
        self._ensure_operator()
        python = sys.executable
        commands = {
            "web": [
                python,
                "-m",
                "daphne",
                "-b",
                host,
                "-p",
                str(port),
                "supervisor.asgi:application",
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "supervisor",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--without-gossip",
                "--without-mingle",
            ],
            "beat": [
                python,
                "-m",
                "celery",
                "-A",
                "supervisor",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                settings.CELERY_BEAT_SCHEDULE_FILENAME,
            ],
        }
        children = {}
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        for name, command in commands.items():
            # Each child in its own process group, so that we alone decide when it stops.
            children[name] = subprocess.Popen(command, start_new_session=True)
        self.stdout.write(f"Supervisor is up: http://{host}:{port}/  (Ctrl-C stops it)")
        try:
            while not stopping:
                for name, child in children.items():
                    if child.poll() is not None:
                        self.stderr.write(f"{name} exited with {child.returncode}; stopping")
                        stopping = True
                time.sleep(0.2)
        finally:
            self._stop(children)

    def _stop(self, children):
        for child in children.values():
            if child.poll() is None:
                # The leader alone: Celery stops its own pool; the group is killed only
                # if something is still there after the grace period.
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for child in children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # leftovers of the group, if any
        self.stdout.write("Stopped.")

    def _ensure_operator(self):
        User = get_user_model()
        if User.objects.exists():
            return
        from supervisor.core.roles import ADMIN, do_create_user

        password = secrets.token_urlsafe(12)
        # The admin role, not a superuser: what it may do is what the role says.
        do_create_user("operator", ADMIN, password)
        self.stdout.write(
            f"Created the first login (shown this once): user 'operator' (admin role), "
            f"password {password!r}"
        )
