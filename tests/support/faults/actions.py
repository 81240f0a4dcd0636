"""Events and deliveries through a fault stack's HTTP API, and the action rows they leave."""

from __future__ import annotations

import json
from urllib.parse import quote

from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
SECRET = "a-test-secret-of-some-length"


def post_events(stack, token: str, events: list[dict]) -> dict:
    status, _, body = stack.request(
        "POST", "/api/v1/events", json.dumps({"events": events}).encode(), token
    )
    assert status == 200, body
    return json.loads(body)


def request_delivery(stack, token: str) -> int:
    status, _, body = stack.request(
        "POST", actions_path(TASK), json.dumps({"kind": "deliver"}).encode(), token
    )
    assert status == 202, body
    return json.loads(body)["id"]


def action_row(stack, action_id: int) -> dict:
    state, attempts, error, response = stack.sql(
        "SELECT state, attempts, last_error, response FROM core_action WHERE id = %s", action_id
    )[0]
    return {"state": state, "attempts": attempts, "last_error": error, "response": response}


TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"


def actions_path(task: str) -> str:
    return f"/api/v1/tasks/{quote(task, safe='')}/actions"
