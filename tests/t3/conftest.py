"""The real T3 Code server, from the kit beside the clone (`../shared/t3code`): built
once per session for the tests that follow or act on it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

KIT = ROOT.parent / "shared" / "t3code" / "kit"


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"the real T3 tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kit() -> Path:
    if not KIT.is_file():
        _unavailable(f"no T3 Code kit beside this clone ({KIT})")
    for tool in ("npm", "g++", "make"):
        if shutil.which(tool) is None:
            _unavailable(f"the kit needs {tool!r} to build T3 Code, and it is not on PATH")
    built = subprocess.run([str(KIT), "build"], capture_output=True, text=True, timeout=900)
    if built.returncode != 0:
        _unavailable(f"kit build failed: {(built.stderr or built.stdout)[-2000:]}")
    return KIT
