"""The project keeps its own copies of the contract's scenarios (`scenarios/`) and text
(`docs/event-contract.md`, below its line), so a clone stands alone. Where the originals
are at hand (`../shared`, beside the checkout, as in CI) the copies must not drift."""

import os
from pathlib import Path

import pytest

from tests.support.scenarios import CONTRACT_SCENARIOS, ROOT

SHARED = ROOT.parent / "shared"
# Below this line, the project's copy of the contract is the original word for word.
CONTRACT_LINE = "\n---\n\n"


@pytest.fixture(scope="module")
def shared() -> Path:
    if not (SHARED / "scenarios").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED} is missing in CI: the drift of the copies cannot be checked")
        pytest.skip(f"no originals beside this clone ({SHARED}); nothing to compare")
    return SHARED


def test_the_scenarios_are_the_contracts_own(shared):
    originals = {p.name: p.read_bytes() for p in (shared / "scenarios").glob("*.json")}
    copies = {p.name: p.read_bytes() for p in CONTRACT_SCENARIOS}
    assert sorted(copies) == sorted(originals), "scenarios/ has other files than the contract"
    drifted = sorted(name for name in originals if copies[name] != originals[name])
    assert not drifted, f"scenarios/ differs from {shared / 'scenarios'}: {drifted}"


def test_the_contract_text_is_the_originals_word_for_word(shared):
    copy = (ROOT / "docs" / "event-contract.md").read_text()
    assert CONTRACT_LINE in copy, "docs/event-contract.md lost the line above the original"
    below = copy.split(CONTRACT_LINE, 1)[1]
    assert below == (shared / "docs" / "event-contract.md").read_text()
