"""What `manage.py up` settles before it starts any process: the first login, whether
the demo fleet runs this time (archiving a demo left from earlier starts when it does
not), and the demo source bound to the fleet's webhook receiver."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from supervisor.core import clock
from supervisor.core.access.roles import ADMIN, do_create_user
from supervisor.core.access.sources import (
    check_connector,
    do_create_source,
    do_revoke_source,
    do_rotate_token,
)
from supervisor.core.contract.source_names import DEMO
from supervisor.core.flags.writers import do_resolve_flag_by_hand
from supervisor.core.models import Flag, Source, Task, Thread
from supervisor.demo.fleet import DEMO_DETECTION

DEMO_SOURCE = DEMO  # a name Supervisor keeps: no source made by hand takes it
# About 100 s in, the demo's follower stops sending for 75 s: `source_silent` (45 s in
# the demo) opens and resolves within the first five minutes.
DEMO_OUTAGE = "100:75"
# Why the demo's open flags were resolved when it was switched off (its tasks stay).
DEMO_OFF_REASON = "the demo fleet was switched off; its tasks are kept as history"
# The first login's password, readable by its owner alone, for when the message scrolled away.
FIRST_PASSWORD_FILE = "first-login-password"
FIRST_LOGIN = "admin"  # the role it has: "operator" names only a role


class StartupError(ValueError):
    """A setting `up` reads is wrong: nothing is started."""


@dataclass(frozen=True)
class FirstLogin:
    password: str
    path: Path  # where the password is also written

    def notice(self) -> str:
        return (
            f"Created the first login: user {FIRST_LOGIN!r} (admin role), password "
            f"{self.password!r} (also in {self.path}, readable by you alone)"
        )


def ensure_first_login() -> FirstLogin | None:
    """Make the first login, `admin` (admin role), when there is no login at all."""
    if get_user_model().objects.exists():
        return None
    password = secrets.token_urlsafe(12)
    # The admin role, not a superuser: what it may do is what the role says.
    do_create_user(FIRST_LOGIN, ADMIN, password)
    # Also in a file, since the line scrolls away under the processes' logs.
    path = Path(settings.VAR_DIR) / FIRST_PASSWORD_FILE
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(password + "\n")
    return FirstLogin(password, path)


def demo_setting() -> bool | None:
    """SUPERVISOR_DEMO: 0 off, 1 on, unset: on when no orchestrator is configured."""
    value = os.environ.get("SUPERVISOR_DEMO", "").strip()
    if value not in ("", "0", "1"):
        raise StartupError(f"SUPERVISOR_DEMO must be 0 or 1 (got {value!r})")
    return None if value == "" else value == "1"


def orchestrators() -> list[str]:
    """The sources other than the demo's (and Supervisor's internal ones)."""
    others = Source.objects.filter(internal=False).exclude(name=DEMO_SOURCE)
    return list(others.order_by("name").values_list("name", flat=True))


@dataclass(frozen=True)
class DemoChoice:
    runs: bool
    notice: str | None = None  # what archiving a demo left from earlier starts did


def choose_demo() -> DemoChoice:
    """Whether the demo runs this time; when it does not, a demo left from earlier
    starts is archived (once), so that its flags do not stay open for good."""
    demo = demo_setting()
    if demo is True:
        return DemoChoice(True)
    found = [] if demo is False else orchestrators()
    if demo is None and not found:
        return DemoChoice(True)
    if demo is False:
        why = "SUPERVISOR_DEMO=0"
    else:
        names = ", ".join(map(repr, found[:3])) + (", ..." if found[3:] else "")
        why = f"a source other than {DEMO_SOURCE!r} exists: {names}"
    return DemoChoice(False, archive_demo(why))


def archive_demo(why: str) -> str | None:
    """Revoke the demo source and resolve its namespace's open flags with a reason
    (docs/decisions.md, issue 19 point 8). Once: an archived demo is revoked already.
    Returns what was done, or None when there was nothing to archive."""
    source = Source.objects.filter(name=DEMO_SOURCE, revoked_at__isnull=True).first()
    if source is None:
        return None
    now = clock.now()
    with transaction.atomic():
        if not do_revoke_source(source):
            return None  # archived by another start meanwhile
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
    return (
        f"The demo fleet is off ({why}). Archived its source {DEMO_SOURCE!r}: "
        f"{resolved} open flags resolved as {DEMO_OFF_REASON!r}; its {tasks} tasks stay "
        "in the lists as history; SUPERVISOR_DEMO=1 brings the demo back."
    )


@dataclass(frozen=True)
class DemoProcess:
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the child's environment
    notice: str = (
        f"A simulated fleet sends events to source {DEMO_SOURCE!r} and answers its "
        "actions (SUPERVISOR_DEMO=0 turns it off)."
    )


def bind_demo(python: str) -> DemoProcess:
    """The simulator's command line, after binding the demo source to it: its webhook
    connector points at the loopback port the simulator answers actions on."""
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
            raise StartupError(f"SUPERVISOR_DEMO_SEED must be a whole number (got {seed!r})")
        command += ["--seed", seed]
    durations = os.environ.get("SUPERVISOR_DEMO_DURATIONS", "").strip()
    if durations:
        # A shorter demo for a walk-through (or a test of the pages): the work and the
        # waits scale; the gaps timed against detection settings do not.
        try:
            scale = float(durations)
        except ValueError:
            scale = 0.0
        if not 0 < scale <= 1:
            raise StartupError(
                f"SUPERVISOR_DEMO_DURATIONS must be a number above 0 and at most 1 "
                f"(got {durations!r})"
            )
        command += ["--durations", repr(scale)]
    # In the environment, not on the command line where `ps` would show it.
    return DemoProcess(command, {"SUPERVISOR_SIMULATOR_SECRET": secret})
