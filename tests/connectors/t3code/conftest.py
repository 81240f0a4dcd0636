"""The real T3 Code servers of the kits beside the clone (tests.support.t3.kits), each
built once per session for the tests that follow or act on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.t3.kits import built
from tests.support.t3.plays import KITS


@pytest.fixture(scope="session")
def kit() -> Path:
    """The 0.0.30 kit."""
    return built(KITS["0.0.30"])


@pytest.fixture(scope="session")
def kit_next() -> Path:
    """The 0.0.33 kit."""
    return built(KITS["0.0.33"])
