"""Live push latency: from the POST that opens a flag to its fragment on the open pages.

seed000's task "Port the retry loop" is finalized on a stale interim text by one event,
the `task.reported` with status "completed" (s000-0015). Each trial posts the rest of
seed000 first, under fresh ids, and waits until that has been evaluated and pushed; then
it posts the finalizing event alone and times, from just before that POST is sent, until
the `<div id="flag-opened">` of a flag it opens (premature_completion or
undelivered_result) on that task arrives on the subscribed sockets (`/ws/live/?view=list`,
logged in with a session cookie from the log-in form, resumed from the page's cursor).

- one socket: p50 and p99 over --trials trials;
- --sockets open sockets: the time until all of them have the fragment, p50 and p99 over
  --fanout-trials trials (and the median socket, for reference).

Each setup runs the app as `manage.py up` does, as separate processes: daphne, one
Celery worker (prefork, concurrency 2) and beat (default sweep interval), on a fresh store:

- embedded: SQLite and the filesystem broker under a temporary folder, the in-process
  channel layer;
- services: PostgreSQL (a database made for the run and dropped after it) and Redis (as
  the broker and the channel layer, on databases of their own, flushed before and after).

    python bench/push_latency.py --setup embedded --trials 20 --fanout-trials 3 --no-docs
    python bench/push_latency.py                        # the figures: both setups, 200/20

Results go to stdout, --json FILE (every trial) and, unless --no-docs, into
docs/benchmarks.md under "Live push" (between markers; the rest of the file is left
alone). --py-spy PATH records where the web server and the worker spend their time
during the services setup.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import http.cookiejar
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from contextlib import closing, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"

# The app, its drivers and `websockets` live in the project's environment: run there.
if VENV_PY.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])

from websockets.asyncio.client import connect  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- push_latency:begin -->", "<!-- push_latency:end -->"
SCENARIO = ROOT.parent / "shared" / "scenarios" / "seed000-stale-finalize.json"
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_DB = "supervisor_pushbench"
REDIS_BROKER, REDIS_LAYER = "redis://127.0.0.1:6379/12", "redis://127.0.0.1:6379/11"
GOAL_ONE_S, GOAL_ALL_S = 0.5, 0.5  # p99 goals with PostgreSQL + Redis (issue 21)
TITLE = "Port the retry loop"
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
OPENED_BY_FINALIZE = {"premature_completion", "undelivered_result"}
RENAMED = ("retry-port", "review-a", "review-b", "parent-release")
FLAG_DIV = re.compile(r'<div id="flag-opened"[^>]*>')
ATTR = re.compile(r'(data-[a-z]+)="([^"]*)"')
LAST_CHANGE = re.compile(r'data-last-change="(\d+)"')
PASSWORD = "push-bench-password"


# --- the scenario ----------------------------------------------------------------------


def load_events() -> tuple[list[dict], int]:
    events = json.loads(SCENARIO.read_text())["events"]
    finalize = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "task.reported"
        and e["data"]["task"] == RETRY_PORT
        and e["data"]["status"] == "completed"
    )
    return events, finalize


def trial_events(events: list[dict], finalize: int, tag: str) -> tuple[list[dict], dict]:
    """seed000 under fresh ids: (everything but the finalizing report, that report)."""
    text = json.dumps(events)
    for word in RENAMED:
        text = text.replace(word, f"{word}-{tag}")
    text = text.replace('"s000-', f'"s000-{tag}-')
    renamed = json.loads(text)
    return renamed[:finalize] + renamed[finalize + 1 :], renamed[finalize]


# --- processes -------------------------------------------------------------------------


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """daphne, a Celery worker and beat, as `manage.py up` starts them."""

    def __init__(self, env: dict, var: Path, port: int):
        self.env, self.var, self.port = env, var, port
        self.procs: dict[str, subprocess.Popen] = {}
        self.spies: list[subprocess.Popen] = []

    def commands(self) -> dict[str, list[str]]:
        py = str(VENV_PY)
        return {
            "web": [py, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
            + ["supervisor.asgi:application"],
            "worker": [py, "-m", "celery", "-A", "supervisor", "worker", "--loglevel", "INFO"]
            + ["--concurrency", "2", "--without-gossip", "--without-mingle"],
            "beat": [py, "-m", "celery", "-A", "supervisor", "beat", "--loglevel", "INFO"]
            + ["--schedule", str(self.var / "celerybeat-schedule")],
        }

    def start(self) -> None:
        for name, command in self.commands().items():
            with open(self.var / f"{name}.log", "wb") as log:
                self.procs[name] = subprocess.Popen(
                    command,
                    cwd=ROOT,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        deadline = time.monotonic() + 90
        while True:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited; see {self.var}/{name}.log")
            worker_ready = b" ready." in (self.var / "worker.log").read_bytes()
            try:
                with urllib.request.urlopen(self.url("/login/"), timeout=2) as response:
                    if response.status == 200 and worker_ready:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the app did not start; see the logs in {self.var}")
            time.sleep(0.2)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def spy(self, py_spy: str) -> None:
        for name in ("web", "worker"):
            self.spies.append(
                subprocess.Popen(
                    [py_spy, "record", "--pid", str(self.procs[name].pid), "--subprocesses"]
                    + ["--format", "raw", "--rate", "100", "--nonblocking"]
                    + ["-o", str(self.var / f"profile-{name}.txt")],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    def stop(self) -> None:
        for spy in self.spies:  # py-spy writes its file on SIGINT
            if spy.poll() is None:
                os.killpg(spy.pid, signal.SIGINT)
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in [*self.procs.values(), *self.spies]:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for proc in self.procs.values():  # the worker's pool children share its group
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [str(VENV_PY), "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def base_env(var: Path, port: int) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL"}
        and not k.startswith("SUPERVISOR_")
    }
    return env | {"SUPERVISOR_VAR_DIR": str(var), "PORT": str(port)}


def prepare_services() -> None:
    import psycopg
    import redis

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {PG_DB}")
    for url in (REDIS_BROKER, REDIS_LAYER):
        redis.Redis.from_url(url).flushdb()


def drop_services() -> None:
    import psycopg
    import redis

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
    for url in (REDIS_BROKER, REDIS_LAYER):
        redis.Redis.from_url(url).flushdb()


# --- HTTP ------------------------------------------------------------------------------


class Client:
    """The API with the source's token, and the pages with a logged-in session."""

    def __init__(self, app: App, token: str):
        self.app, self.token = app, token
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def post_events(self, events: list[dict]) -> dict:
        request = urllib.request.Request(
            self.app.url("/api/v1/events"),
            data=json.dumps({"events": events}).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        if answer.get("accepted") != len(events):
            raise RuntimeError(f"the API did not accept every event: {answer}")
        return answer

    def log_in(self, username: str) -> None:
        with self.opener.open(self.app.url("/login/"), timeout=10) as response:
            page = response.read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode(
            {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf, "next": "/"}
        ).encode()
        with self.opener.open(self.app.url("/login/"), data=form, timeout=10) as response:
            response.read()
        if "sessionid" not in self.cookies():
            raise RuntimeError("the log-in form did not give a session")

    def cookies(self) -> dict[str, str]:
        return {c.name: c.value for c in self.jar}

    def cookie_header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies().items())

    def last_change(self) -> int:
        with self.opener.open(self.app.url("/tasks/"), timeout=10) as response:
            return int(LAST_CHANGE.search(response.read().decode()).group(1))


# --- sockets ---------------------------------------------------------------------------


@dataclass
class Listener:
    """One subscribed page: every flag-opened fragment it got, with when it arrived."""

    ws: object
    # (arrival, kind, url, title, how many frames the socket had got by then)
    flags: list[tuple[float, str, str, str, int]] = field(default_factory=list)
    last_frame: float = 0.0
    frames: int = 0
    closed: str | None = None

    async def read(self) -> None:
        try:
            await self._read()
        finally:
            self.closed = f"{self.ws.close_code} {self.ws.close_reason or ''}".strip()

    async def _read(self) -> None:
        async for message in self.ws:
            now = time.perf_counter()
            self.frames += 1
            self.last_frame = now
            for div in FLAG_DIV.findall(message):
                attrs = {k: html.unescape(v) for k, v in ATTR.findall(div)}
                self.flags.append(
                    (
                        now,
                        attrs.get("data-kind", ""),
                        attrs.get("data-url", ""),
                        attrs.get("data-title", ""),
                        self.frames,
                    )
                )

    def first(self, since: int, kinds: set[str], url: str) -> tuple[float, int] | None:
        """(arrival, frame number) of the first such fragment in flags[since:]."""
        for t, kind, flag_url, _, frame in self.flags[since:]:
            if kind in kinds and flag_url == url:
                return t, frame
        return None


async def open_listeners(client: Client, count: int) -> tuple[list[Listener], list]:
    cursor = await asyncio.to_thread(client.last_change)
    uri = f"ws://127.0.0.1:{client.app.port}/ws/live/?view=list"
    origin = client.app.url("")

    async def one() -> Listener:
        ws = await connect(
            uri,
            origin=origin,
            additional_headers={"Cookie": client.cookie_header()},
            max_size=None,
            open_timeout=60,
        )
        await ws.send(json.dumps({"resume": cursor}))
        return Listener(ws)

    listeners: list[Listener] = []
    for start in range(0, count, 25):  # connect in waves, as pages would load
        listeners += await asyncio.gather(*(one() for _ in range(min(25, count - start))))
    readers = [asyncio.create_task(listener.read()) for listener in listeners]
    await asyncio.sleep(0.5)
    return listeners, readers


async def close_listeners(listeners: list[Listener], readers: list) -> None:
    for listener in listeners:
        await listener.ws.close()
    for reader in readers:
        reader.cancel()
        with suppress(asyncio.CancelledError, Exception):
            await reader


async def wait_until(condition, timeout: float, what: str, listeners=()) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            frames = sorted(listener.frames for listener in listeners)
            closed = [listener.closed for listener in listeners if listener.closed]
            seen = frames and (
                f"; frames per socket: min {frames[0]}, max {frames[-1]}; "
                f"{len(closed)} closed by the server {sorted(set(closed))[:3]}"
            )
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}{seen or ''}")
        await asyncio.sleep(0.002)


async def quiet(listeners: list[Listener], seconds: float) -> None:
    """Until no socket got a frame for `seconds`."""
    while True:
        idle = time.perf_counter() - max(listener.last_frame for listener in listeners)
        if idle >= seconds:
            return
        await asyncio.sleep(seconds - idle + 0.001)


@dataclass
class Trial:
    latencies: list[float]  # per socket, seconds from the POST to the fragment
    post_s: float  # the POST's own round trip
    frames: int  # frames the first socket got from the POST to the fragment, that one included
    client_cpu: float  # CPU seconds this benchmark's process used meanwhile (parsing frames)


async def trial(client: Client, listeners: list[Listener], events, finalize, tag) -> Trial:
    prefix, final = trial_events(events, finalize, tag)
    await quiet(listeners, 0.3)  # the previous trial's last frames are in
    marks = [len(listener.flags) for listener in listeners]
    await asyncio.to_thread(client.post_events, prefix)

    # The prefix opens flags of its own on the new task (stale_result at least): wait until
    # every socket has them and all is quiet, so the timed POST starts from rest.
    def task_url() -> str | None:
        for _, kind, url, title, _ in listeners[0].flags[marks[0] :]:
            if title == TITLE and kind == "stale_result":
                return url
        return None

    await wait_until(lambda: task_url() is not None, 60, "the prefix's flags", listeners)
    url = task_url()
    await wait_until(
        lambda: all(
            listener.first(mark, {"stale_result"}, url) is not None
            for listener, mark in zip(listeners, marks, strict=True)
        ),
        60,
        "the prefix's flags on every socket",
        listeners,
    )
    await quiet(listeners, 0.3)

    marks = [len(listener.flags) for listener in listeners]
    frames_before = listeners[0].frames
    cpu_before = time.process_time()
    started = time.perf_counter()
    await asyncio.to_thread(client.post_events, [final])
    post_s = time.perf_counter() - started
    await wait_until(
        lambda: all(
            listener.first(mark, OPENED_BY_FINALIZE, url) is not None
            for listener, mark in zip(listeners, marks, strict=True)
        ),
        30,
        "the finalization's flag on every socket",
        listeners,
    )
    arrivals = [
        listener.first(mark, OPENED_BY_FINALIZE, url)
        for listener, mark in zip(listeners, marks, strict=True)
    ]
    return Trial(
        [t - started for t, _ in arrivals],
        post_s,
        arrivals[0][1] - frames_before,
        time.process_time() - cpu_before,
    )


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


@dataclass
class Result:
    setup: str
    one: list[Trial] = field(default_factory=list)
    fanout: list[Trial] = field(default_factory=list)
    sockets: int = 0
    failures: list[str] = field(default_factory=list)


async def measure(client: Client, result: Result, args, events, finalize, run_tag) -> None:
    listeners, readers = await open_listeners(client, 1)
    try:
        for n in range(args.warmup + args.trials):
            outcome = await trial(client, listeners, events, finalize, f"{run_tag}o{n}")
            if n >= args.warmup:
                result.one.append(outcome)
    finally:
        await close_listeners(listeners, readers)
    if not args.fanout_trials:
        return
    listeners, readers = await open_listeners(client, args.sockets)
    result.sockets = len(listeners)
    try:
        for n in range(args.warmup + args.fanout_trials):
            outcome = await trial(client, listeners, events, finalize, f"{run_tag}f{n}")
            if n >= args.warmup:
                result.fanout.append(outcome)
    finally:
        await close_listeners(listeners, readers)


def run_setup(name: str, args, events, finalize) -> Result:
    result = Result(name)
    var = Path(tempfile.mkdtemp(prefix=f"pushbench-{name}-"))
    port = free_port()
    env = base_env(var, port)
    if name == "services":
        prepare_services()
        env |= {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{PG_DB}",
            "CELERY_BROKER_URL": REDIS_BROKER,
            "CHANNEL_LAYER_URL": REDIS_LAYER,
        }
    app = App(env, var, port)
    try:
        manage(env, "migrate", "--verbosity", "0")
        token = manage(env, "create_source", "bench", "--scopes", "ingest,read").strip()
        manage(
            env,
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            f"get_user_model().objects.create_user('bench', password={PASSWORD!r})",
        )
        app.start()
        if args.py_spy and name == "services":
            app.spy(args.py_spy)
        client = Client(app, token)
        client.log_in("bench")
        run_tag = datetime.now(UTC).strftime("%H%M%S")
        asyncio.run(measure(client, result, args, events, finalize, run_tag))
    except Exception as exc:  # report it with the rest; the services are stopped below
        result.failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        app.stop()
        if name == "services":
            drop_services()
    print(f"  logs and profiles: {var}")
    return result


# --- report ----------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def machine() -> str:
    model = "?"
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}; load average at the start {load}"
    )


def table(results: list[Result]) -> str:
    rows = [
        "| setup | measure | trials | p50 ms | p99 ms | max ms | goal (p99) | p99 / goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        label = "PostgreSQL + Redis" if r.setup == "services" else "embedded (SQLite + fs broker)"
        goals = r.setup == "services"
        measures = [
            ("one socket: POST → fragment", [t.latencies[0] for t in r.one], GOAL_ONE_S),
            (
                f"{r.sockets} sockets: POST → all have it",
                [max(t.latencies) for t in r.fanout],
                GOAL_ALL_S,
            ),
            (
                f"{r.sockets} sockets: POST → median socket",
                [statistics.median(t.latencies) for t in r.fanout],
                None,
            ),
            ("the finalizing POST's own round trip", [t.post_s for t in r.one], None),
        ]
        for what, values, goal in measures:
            if not values:
                continue
            p99 = percentile(values, 99)
            goal_text = f"< {ms(goal)} ms" if goal and goals else "—"
            ratio = f"{p99 / goal:.2f}" if goal and goals else "—"
            rows.append(
                f"| {label} | {what} | {len(values)} | {ms(percentile(values, 50))} | "
                f"{ms(p99)} | {ms(max(values))} | {goal_text} | {ratio} |"
            )
    notes = []
    for r in results:
        for what, trials in (("one socket", r.one), (f"{r.sockets} sockets", r.fanout)):
            if trials:
                frames = statistics.median(t.frames for t in trials)
                notes.append(f"{r.setup}, {what}: {frames:g}")
    if notes:
        rows.append(
            "\nFrames a socket got from the finalizing POST to the flag's fragment, that one "
            "included (median): " + "; ".join(notes) + "."
        )
    cpu = [
        f"{r.setup}: {ms(statistics.median(t.client_cpu for t in r.fanout))} ms"
        for r in results
        if r.fanout
    ]
    if cpu:
        rows.append(
            f"CPU time of the benchmark's own client (the {results[0].sockets or ''} sockets) "
            "from the POST until all had the fragment, median per trial: " + "; ".join(cpu) + "."
        )
    return "\n".join(rows)


def trials_json(results: list[Result], started: datetime) -> dict:
    return {
        "started": started.isoformat(),
        "load_average": os.getloadavg(),
        "setups": {
            r.setup: {
                "sockets": r.sockets,
                "failures": r.failures,
                **{
                    what: [
                        {"latencies_s": t.latencies, "post_s": t.post_s, "frames": t.frames}
                        | {"client_cpu_s": t.client_cpu}
                        for t in trials
                    ]
                    for what, trials in (("one", r.one), ("fanout", r.fanout))
                },
            }
            for r in results
        },
    }


def write_docs(text: str) -> None:
    block = f"{BEGIN}\n{text}\n{END}"
    if DOCS.exists():
        current = DOCS.read_text()
        if BEGIN in current and END in current:
            head, rest = current.split(BEGIN, 1)
            DOCS.write_text(head + block + rest.split(END, 1)[1])
            return
        DOCS.write_text(current.rstrip() + "\n\n## Live push (bench/push_latency.py)\n\n" + block)
        return
    DOCS.write_text(
        "# Benchmarks\n\n## Live push (bench/push_latency.py)\n\n" + block + "\n",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setup", choices=["embedded", "services", "both"], default="both")
    parser.add_argument("--trials", type=int, default=200, help="one-socket trials")
    parser.add_argument("--fanout-trials", type=int, default=20, help="trials with --sockets")
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=3, help="trials run first and not counted")
    parser.add_argument("--py-spy", help="py-spy binary: profile web and worker (services)")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="also write every trial's figures here")
    parser.add_argument("--note", default="", help="a sentence for the docs (e.g. the findings)")
    args = parser.parse_args()

    events, finalize = load_events()
    setups = ["embedded", "services"] if args.setup == "both" else [args.setup]
    started = datetime.now(UTC)
    machine_text = machine()
    results = []
    for name in setups:
        print(f"== {name}", flush=True)
        result = run_setup(name, args, events, finalize)
        results.append(result)
        for failure in result.failures:
            print(f"  FAILED: {failure}")
    text = table(results)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(trials_json(results, started), indent=1))
    command = "python bench/push_latency.py " + " ".join(sys.argv[1:])
    if not args.no_docs:
        failures = [f"- {r.setup}: {f}" for r in results for f in r.failures]
        write_docs(
            "\n\n".join(
                part
                for part in [
                    f"Measured {started:%Y-%m-%d %H:%M} UTC on {machine_text}. The machine has "
                    "2 cores shared with other work, and the benchmark's own client (up to "
                    f"{args.sockets} sockets in one asyncio process) runs on them too: the figures "
                    "are noisy. Percentiles are nearest-rank: the p99 of 20 trials is their "
                    "worst, that of 200 their third-worst.",
                    f"Command: `{command.strip()}` ({args.warmup} warm-up trials not counted).",
                    text,
                    "\n".join(failures),
                    args.note,
                ]
                if part
            )
        )
        print(f"wrote {DOCS.relative_to(ROOT)}")
    return 1 if any(r.failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
