"""The real T3 kits' scenarios, played once per CI run: what each must give, and the
player that keeps each play, by the kits' digest, in a temporary folder of the clone.

A test session that has real-T3 tests to run starts `python -m tests.support.t3.plays` in
the background as it begins (tests/conftest.py), so the plays (mostly waiting on the
scripted provider's delays) overlap other tests; the tests that read them wait for that
player, then play whatever is still missing themselves. The service run follows the
databases the first run's plays wrote (the rows are T3's; only Supervisor's store
differs). Standard library only: it runs before Django is set up, and without it."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SHARED = ROOT.parent / "shared"
KITS = {"0.0.30": SHARED / "t3code" / "kit", "0.0.33": SHARED / "t3code-next" / "kit"}

# Each kit scenario, its tasks by role (scenario.json), and the flags the contract gives
# for that shape: the scenario of the contract whose shape it plays is named.
EXPECTED: dict[str, dict[str, dict[str, list[str]]]] = {
    "0.0.30": {
        "delegate": {"the task": []},
        # The same delegation asked by the client (`delegated_task.request`).
        "delegate-ws": {"the task": []},
        # seed000-stale-finalize: finalized on the interim text, the real one never handed.
        "stale-wake": {"the task": ["premature_completion", "stale_result", "undelivered_result"]},
        # seed002-transient-failure's first task (its orphan wake names another task id,
        # which this shape does not play).
        "transient-continue": {"the task": ["failed_while_running", "transient_failure"]},
        # seed002-transient-failure's second task: the same task delegated twice.
        "duplicate": {"the first task": [], "the second task": ["duplicate_delegation"]},
        # The child's run never ends; the server's stop cancels it (a restart's recovery,
        # `runtime-reconcile`) and the task stays running for good (T3 #7314).
        "stuck": {"the task": ["left_by_restart", "stuck"]},
        # healthy-awaited-background / healthy-real-failure: nothing to flag.
        "healthy-wait": {"the task": []},
        "healthy-failure": {"the task": []},
    },
    "0.0.33": {
        "delegate": {"the task": []},
        "delegate-ws": {"the task": []},
        # The same stale finalization; the child's run 2 is woken by its command's end
        # (the roster entry, then the provider continuation) and owned.
        "stale-wake": {"the task": ["premature_completion", "stale_result", "undelivered_result"]},
        "transient-continue": {"the task": ["failed_while_running", "transient_failure"]},
        "duplicate": {"the first task": [], "the second task": ["duplicate_delegation"]},
        # The stop's reconciliation cancels the task itself (cause restart): the parent
        # will never hear of it.
        "stuck": {"the task": ["left_by_restart"]},
        "healthy-wait": {"the task": []},
        "healthy-failure": {"the task": []},
        # The parent read the result (acknowledged): a delivery, and the wake T3 had
        # reserved and cancelled for it is not late.
        "delegate-ack": {"the task": []},
        "ack-in-run": {"the task": []},
        # Delivered by hand and disposed: the cancelled wake is not late either.
        "manual-dispose": {"the task": []},
        # The queued wake run never starts (T3 rewrites the parent's run 1 to waiting
        # and the queued run stays so until the stop): right for what T3 wrote. T3
        # races here: see RACES for the play whose wake was delivered.
        "cancel-queued": {"the task": ["failed_while_running", "late_wake", "never_delivered"]},
        # The third wave stays pending (T3 #12285) until the kit delivers it by hand and
        # disposes it: nothing open at the end.
        "group": {"the first task": [], "the second task": [], "the third task": []},
        # Restart recovery cancels the held task (no result, no wake).
        "restart": {"the held task": ["left_by_restart"], "the background task": []},
    },
}
PLAYS = [(version, name) for version in EXPECTED for name in EXPECTED[version]]


def _cancel_queued(played: dict) -> dict[str, list[str]]:
    """0.0.33's `cancel-queued` writes one of two shapes, as its threads race: T3 either
    wakes the parent for the interrupted task (`claimed` → wake run → `delivered`, the
    kit's README) or rewrites the parent's run 1 to `waiting` and leaves the wake run
    queued until the stop (`claimed` for good, as measured in docs/benchmarks.md)."""
    [task] = played["tasks"]
    if (task.get("completionDelivery") or {}).get("state") == "delivered":
        return {"the task": ["failed_while_running"]}
    return EXPECTED["0.0.33"]["cancel-queued"]


# Scenarios whose rows depend on how T3's threads interleave: the flags for the shape
# this play wrote (its scenario.json).
RACES = {("0.0.33", "cancel-queued"): _cancel_queued}


def expected(version: str, name: str, played: dict) -> dict[str, list[str]]:
    """The open flags, by task role, a play of the scenario must give."""
    race = RACES.get((version, name))
    return race(played) if race else EXPECTED[version][name]


PLAY_TIMEOUT = 300


def kit_digest(kit: Path) -> str:
    """What the plays depend on: the kit's script, its drivers and T3's source."""
    digest = hashlib.sha256()
    folder = kit.parent
    for path in sorted(
        [kit, folder / "t3code-src.tar.gz", *sorted((folder / "lib").rglob("*"))], key=str
    ):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def played_root() -> Path:
    """Outside the clone: T3 treats its workspace's git repository as the project's (a
    play under the clone's own repository checkpoints it, slowly, and fails). One folder
    per clone, so a fresh CI clone plays afresh."""
    clone = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"supervisor-t3-plays-{clone}"


def base_dir(version: str, name: str, digests: dict[str, str]) -> Path:
    return played_root() / f"{version}-{digests[version]}" / name


def play(kit: Path, base: Path) -> str | None:
    """Play one scenario into `base` unless it is played already; None, or why it failed."""
    if (base / "scenario.json").is_file():
        return None
    shutil.rmtree(base, ignore_errors=True)  # the kit wants a base without a database
    base.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(kit), "scenario", base.name, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        timeout=PLAY_TIMEOUT,
    )
    if done.returncode:
        (base / "scenario.json").unlink(missing_ok=True)
        return done.stdout[-1500:] + done.stderr[-1500:]
    return None


# Plays again, alone, after the first pass. 0.0.33 races when a child fails before its
# parent's turn has ended: the wake run stays queued and the kit times out waiting for the
# parent to be woken (transient-continue, healthy-failure). Measured here: 1 play in 6
# alone on a quiet machine, 4 in 16 two at a time; a loaded CI machine lost six in a row,
# so the retries are many (each failed play costs some 75 s).
RETRIES = 6


def play_all(
    kits: dict[str, Path], *, workers: int = 2, retries: int = RETRIES
) -> dict[tuple[str, str], str]:
    """Every scenario of the kits, `workers` at a time (the servers are real and each
    takes 20 to 70 s on two cores); a play that fails (a loaded machine can time out the
    kit's own set-up, or make T3 race) is played again, alone, up to `retries` times.
    What still failed, and why."""
    digests = {version: kit_digest(kit) for version, kit in kits.items()}
    plays = [(v, n) for v, n in PLAYS if v in kits]

    def one(play_: tuple[str, str]) -> str | None:
        version, name = play_
        return play(kits[version], base_dir(version, name, digests))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        failed = dict(zip(plays, pool.map(one, plays), strict=True))
    for attempt in range(retries):
        if not any(failed.values()):
            break
        for (version, name), why in failed.items():
            if why:
                print(
                    f"{version} {name}: failed, playing it again ({attempt + 1}/{retries}): "
                    f"{why.strip().splitlines()[-1][-200:]}",
                    file=sys.stderr,
                    flush=True,
                )
        failed = {p: one(p) if why else None for p, why in failed.items()}
    return {p: why for p, why in failed.items() if why}


# Two locks (flock, on files of played_root) keep the workers of a parallel run, and the
# runs of one clone, from playing or building over each other: PLAYING while the
# background player, or any test, plays; BUILDING while a kit builds T3 Code.
PLAYING, BUILDING = "playing.lock", "building.lock"


@contextmanager
def held(name: str):
    """The lock `name`, waited for as long as it takes (a player's retries take minutes)."""
    root = played_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / name).open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        yield


def start_player() -> bool:
    """Start the background player unless one plays already (another worker started it,
    or a run of this clone still plays): the test session goes on while the scenarios
    play, mostly waiting on the scripted provider. The player holds PLAYING from here to
    its end, so a test that needs the plays waits for it by taking the lock. Whether it
    started one."""
    if not any(kit.is_file() for kit in KITS.values()):
        return False
    root = played_root()
    root.mkdir(parents=True, exist_ok=True)
    file = (root / PLAYING).open("a")
    try:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        log = root / "player.log"
        with log.open("a") as out:
            # The lock goes with the inherited descriptor: it is the player's until it ends.
            subprocess.Popen(
                [sys.executable, "-m", "tests.support.t3.plays", HOLDING],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(file.fileno(),),
                start_new_session=True,
            )
        return True
    finally:
        file.close()


def build(kit: Path) -> subprocess.CompletedProcess:
    """`kit build` (a second build returns at once), one build at a time."""
    with held(BUILDING):
        return subprocess.run([str(kit), "build"], capture_output=True, text=True, timeout=900)


HOLDING = "--holding-lock"  # started by start_player: PLAYING is its already


def main(args: list[str]) -> int:
    """Play both kits' scenarios (quietly: the tests report). Started by start_player it
    holds PLAYING already (taking it again, on a file opened anew, would wait for
    itself); run by hand, it takes it."""
    kits = {v: kit for v, kit in KITS.items() if kit.is_file()}
    with nullcontext() if HOLDING in args else held(PLAYING):
        for kit in kits.values():
            build(kit)
        failed = play_all(kits)
    for (version, name), why in failed.items():
        print(f"{version} {name}: {why[-300:]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
