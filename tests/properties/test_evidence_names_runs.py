"""A flag's evidence names runs as the task page does ("run 2", by
ordinal), never by the orchestrator's raw id: the page said "run 2" where the evidence of
`failed_while_running` said `thread:…#2`. Checked over every scenario at its end."""

from datetime import datetime

import pytest

from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Run
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", CONTRACT_SCENARIOS + OWN_SCENARIOS, ids=lambda p: p.stem)
def test_evidence_names_runs_by_ordinal(path):
    scenario = load_scenario(path)
    source, _ = do_create_source("orch", scopes="ingest,read,act")
    apply_events(source, scenario["events"])
    evaluate(source.namespace_id, datetime.fromisoformat(scenario["until"].replace("Z", "+00:00")))
    runs = set(
        Run.objects.filter(namespace_id=source.namespace_id).values_list("run_id", flat=True)
    )
    texts = [
        (flag.kind, (flag.evidence or {}).get("text") or "")
        for flag in Flag.objects.filter(namespace_id=source.namespace_id)
    ]
    named = [(kind, run) for kind, text in texts for run in runs if run in text]
    assert not named, f"evidence names runs by raw id: {named}"
