"""`make run`: migrate, make the first login (admin) if there is none, then run the web server,
a Celery worker, beat and, when no orchestrator is configured, the simulated fleet, in
the foreground; Ctrl-C stops them all."""

import contextlib
import http.client
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from supervisor.connectors.simulator.fleet import DEMO_DETECTION

DEMO_SOURCE = "demo"
# About 100 s in, the demo's follower stops sending for 75 s: `source_silent` (45 s in
# the demo) opens and resolves within the first five minutes.
DEMO_OUTAGE = "100:75"
# Why the demo's open flags were resolved when it was switched off (its tasks stay).
DEMO_OFF_REASON = "the demo fleet was switched off; its tasks are kept as history"
# The first login's password, readable by its owner alone, for when the message scrolled away.
FIRST_PASSWORD_FILE = "first-login-password"
FIRST_LOGIN = "admin"  # the role it has: "operator" names only a role


def web_command(python: str, host: str, port: int, access_log: bool = True) -> list[str]:
    """Daphne with its access log redacted (supervisor/web_server.py), or without one."""
    return [
        *(python, "-m", "supervisor.web_server"),
        *("-b", host, "-p", str(port)),
        *(() if access_log else ("--no-access-log",)),
        "supervisor.asgi:application",
    ]


def answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether an HTTP server answers on the port: any answer, even a redirect or a 400
    (a Host outside ALLOWED_HOSTS), means the server is taking requests."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    connection = http.client.HTTPConnection(host.strip("[]"), port, timeout=timeout)
    try:
        connection.request("GET", "/login/")
        connection.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


class Command(BaseCommand):
    help = "Run Supervisor: web server, Celery worker and beat, on the configured settings."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))

    def handle(self, port, host, **options):
        self._demo_setting()  # a wrong value stops us before anything starts
        self.child_env: dict[str, dict[str, str]] = {}
        call_command("migrate", verbosity=0, interactive=False)
        self._ensure_first_login()
        python = sys.executable
        # One line per request drowns the rest: off unless asked for.
        access_log = os.environ.get("SUPERVISOR_ACCESS_LOG", "").strip() == "1"
        commands = {
            "web": web_command(python, host, port, access_log=access_log),
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
        if self._start_demo():
            commands["simulator"] = self._demo_command(python)
        children = {}
        stopping = False
        up = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        for name, command in commands.items():
            # Each child in its own process group, so that we alone decide when it stops.
            env = {**os.environ, **self.child_env.get(name, {})}
            children[name] = subprocess.Popen(command, env=env, start_new_session=True)
        try:
            while not stopping:
                # "Up" once the port answers, not when the processes have merely started.
                if not up and children["web"].poll() is None and answers(host, port):
                    up = True
                    self.stdout.write(f"Supervisor is up: http://{host}:{port}/  (Ctrl-C stops it)")
                for name, child in list(children.items()):
                    if child.poll() is None:
                        continue
                    if name == "simulator":
                        # The dashboard is still worth having without its demo.
                        self.stderr.write(
                            f"the simulated fleet exited with {child.returncode}; "
                            "the dashboard stays up"
                        )
                        del children[name]
                        continue
                    self.stderr.write(f"{name} exited with {child.returncode}; stopping")
                    stopping = True
                time.sleep(0.2)
        finally:
            self._stop(children)

    def _stop(self, children):
        # The simulator first: it reports its unfinished work interrupted, and the
        # worker, still up, judges those events before it stops.
        first = {k: v for k, v in children.items() if k == "simulator"}
        rest = {k: v for k, v in children.items() if k != "simulator"}
        for group in (first, rest):
            self._terminate(group.values())
        self.stdout.write("Stopped.")

    def _terminate(self, children, grace: float = 10) -> None:
        for child in children:
            if child.poll() is None:
                # The leader alone: Celery stops its own pool; the group is killed only
                # if something is still there after the grace period.
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # leftovers of the group, if any

    def _demo_setting(self) -> bool | None:
        """SUPERVISOR_DEMO: 0 off, 1 on, unset: on when no orchestrator is configured."""
        value = os.environ.get("SUPERVISOR_DEMO", "").strip()
        if value not in ("", "0", "1"):
            raise CommandError(f"SUPERVISOR_DEMO must be 0 or 1 (got {value!r})")
        return None if value == "" else value == "1"

    def _orchestrators(self) -> list[str]:
        """The sources other than the demo's (and Supervisor's internal ones)."""
        from supervisor.core.models import Source

        others = Source.objects.filter(internal=False).exclude(name=DEMO_SOURCE)
        return list(others.order_by("name").values_list("name", flat=True))

    def _start_demo(self) -> bool:
        """Whether the demo runs this time; when it does not, a demo left from earlier
        starts is archived (once), so that its flags do not stay open for good."""
        demo = self._demo_setting()
        if demo is True:
            return True
        orchestrators = [] if demo is False else self._orchestrators()
        if demo is None and not orchestrators:
            return True
        if demo is False:
            why = "SUPERVISOR_DEMO=0"
        else:
            names = ", ".join(map(repr, orchestrators[:3])) + (", ..." if orchestrators[3:] else "")
            why = f"a source other than {DEMO_SOURCE!r} exists: {names}"
        self._archive_demo(why)
        return False

    def _archive_demo(self, why: str) -> None:
        """Revoke the demo source and resolve its namespace's open flags with a reason
        (docs/decisions.md, issue 19 point 8). Once: an archived demo is revoked already."""
        from supervisor.core import clock
        from supervisor.core.flags import do_resolve_flag_by_hand
        from supervisor.core.models import Flag, Source, Task, Thread
        from supervisor.core.sources import do_revoke_source

        source = Source.objects.filter(name=DEMO_SOURCE, revoked_at__isnull=True).first()
        if source is None:
            return
        now = clock.now()
        with transaction.atomic():
            if not do_revoke_source(source):
                return  # archived by another start meanwhile
            namespace = source.namespace_id
            flags = Flag.objects.filter(namespace_id=namespace, state=Flag.OPEN)
            resolved = 0
            for flag in flags.order_by("pk"):
                flag = do_resolve_flag_by_hand(flag, now, reason=DEMO_OFF_REASON, actor="system")
                resolved += flag.resolve_reason == DEMO_OFF_REASON
            # Nothing sends for it any more: the clock stops judging its tasks and threads.
            for model in (Task, Thread):
                model.objects.filter(namespace_id=namespace).update(next_check_at=None)
            tasks = Task.objects.filter(namespace_id=namespace, known=True).count()
        self.stdout.write(
            f"The demo fleet is off ({why}). Archived its source {DEMO_SOURCE!r}: "
            f"{resolved} open flags resolved as {DEMO_OFF_REASON!r}; its {tasks} tasks stay "
            "in the lists as history; SUPERVISOR_DEMO=1 brings the demo back."
        )

    def _demo_command(self, python: str) -> list[str]:
        """The simulator's command line, after binding the demo source to it: its
        webhook connector points at the loopback port the simulator answers actions on."""
        from supervisor.core.models import Source
        from supervisor.core.sources import check_connector, do_create_source, do_rotate_token

        source = Source.objects.filter(name=DEMO_SOURCE).first()
        if source is None:
            source, _ = do_create_source(DEMO_SOURCE, DEMO_SOURCE, "ingest,read,act")
        elif source.revoked_at is not None:
            # Archived when the demo was switched off: live again (its token is nobody's).
            do_rotate_token(source)
            source.refresh_from_db()
        secret = source.connector_settings.get("secret") or secrets.token_urlsafe(24)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        source.settings = dict(DEMO_DETECTION)
        source.connector = "webhook"
        source.connector_settings = check_connector(
            "webhook", {"url": f"http://127.0.0.1:{port}/", "secret": secret, "timeout": 10}
        )
        source.save(update_fields=["settings", "connector", "connector_settings"])
        command = [
            *(python, str(settings.BASE_DIR / "manage.py"), "simulate", "--demo"),
            *("--source", DEMO_SOURCE),
            *("--listen", f"127.0.0.1:{port}"),
            *("--outage", DEMO_OUTAGE, "--interrupt-on-stop", "--verbosity", "0"),
        ]
        seed = os.environ.get("SUPERVISOR_DEMO_SEED", "").strip()
        if seed:
            if not seed.isdigit():
                raise CommandError(f"SUPERVISOR_DEMO_SEED must be a whole number (got {seed!r})")
            command += ["--seed", seed]
        # In the environment, not on the command line where `ps` would show it.
        self.child_env["simulator"] = {"SUPERVISOR_SIMULATOR_SECRET": secret}
        self.stdout.write(
            f"A simulated fleet sends events to source {DEMO_SOURCE!r} and answers its "
            "actions (SUPERVISOR_DEMO=0 turns it off)."
        )
        return command

    def _ensure_first_login(self):
        User = get_user_model()
        if User.objects.exists():
            return
        from supervisor.core.roles import ADMIN, do_create_user

        password = secrets.token_urlsafe(12)
        # The admin role, not a superuser: what it may do is what the role says.
        do_create_user(FIRST_LOGIN, ADMIN, password)
        # Also in a file, since the line scrolls away under the processes' logs.
        path = Path(settings.VAR_DIR) / FIRST_PASSWORD_FILE
        path.unlink(missing_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(password + "\n")
        self.stdout.write(
            f"Created the first login: user {FIRST_LOGIN!r} (admin role), password {password!r} "
            f"(also in {path}, readable by you alone)"
        )
