"""The real T3 Code servers, from the kits beside the clone: `../shared/t3code` (T3 Code
0.0.30) and `../shared/t3code-next` (0.0.33), each built once per session for the tests
that follow or act on it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.t3.plays import build


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"the real T3 tests cannot run in CI: {reason}")
    pytest.skip(reason)


def built(kit: Path) -> Path:
    """The kit, its T3 Code built (a second build returns at once)."""
    if not kit.is_file():
        _unavailable(f"no T3 Code kit beside this clone ({kit})")
    for tool in ("npm", "g++", "make"):
        if shutil.which(tool) is None:
            _unavailable(f"the kit needs {tool!r} to build T3 Code, and it is not on PATH")
    done = build(kit)
    if done.returncode != 0:
        _unavailable(f"{kit} build failed: {(done.stderr or done.stdout)[-2000:]}")
    return kit
