"""The processes `manage.py up` runs in the foreground: their command lines, the wait
for the web server to answer, watching them, and stopping them all, the simulated fleet
first."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping

from django.conf import settings

SIMULATOR = "simulator"  # the one child whose end does not stop the others


def web_command(python: str, host: str, port: int, access_log: bool = True) -> list[str]:
    """Daphne with its access log redacted (supervisor/web_server.py), or without one."""
    return [
        *(python, "-m", "supervisor.web_server"),
        *("-b", host, "-p", str(port)),
        *(() if access_log else ("--no-access-log",)),
        "supervisor.asgi:application",
    ]


def service_commands(
    python: str, host: str, port: int, access_log: bool, job_log: bool = True
) -> dict[str, list[str]]:
    """The web server, a Celery worker and beat, by name. Without `job_log` the worker
    and beat say only warnings and errors: no banner, no lines per job."""
    celery = (python, "-m", "celery", *(() if job_log else ("--quiet",)), "-A", "supervisor")
    level = ("--loglevel", "INFO" if job_log else "WARNING")
    return {
        "web": web_command(python, host, port, access_log=access_log),
        "worker": [
            *celery,
            "worker",
            *level,
            *("--concurrency", "2", "--without-gossip", "--without-mingle"),
        ],
        "beat": [
            *celery,
            "beat",
            *level,
            *("--schedule", settings.CELERY_BEAT_SCHEDULE_FILENAME),
        ],
    }


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


def run(
    commands: Mapping[str, list[str]],
    envs: Mapping[str, Mapping[str, str]],
    host: str,
    port: int,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """Start every command, say when the web server answers, and stop them all on
    SIGINT or SIGTERM or when one of them ends (the simulated fleet's end stops nothing)."""
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
        env = {**os.environ, **envs.get(name, {})}
        children[name] = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        while not stopping:
            # "Up" once the port answers, not when the processes have merely started.
            if not up and children["web"].poll() is None and answers(host, port):
                up = True
                say(f"Supervisor is up: http://{host}:{port}/  (Ctrl-C stops it)")
            for name, child in list(children.items()):
                if child.poll() is None:
                    continue
                if name == SIMULATOR:
                    # The dashboard is still worth having without its demo.
                    warn(
                        f"the simulated fleet exited with {child.returncode}; "
                        "the dashboard stays up"
                    )
                    del children[name]
                    continue
                warn(f"{name} exited with {child.returncode}; stopping")
                stopping = True
            time.sleep(0.2)
    finally:
        stop_all(children)
        say("Stopped.")


def stop_all(children: Mapping[str, subprocess.Popen]) -> None:
    # The simulator first: it reports its unfinished work interrupted, and the
    # worker, still up, judges those events before it stops.
    first = {k: v for k, v in children.items() if k == SIMULATOR}
    rest = {k: v for k, v in children.items() if k != SIMULATOR}
    for group in (first, rest):
        terminate(group.values())


def terminate(children, grace: float = 10) -> None:
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
