"""`make run`, the README's first command, as a newcomer runs it: every process it
starts (web, worker, beat and the simulated fleet), the demo feeding the dashboard, a
second start on the same folder, and Ctrl-C leaving nothing behind."""

import stat
import sys
import time
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from supervisor.core.access.sources import do_create_source
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Flag, Source, Task
from supervisor.ops import startup
from tests.support.factories import make_tasks
from tests.support.make_run import PASSWORD_LINE, make_run
from tests.support.workers import wait_for

pytestmark = pytest.mark.e2e  # runs `make run` itself

SWEEP_EVERY = settings.SUPERVISOR_SWEEP_INTERVAL  # seconds; the run's own settings


def roles(processes: dict[int, str]) -> set[str]:
    found = set()
    for command in processes.values():
        if " supervisor.web_server " in f" {command} ":  # daphne, as up runs it
            found.add("web")
        elif " worker " in f" {command} ":
            found.add("worker")
        elif " beat " in f" {command} ":
            found.add("beat")
        elif " simulate " in f" {command} ":
            found.add("simulator")
        elif " up" in command and "manage.py" in command:
            found.add("up")
        elif command.startswith("make "):
            found.add("make")
    return found


def test_make_run_starts_everything_with_the_demo_and_ctrl_c_leaves_no_process(tmp_path):
    var_dir = tmp_path / "var"
    with make_run(var_dir, seed=11, keep=True) as run:
        run.wait_for_output("Supervisor is up")
        up = time.monotonic()
        # "Up" means the port answers: at once, not a second or two later.
        assert run.answers_now(), f"up, but {run.url} does not answer:\n{run.output()}"
        run.wait_until_serving()
        assert run.password, run.output()
        assert (var_dir / "first-login-password").read_text().strip() == run.password
        assert "A simulated fleet sends events to source 'demo'" in run.output()
        wait_for(
            lambda: roles(run.processes()) >= {"make", "up", "web", "worker", "beat", "simulator"},
            what="web, worker, beat and the simulator under make and up",
            timeout=60,
        )
        # Quiet: no line per job (beat sweeps every 5 s; two sweeps' time has passed),
        # no Celery banner, no access log line per request (the test's own requests).
        time.sleep(max(0.0, 2 * SWEEP_EVERY - (time.monotonic() - up)))
        quiet = run.output()
        assert "Sending due task" not in quiet  # beat's line for each job
        assert "supervisor.sweep[" not in quiet  # the worker's, received and done
        assert "Configuration ->" not in quiet  # the worker's and beat's banners
        assert '"GET /login/' not in quiet
        run.ctrl_c()  # make ends as a process killed by SIGINT would
        assert "Stopped." in run.output()
        assert run.processes() == {}, f"left behind: {run.processes()}"
        first = run.output()

    # A second run on the same folder, with the jobs' lines asked for: no new login, the
    # same demo source, a line per sweep, and again nothing left behind.
    job_log = {"SUPERVISOR_JOB_LOG": "1"}
    with make_run(var_dir, seed=12, again=True, extra_env=job_log) as again:
        again.wait_until_serving()
        again.wait_for_output("supervisor.sweep[", timeout=60)
        assert "Created the first login" not in again.output()
        assert again.password is None
        wait_for(
            lambda: "simulator" in roles(again.processes()),
            what="the simulated fleet of the second run",
            timeout=60,
        )
        again.ctrl_c()
        assert again.processes() == {}, f"left behind: {again.processes()}"
    assert "Created the first login" in first


def test_the_demo_stays_off_with_supervisor_demo_0(tmp_path):
    with make_run(tmp_path / "var", extra_env={"SUPERVISOR_DEMO": "0"}) as run:
        run.wait_until_serving()
        wait_for(
            lambda: roles(run.processes()) >= {"web", "worker", "beat"},
            what="web, worker and beat",
            timeout=60,
        )
        assert "simulator" not in roles(run.processes())
        assert "simulated fleet" not in run.output()
        run.ctrl_c()
        assert run.processes() == {}


# What `up` does before it starts anything, called directly (no processes started).


@pytest.mark.django_db
def test_the_first_password_is_also_written_to_a_file_under_var_that_the_message_names(
    tmp_path, settings
):
    settings.VAR_DIR = tmp_path
    message = startup.ensure_first_login().notice()
    password = PASSWORD_LINE.search(message).group(1)
    path = tmp_path / "first-login-password"
    assert str(path) in message
    assert path.read_text().strip() == password
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert get_user_model().objects.get(username=startup.FIRST_LOGIN).check_password(password)
    # Once only: a second start neither makes a login nor rewrites the file.
    assert startup.ensure_first_login() is None
    assert path.read_text().strip() == password


def demo_with_open_flags(count: int) -> Source:
    demo, _ = do_create_source("demo", "demo", "ingest,read,act")
    make_tasks(demo, count)
    now = datetime.now(UTC)
    for n in range(count):
        do_open_flag(demo.namespace_id, Finding("stale_result", "task", f"task:t{n}"), now)
    do_open_flag(demo.namespace_id, Finding("source_silent", "source", "demo"), now)
    return demo


@pytest.mark.django_db
def test_switching_the_demo_off_resolves_its_open_flags_once_and_says_so(monkeypatch):
    monkeypatch.delenv("SUPERVISOR_DEMO", raising=False)
    demo = demo_with_open_flags(3)
    do_create_source("my-t3", "my-t3", "ingest,read")  # an orchestrator: the demo stays off
    choice = startup.choose_demo()
    assert choice.runs is False
    said = choice.notice
    assert "The demo fleet is off" in said and "4 open flags" in said, said
    open_flags = Flag.objects.filter(namespace_id=demo.namespace_id, state=Flag.OPEN)
    assert not open_flags.exists()
    resolved = Flag.objects.filter(namespace_id=demo.namespace_id)
    assert {flag.resolve_reason for flag in resolved} == {startup.DEMO_OFF_REASON}
    assert Task.objects.filter(namespace_id=demo.namespace_id).count() == 3  # history kept
    demo.refresh_from_db()
    assert demo.revoked_at is not None
    # The next start: nothing left to archive, and not a word about it.
    assert startup.choose_demo() == startup.DemoChoice(False, None)


@pytest.mark.django_db
def test_an_archived_demo_switched_back_on_is_a_live_source_again(monkeypatch):
    demo = demo_with_open_flags(1)
    monkeypatch.setenv("SUPERVISOR_DEMO", "0")
    assert startup.choose_demo().runs is False
    monkeypatch.setenv("SUPERVISOR_DEMO", "1")
    assert startup.choose_demo().runs is True
    startup.bind_demo(sys.executable)
    demo.refresh_from_db()
    assert demo.revoked_at is None
