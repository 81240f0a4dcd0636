"""Judging arrivals of a scenario for tests/properties/test_detection_order.py, in this process
or in a second one, so that the module's few thousand replays use both cores.

A judgement is (the replay's result object, the open flags' evidence by (subject type,
subject id, kind)). A replay is deterministic, and both are JSON, so a judgement made
in the helper process is the one this process would make.

Run as `python -m tests.support.order_judge`: it reads jobs, one JSON line each
(`[scenario path, [event positions], as_service]`), and writes one JSON line of
judgement per job, in order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def judge(scenario, events: list, *, as_service: bool) -> tuple[dict, dict]:
    """Replay one arrival on the current throw-away store."""
    # Imported here: run as a program, this module sets Django up before models load.
    from supervisor.core.detection.scenario import replay
    from supervisor.core.models import Flag

    result = replay(replace(scenario, events=events), as_service=as_service)
    flags = {
        (f.subject_type, f.subject_id, f.kind): f.evidence
        for f in Flag.objects.filter(state=Flag.OPEN, subject_type__in=("task", "thread"))
    }
    return result, flags


def judge_arrival(store, scenario, positions, *, as_service: bool) -> tuple[dict, dict]:
    """Judge the arrival of the scenario's events at `positions` on a fresh copy of the
    throw-away `store`."""
    store.reset()
    return judge(scenario, [scenario.events[i] for i in positions], as_service=as_service)


class Helper:
    """A second process judging jobs handed to it while this one judges others. The jobs
    and the judgements go through files, so neither process waits on a pipe."""

    def __init__(self, jobs: list[tuple[str, tuple[int, ...], bool]], folder: Path):
        self.jobs = jobs
        self.answers = folder / "judged.jsonl"
        asked = folder / "jobs.jsonl"
        asked.write_text("".join(json.dumps([p, list(pos), s]) + "\n" for p, pos, s in jobs))
        self.errors = folder / "helper.err"
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "supervisor.settings"}
        with asked.open() as stdin, self.answers.open("w") as out, self.errors.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.support.order_judge"],
                cwd=ROOT,
                env=env,
                stdin=stdin,
                stdout=out,
                stderr=err,
            )

    def results(self) -> dict:
        """{job: judgement}, once the helper has judged every job; an error if it failed."""
        if self.process.wait() != 0:
            raise RuntimeError(
                f"the judging helper failed ({self.process.returncode}):\n"
                + self.errors.read_text()[-4000:]
            )
        lines = self.answers.read_text().splitlines()
        if len(lines) != len(self.jobs):
            raise RuntimeError(f"the judging helper answered {len(lines)} of {len(self.jobs)}")
        judged = {}
        for job, line in zip(self.jobs, lines, strict=True):
            body = json.loads(line)
            flags = {tuple(key): evidence for key, evidence in body["flags"]}
            judged[job] = (body["result"], flags)
        return judged

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def main() -> None:
    import django

    django.setup()
    from supervisor.core.detection.scenario import Scenario, ThrowAwayStore

    scenarios: dict[str, Scenario] = {}
    with ThrowAwayStore() as store:
        for line in sys.stdin:
            path, positions, as_service = json.loads(line)
            if path not in scenarios:
                scenarios[path] = Scenario.load(path)
            result, flags = judge_arrival(store, scenarios[path], positions, as_service=as_service)
            body = {"result": result, "flags": [[list(k), v] for k, v in flags.items()]}
            sys.stdout.write(json.dumps(body) + "\n")


if __name__ == "__main__":
    main()
