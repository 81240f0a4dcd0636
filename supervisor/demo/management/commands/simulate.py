"""`manage.py simulate`: run a simulated orchestrator fleet against Supervisor.

The fleet's events (`demo/fleet/`) go out paced in real time by `--speed`, over the
HTTP API (`--url`, `--token`) or in-process into a source (`--source`), as
`demo/sending.py` sends them. With `--listen`, it also serves a webhook receiver
(`demo/receiver.py`) that answers Supervisor's actions the way an orchestrator would
(`demo/answers.py`), posting the answer back as events. Every post is retried until it
is taken: event ids make a resend a duplicate, so nothing is lost or doubled.

`--demo` is what `make run` starts: a trickle with short durations whose first episodes
carry every failure, timed against short detection settings, so that every kind of
flag shows within five minutes. `--outage AT:FOR` withholds the events falling due in
that window and sends them when it ends (a follower down, then catching up: the source
goes silent). `--interrupt-on-stop` reports the unfinished runs and tasks `interrupted`
on Ctrl-C or SIGTERM, as an orchestrator does when it shuts down.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from supervisor.core import clock
from supervisor.core.facts.snapshot import DetectionSettings
from supervisor.demo.fleet import (
    DEMO_DETECTION,
    DEMO_DURATIONS,
    DEMO_OPENING,
    DEMO_RATE,
    FAILURES,
    Fleet,
)
from supervisor.demo.receiver import Receiver, serve
from supervisor.demo.sending import (
    ApiSink,
    FatalSend,
    Outages,
    Pacer,
    SourceSink,
    Stop,
    interrupt,
    send_fleet,
    write_manifest,
)


def _stop_on_sigterm(signum, frame):
    raise Stop


class Command(BaseCommand):
    help = (
        "Run a simulated orchestrator fleet (parents delegating tasks, with the field "
        "reports' failures mixed in) against Supervisor, over the HTTP API or in-process."
    )

    def add_arguments(self, parser):
        target = parser.add_argument_group("where the events go (one of)")
        target.add_argument("--url", help="Supervisor's base URL, e.g. http://127.0.0.1:8000")
        target.add_argument("--token", help="an ingest token (with --url)")
        target.add_argument("--source", help="a source name: ingest in-process, no HTTP")
        fleet = parser.add_argument_group("the fleet")
        fleet.add_argument("--seed", type=int, help="default: random (printed)")
        fleet.add_argument("--tasks", type=int, help="stop after N tasks (default: never)")
        fleet.add_argument(
            "--rate", type=float, default=2.0, help="tasks delegated per virtual minute (default 2)"
        )
        fleet.add_argument("--failure-rate", type=float, default=0.2, help="0..1 (default 0.2)")
        fleet.add_argument("--parents", type=int, default=3, help="parent threads (default 3)")
        fleet.add_argument(
            "--speed", type=float, default=1.0, help="virtual seconds per real second (default 1)"
        )
        fleet.add_argument(
            "--detection",
            help="detection durations the fleet is timed against, as JSON, e.g. "
            "'{\"stuck_after\": 300}' (default: the source's, else the built-in ones)",
        )
        fleet.add_argument(
            "--durations",
            type=float,
            default=1.0,
            help="scale the fleet's work and waits by this factor (default 1)",
        )
        fleet.add_argument(
            "--opening",
            help="failures the first episodes carry, in order, comma-separated "
            f"(from {', '.join(FAILURES)}; 'healthy' for none)",
        )
        fleet.add_argument(
            "--demo",
            action="store_true",
            help="make run's demo: a few tasks a minute, short durations and detection "
            "settings, every failure in the first episodes (flags within five minutes)",
        )
        fleet.add_argument(
            "--outage",
            action="append",
            default=[],
            metavar="AT:FOR",
            help="withhold the events due from AT for FOR virtual seconds, then send them "
            "(a follower down and catching up); repeatable",
        )
        fleet.add_argument(
            "--interrupt-on-stop",
            action="store_true",
            help="on Ctrl-C or SIGTERM, report unfinished runs and tasks interrupted",
        )
        fleet.add_argument("--manifest", help="write the tasks, failures and expected flags here")
        answer = parser.add_argument_group("answering actions (webhook receiver)")
        answer.add_argument("--listen", metavar="HOST:PORT", help="serve the webhook receiver")
        answer.add_argument(
            "--secret",
            default=os.environ.get("SUPERVISOR_SIMULATOR_SECRET"),
            help="the webhook connector's secret (with --listen; default: "
            "$SUPERVISOR_SIMULATOR_SECRET)",
        )

    def handle(self, *args, **options):
        self.verbosity = options["verbosity"]
        if options["demo"]:
            self._demo_defaults(options)
        sink, detection = self._target(options)
        self._check_numbers(options)
        try:
            outages = Outages([Outages.parse(text) for text in options["outage"]])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        seed = options["seed"] if options["seed"] is not None else random.randrange(1, 10**6)
        try:
            fleet = Fleet(
                seed,
                start=clock.now().replace(microsecond=0),
                parents=options["parents"],
                rate=options["rate"],
                failure_rate=options["failure_rate"],
                tasks=options["tasks"],
                settings=detection,
                opening=self._opening(options["opening"]),
                durations=options["durations"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        pacer = Pacer(options["speed"])
        self.stdout.write(
            f"Simulating seed {seed}: {options['tasks'] or 'unlimited'} tasks at "
            f"{options['rate']:g}/min, failure rate {options['failure_rate']:g}, speed "
            f"{options['speed']:g}, into {sink.describe()}"
        )
        receiver = self._listen(options, fleet, sink, pacer)
        manifest = Path(options["manifest"]) if options["manifest"] else None
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        # A shell without job control starts background commands ignoring SIGINT; the
        # simulator stops on it wherever it was started.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            sent = send_fleet(fleet, sink, pacer, outages, manifest, announce=self._announce)
            write_manifest(fleet, manifest)
            self._summary(fleet, sink, sent)
            if receiver is not None:
                self.stdout.write("The fleet is done; still answering actions (Ctrl-C stops).")
                while True:
                    time.sleep(1)
        except FatalSend as exc:
            raise CommandError(str(exc)) from None
        except (KeyboardInterrupt, Stop):
            # A second signal while stopping abandons what is left.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if receiver is not None:
                receiver.shutdown()
                receiver.server_close()
                receiver = None
            if options["interrupt_on_stop"]:
                self._interrupt(fleet, sink)
            write_manifest(fleet, manifest)
            self.stderr.write("Stopped (Ctrl-C).")
            sys.exit(130)
        finally:
            if receiver is not None:
                receiver.shutdown()
                receiver.server_close()

    def _demo_defaults(self, options) -> None:
        """`--demo` fills in what was not given; explicit options still win."""
        defaults = {
            "rate": (2.0, DEMO_RATE),
            "durations": (1.0, DEMO_DURATIONS),
            "opening": (None, ",".join(f or "healthy" for f in DEMO_OPENING)),
            "detection": (None, json.dumps(DEMO_DETECTION)),
        }
        for name, (default, demo) in defaults.items():
            if options[name] == default:
                options[name] = demo

    def _opening(self, text: str | None) -> list[str | None]:
        if not text:
            return []
        names = [part.strip() for part in text.split(",") if part.strip()]
        unknown = sorted({n for n in names if n != "healthy" and n not in FAILURES})
        if unknown:
            raise CommandError(
                f"--opening: unknown failure(s) {', '.join(unknown)}; "
                f"choose from {', '.join(FAILURES)} or healthy"
            )
        return [None if n == "healthy" else n for n in names]

    def _interrupt(self, fleet: Fleet, sink) -> None:
        try:
            count = interrupt(fleet, sink)
        except (FatalSend, OSError) as exc:
            self.stderr.write(f"could not report the unfinished work interrupted: {exc}")
            return
        if count:
            self.stderr.write(f"Reported {count} unfinished run(s) and task(s) interrupted.")

    def _target(self, options):
        url, token, source_name = options["url"], options["token"], options["source"]
        if bool(url) == bool(source_name):
            raise CommandError("give either --url (with --token) or --source")
        overrides = {}
        if options["detection"]:
            try:
                overrides = json.loads(options["detection"])
            except ValueError as exc:
                raise CommandError(f"--detection is not JSON: {exc}") from None
            if not isinstance(overrides, dict):
                raise CommandError("--detection must be a JSON object")
            unknown = sorted(set(overrides) - set(DetectionSettings.__dataclass_fields__))
            if unknown:
                raise CommandError(f"--detection: unknown duration(s) {', '.join(unknown)}")
        if url:
            if not token:
                raise CommandError("--url needs --token (an ingest token from create_source)")
            if not url.startswith(("http://", "https://")):
                raise CommandError(f"--url must start with http:// or https:// (got {url!r})")
            return ApiSink(url, token, self._log), DetectionSettings.from_overrides(overrides)
        from supervisor.core.detection.evaluate import detection_settings
        from supervisor.core.models import Source

        source = Source.objects.filter(name=source_name).first()
        if source is None:
            raise CommandError(f"no source named {source_name!r} (see create_source)")
        own = detection_settings(source.namespace_id)
        merged = {name: getattr(own, name) for name in DetectionSettings.__dataclass_fields__}
        return SourceSink(source), DetectionSettings.from_overrides(merged, overrides)

    def _check_numbers(self, options):
        if options["durations"] <= 0:
            raise CommandError("--durations must be above 0")
        if options["speed"] <= 0:
            raise CommandError("--speed must be above 0")
        if options["rate"] <= 0:
            raise CommandError("--rate must be above 0")
        if not 0 <= options["failure_rate"] <= 1:
            raise CommandError("--failure-rate must be between 0 and 1")
        if options["parents"] < 1:
            raise CommandError("--parents must be at least 1")
        if options["tasks"] is not None and options["tasks"] < 1:
            raise CommandError("--tasks must be at least 1")

    def _listen(self, options, fleet, sink, pacer) -> Receiver | None:
        if not options["listen"]:
            return None
        if not options["secret"]:
            raise CommandError("--listen needs --secret (the webhook connector's secret)")
        try:
            receiver = serve(options["listen"], options["secret"], fleet, sink, pacer, self._log)
        except (ValueError, OSError) as exc:
            raise CommandError(f"cannot listen on {options['listen']!r}: {exc}") from None
        bound_host, bound_port = receiver.server_address[:2]
        self.stdout.write(f"Answering actions on http://{bound_host}:{bound_port}/")
        return receiver

    def _announce(self, task) -> None:
        if self.verbosity < 1:
            return
        what = task.failure or "healthy"
        expect = ", ".join(task.expected_flags) or "no flags"
        self.stdout.write(f"{task.delegated_at} {task.task} [{task.shape}; {what}] → {expect}")

    def _summary(self, fleet: Fleet, sink, sent: int) -> None:
        totals = sink.totals
        kinds = Counter(kind for task in fleet.tasks for kind in task.expected_flags)
        kinds.update(kind for flags in fleet.thread_flags.values() for kind in flags)
        expected = ", ".join(f"{k} ×{n}" for k, n in sorted(kinds.items())) or "none"
        self.stdout.write(
            f"Sent {sent} events for {len(fleet.tasks)} tasks (accepted {totals['accepted']}, "
            f"duplicates {totals['duplicates']}, rejected {totals['rejected']}). "
            f"Expected flags by {fleet.manifest()['until']}: {expected}."
        )

    def _log(self, message: str) -> None:
        self.stderr.write(message)
