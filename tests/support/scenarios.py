"""The scenarios the tests replay: the contract's, as the project keeps them
(tests/test_contract_copies.py compares them with the originals wherever those are at
hand), and the project's own (tests/scenarios)."""

import json
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CONTRACT_SCENARIOS = sorted((ROOT / "scenarios").glob("*.json"))
OWN_DIR = ROOT / "tests" / "scenarios"
OWN_SCENARIOS = sorted(OWN_DIR.glob("*.json"))
# Without them the contract tests would pass on nothing: say so instead.
assert CONTRACT_SCENARIOS, f"the contract scenarios of {ROOT / 'scenarios'} are missing"


def load_scenario(path) -> dict:
    return json.loads(Path(path).read_text())


def load_own(source, name: str) -> dict:
    """One of the project's own scenarios (by file name) ingested for `source` and judged
    at its `until`."""
    from supervisor.core.detection.evaluate import evaluate
    from supervisor.core.ingest.apply import apply_events

    scenario = json.loads((OWN_DIR / name).read_text())
    apply_events(source, scenario["events"])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)
    return scenario
