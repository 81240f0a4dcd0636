"""Where a T3 install keeps its state database: a `db_path` may name the file itself, or
T3's base directory (`--base-dir`, `$T3CODE_HOME`, `~/.t3`) or its `userdata` folder.

T3 0.0.30 writes `userdata/state.sqlite`; later builds `userdata/statev2.sqlite`, which
starts as a one-time copy of `state.sqlite` and then alone is current (facts §1): where
both exist, `statev2.sqlite` is the one to follow."""

from __future__ import annotations

from pathlib import Path

NAMES = ("statev2.sqlite", "state.sqlite")  # the newer first


def state_database(path: str) -> str:
    """The state database `path` names: a file as it is; in a directory, the newest
    build's file that exists (else the path unchanged, for the follower to report)."""
    given = Path(path).expanduser()
    if not given.is_dir():
        return str(given)
    for folder in (given / "userdata", given):
        for name in NAMES:
            if (folder / name).is_file():
                return str(folder / name)
    return str(given)
