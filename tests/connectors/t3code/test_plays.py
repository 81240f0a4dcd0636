"""The player of the real T3 kits' scenarios (tests/support/t3/plays.py), with a stand-in kit:
a play that fails, as 0.0.33 does when its threads race, is played again alone until it
passes or its retries are spent, and what still failed is reported with why."""

from __future__ import annotations

import fcntl
import stat
import threading
from pathlib import Path

import pytest

from tests.support.t3 import plays


def stand_in_kit(folder: Path, failures: int) -> Path:
    """A kit whose every scenario fails `failures` times, then writes its scenario.json."""
    kit = folder / "kit"
    kit.write_text(
        "#!/bin/sh\n"
        '# kit scenario NAME --base-dir DIR\nbase="$4"; mkdir -p "$base"\n'
        f'tries="{folder}/tries-$2"; echo x >> "$tries"\n'
        f'if [ "$(wc -l < "$tries")" -le {failures} ]; then\n'
        '  echo "timed out after 60 s waiting for the parent to be woken"; exit 1\nfi\n'
        'echo "{}" > "$base/scenario.json"\n'
    )
    kit.chmod(kit.stat().st_mode | stat.S_IEXEC)
    return kit


@pytest.fixture
def one_version(monkeypatch, tmp_path):
    monkeypatch.setattr(plays, "PLAYS", [("9.9.9", "racy"), ("9.9.9", "calm")])
    monkeypatch.setattr(plays, "played_root", lambda: tmp_path / "played")


def tries(folder: Path, name: str) -> int:
    return len((folder / f"tries-{name}").read_text().splitlines())


def test_a_play_that_races_is_played_again_until_it_passes(one_version, tmp_path, capsys):
    kit = stand_in_kit(tmp_path, failures=4)
    assert plays.play_all({"9.9.9": kit}) == {}
    assert tries(tmp_path, "racy") == 5 and tries(tmp_path, "calm") == 5
    assert "racy: failed, playing it again (4/6): timed out" in capsys.readouterr().err


def test_a_play_that_keeps_failing_is_reported_after_its_retries(one_version, tmp_path):
    kit = stand_in_kit(tmp_path, failures=100)
    failed = plays.play_all({"9.9.9": kit}, retries=2)
    assert set(failed) == {("9.9.9", "racy"), ("9.9.9", "calm")}
    assert "timed out" in failed["9.9.9", "racy"]
    assert tries(tmp_path, "racy") == 3  # the first pass and two retries


@pytest.fixture
def stand_in_kits(one_version, monkeypatch, tmp_path):
    kit = stand_in_kit(tmp_path, failures=0)
    kit.write_text('#!/bin/sh\n[ "$1" = build ] && exit 0\n' + kit.read_text().split("\n", 1)[1])
    monkeypatch.setattr(plays, "KITS", {"9.9.9": kit})
    return kit


def test_the_player_started_for_a_session_plays_under_the_lock_it_was_handed(stand_in_kits):
    # start_player hands the player its lock (the descriptor it inherits); the player
    # taking it again, on the file opened anew, waited for itself, and every test that
    # waits for the plays with it.
    plays.played_root().mkdir(parents=True)
    with (plays.played_root() / plays.PLAYING).open("a") as handed:
        fcntl.flock(handed, fcntl.LOCK_EX)
        done = []
        player = threading.Thread(
            target=lambda: done.append(plays.main([plays.HOLDING])), daemon=True
        )
        player.start()
        player.join(timeout=30)
        assert done == [0], "the player waited for the lock it holds"
    assert (plays.base_dir("9.9.9", "racy", {"9.9.9": plays.kit_digest(stand_in_kits)})).is_dir()


def test_no_second_player_starts_while_one_plays(stand_in_kits):
    with plays.held(plays.PLAYING):
        assert plays.start_player() is False
