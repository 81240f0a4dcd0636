"""A page left open on the production stack: reconnects, frames missed, memory growth.

`manage.py up` runs as `make run` does (web, worker, beat and the demo fleet), on
PostgreSQL (a database made for the run and dropped after it) and Redis (the broker and
the channel layer, on databases of their own, flushed before and after). Debian's
Chromium logs in and keeps the overview and the task list open for --minutes; nothing
is clicked, so each page's socket is idle between the fleet's changes.

- reconnects: sockets a page opened after its first (goal 0);
- frames missed: changes in the database's log, between the page's first cursor and
  the last change at the end, that no frame the page received covered (each frame
  names its first and last change: `data-from` and `data-change` of `#live-cursor`;
  goal 0);
- overlapping frames: frames that repeated a change the page already had;
- "Live updates are interrupted" banners seen by a sampling every 15 s;
- memory: resident size of the web server and the worker's processes, and the pages'
  JavaScript heap and DOM nodes (Chromium's Performance metrics), after a warm-up
  of --warmup minutes and at the end;
- the web server's log: tracebacks and sockets closed because the layer failed.

    python bench/live_soak.py --minutes 30      # the figures, into docs/benchmarks.md
    python bench/live_soak.py --minutes 3 --no-docs

Never part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.launch import (  # noqa: E402 - re-executes under .venv first
    ROOT,
    VENV_PY,
    free_port,
    git,
    require_services,
    write_block,
)

CURSOR = re.compile(r'id="live-cursor" data-change="(\d+)"(?: data-from="(\d+)")?')
PAGES = {"overview": "/", "list": "/tasks/"}
BANNER = "Live updates are interrupted"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Watched:
    """One open page: its sockets and the frames they brought."""

    name: str
    first_cursor: int = 0
    opens: list[float] = field(default_factory=list)
    closes: list[float] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    overlapping: int = 0
    banners: int = 0
    last: int = 0

    def frame(self, payload) -> None:
        text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
        match = CURSOR.search(text)
        if not match:
            return
        last = int(match.group(1))
        first = int(match.group(2) or last)
        if first <= self.last:
            self.overlapping += 1
        self.ranges.append((first, last))
        self.last = max(self.last, last)

    def missed(self, change_ids: list[int]) -> list[int]:
        covered = sorted(self.ranges)
        out, i = [], 0
        for cid in change_ids:
            while i < len(covered) and covered[i][1] < cid:
                i += 1
            if not any(a <= cid <= b for a, b in covered[i : i + 50]):
                out.append(cid)
        return out


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with suppress(OSError), open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def descendants_named(root: int, word: str) -> list[int]:
    """`root`'s descendants whose command line holds `word` (`up` starts each service
    in a session of its own, so not by process group)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with suppress(OSError), open(f"/proc/{entry}/stat") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
    out = []
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor != root:
            ancestor = parents.get(ancestor)
        if ancestor == root:
            with suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
                if word.encode() in f.read():
                    out.append(pid)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=2.0, help="minutes before memory's base")
    parser.add_argument(
        "--pg-url", default="postgres://postgres@127.0.0.1:5432/supervisor_bench_soak"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12", help="the broker")
    parser.add_argument("--layer-url", default="redis://127.0.0.1:6379/13", help="the layer")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--json")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    require_services(args.pg_url, args.redis_url)

    import psycopg
    import redis
    from playwright.sync_api import sync_playwright

    dbname = args.pg_url.rsplit("/", 1)[1]
    assert dbname.startswith("supervisor_bench"), "the bench database's name"
    admin_url = args.pg_url.rsplit("/", 1)[0] + "/postgres"

    def admin(*statements):
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def flush():
        for url in (args.redis_url, args.layer_url):
            redis.Redis.from_url(url, socket_timeout=10).flushdb()

    admin(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)', f'CREATE DATABASE "{dbname}"')
    flush()
    var = Path(tempfile.mkdtemp(prefix="supervisor-soak-"))
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SUPERVISOR_")
        and k not in {"DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL", "CACHE_URL"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="supervisor.settings",
        SUPERVISOR_VAR_DIR=str(var),
        DATABASE_URL=args.pg_url,
        CELERY_BROKER_URL=args.redis_url,
        CHANNEL_LAYER_URL=args.layer_url,
        CACHE_URL=args.layer_url,
        SUPERVISOR_DEMO="1",
        SUPERVISOR_DEMO_SEED=str(args.seed),
        PYTHONUNBUFFERED="1",
    )
    log_path = var / "up.log"
    with open(log_path, "wb") as log:
        up = subprocess.Popen(
            [str(VENV_PY), "manage.py", "up", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    results: dict = {}
    try:
        deadline = time.monotonic() + 300
        while b"Supervisor is up" not in log_path.read_bytes():
            if up.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"manage.py up did not start: {log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        password = (var / "first-login-password").read_text().strip()
        results = soak(args, port, password, up.pid, sync_playwright, psycopg)
        text = log_path.read_text(errors="replace")
        results["log"] = {
            "tracebacks": text.count("Traceback"),
            "layer_failed": text.count("the channel layer failed"),
            "timeout_reading": text.count("Timeout reading from"),
        }
    finally:
        with suppress(ProcessLookupError):
            os.kill(up.pid, signal.SIGINT)  # Ctrl-C: `up` stops what it started
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(up.pid, signal.SIGKILL)
        with suppress(ProcessLookupError):
            os.killpg(up.pid, signal.SIGKILL)
        admin(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        flush()
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    if not args.no_docs:
        write_docs(results)


def soak(args, port, password, up_pid, sync_playwright, psycopg) -> dict:
    base = f"http://127.0.0.1:{port}"
    watched = {name: Watched(name) for name in PAGES}
    started = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=base)
        login = context.new_page()
        login.goto("/login/")
        login.get_by_label("User name").fill("admin")
        login.get_by_label("Password").fill(password)
        login.get_by_role("button", name="Log in").click()
        login.wait_for_url(f"{base}/")
        login.close()
        pages = {}
        for name, path in PAGES.items():
            page = context.new_page()
            w = watched[name]

            def on_socket(ws, w=w):
                w.opens.append(time.monotonic() - started)
                ws.on("framereceived", w.frame)
                ws.on("close", lambda _ws, w=w: w.closes.append(time.monotonic() - started))

            page.on("websocket", on_socket)
            response = page.goto(path)
            w.first_cursor = int(CURSOR.search(response.text()).group(1))
            w.last = w.first_cursor
            pages[name] = (page, context.new_cdp_session(page))
            pages[name][1].send("Performance.enable")

        def sample() -> dict:
            web = descendants_named(up_pid, "supervisor.asgi")
            worker = descendants_named(up_pid, "worker")
            out = {"web_rss_mb": rss_mb(web), "worker_rss_mb": rss_mb(worker)}
            for name, (page, cdp) in pages.items():
                readings = cdp.send("Performance.getMetrics")["metrics"]
                metrics = {m["name"]: m["value"] for m in readings}
                out[f"{name}_js_heap_mb"] = round(metrics.get("JSHeapUsedSize", 0) / 2**20, 1)
                out[f"{name}_dom_nodes"] = int(metrics.get("Nodes", 0))
                status = " ".join(page.locator("#connection-status").all_inner_texts())
                if BANNER in status:
                    watched[name].banners += 1
            return out

        warm_at = started + args.warmup * 60
        end_at = started + args.minutes * 60
        base_sample = None
        anchor = next(iter(pages.values()))[0]
        while time.monotonic() < end_at:
            anchor.wait_for_timeout(15_000)  # lets Playwright deliver the pages' events
            current = sample()
            if base_sample is None and time.monotonic() >= warm_at:
                base_sample = current
        end_sample = sample()
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            latest = conn.execute("SELECT max(id) FROM core_change").fetchone()[0] or 0
            catch_up = time.monotonic() + 60
            while time.monotonic() < catch_up and any(w.last < latest for w in watched.values()):
                anchor.wait_for_timeout(500)
            first = min(w.first_cursor for w in watched.values())
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM core_change WHERE id > %s AND id <= %s ORDER BY id",
                    (first, latest),
                )
            ]
        browser.close()
    out = {
        "minutes": args.minutes,
        "warmup_minutes": args.warmup,
        "changes": len(ids),
        "memory_after_warmup": base_sample,
        "memory_at_end": end_sample,
        "load_average": os.getloadavg(),
    }
    for name, w in watched.items():
        mine = [cid for cid in ids if cid > w.first_cursor]
        out[name] = {
            "sockets_opened": len(w.opens),
            "reconnects": max(0, len(w.opens) - 1),
            "socket_closes": len(w.closes),
            "frames": len(w.ranges),
            "changes_after_load": len(mine),
            "frames_missed": len(w.missed(mine)),
            "missed_ids": w.missed(mine)[:20],
            "overlapping_frames": w.overlapping,
            "banners_seen": w.banners,
            "caught_up": w.last >= latest,
        }
    return out


def write_docs(r: dict) -> None:
    commit = git("rev-parse", "--short=12", "HEAD")
    changed = git("status", "--porcelain", "--", "supervisor")
    dirty = " (with uncommitted changes)" if changed else ""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    base, end = r["memory_after_warmup"] or {}, r["memory_at_end"]

    def growth(key):
        if key not in base:
            return f"{end[key]} | - | -"
        return f"{base[key]} | {end[key]} | {end[key] - base[key]:+.1f}"

    rows = []
    for name in PAGES:
        p = r[name]
        rows.append(
            f"| {name} | {p['frames']:,} | {p['changes_after_load']:,} | {p['reconnects']} | "
            f"{p['frames_missed']} | {p['overlapping_frames']} | {p['banners_seen']} |"
        )
    text = "\n".join(
        [
            f"Measured {when} on commit {commit}{dirty}: `python bench/live_soak.py "
            f"--minutes {r['minutes']:g}` (`manage.py up` with the demo fleet on PostgreSQL "
            "and Redis, Chromium keeping the overview and the task list open). One run: a "
            f"soak is its own repetition. Load average at the end {r['load_average'][0]:.2f}.",
            "",
            "| page | frames | changes after load | reconnects | frames missed | "
            "overlapping frames | interrupted banners |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"| memory (MiB) | after {r['warmup_minutes']:g} min | at the end | growth |",
            "|---|---:|---:|---:|",
            f"| web server (resident) | {growth('web_rss_mb')} |",
            f"| worker, all processes (resident) | {growth('worker_rss_mb')} |",
            *(f"| {n} page, JS heap used | {growth(f'{n}_js_heap_mb')} |" for n in PAGES),
            *(f"| {n} page, DOM nodes | {growth(f'{n}_dom_nodes')} |" for n in PAGES),
            "",
            f"Web server log: {r['log']['tracebacks']} tracebacks, "
            f"{r['log']['timeout_reading']} `Timeout reading from`, "
            f"{r['log']['layer_failed']} sockets closed because the layer failed.",
        ]
    )
    write_block("<!-- live_soak:begin -->", "<!-- live_soak:end -->", text, "## Live soak")


if __name__ == "__main__":
    main()
