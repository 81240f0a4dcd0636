"""schemathesis against the served OpenAPI document: every operation answers
generated requests, valid or not, without a server error and as its document says.

The examples per operation come from SUPERVISOR_FUZZ_EXAMPLES: a small CI budget by
default, `SUPERVISOR_FUZZ_EXAMPLES=1000` for the deep local run.
"""

import os
import time
from collections import Counter

import pytest
import requests
import schemathesis
from django.db import connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config._checks import NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from supervisor.api.router import api
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.models import Flag, Source, Task
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

EXAMPLES = int(os.environ.get("SUPERVISOR_FUZZ_EXAMPLES", "50"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Invalid bodies must be refused. Not so for the query: it carries text only, so a
# string parameter "made" null, false or a list (a repeated key, the last one wins)
# arrives as a valid string.
BODY_CHECKS = [negative_data_rejection]
OPERATIONS = sorted(
    (method.upper(), path)
    for path, methods in api.get_openapi_schema()["paths"].items()
    for method in methods
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fuzz_source(live_server):
    """A source holding every scope, with the shared scenarios sent through the API and
    evaluated, so path parameters can name real tasks and flags."""
    source, token = do_create_source("fuzzer", scopes=",".join(Source.SCOPES))
    for path in CONTRACT_SCENARIOS:
        response = requests.post(
            f"{live_server.url}/api/v1/events",
            json=load_scenario(path),
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
    evaluate(source.namespace_id, clock.now())
    source.token = token
    return source


@pytest.fixture(autouse=True)
def _no_ingest_rate_limit(settings):
    # The fuzzer sends more than a source may per minute; the limit has its own tests.
    limits = getattr(settings, "SUPERVISOR_RATE_LIMITS", None)
    if limits and "ingest" in limits:
        settings.SUPERVISOR_RATE_LIMITS = {**limits, "ingest": (limits["ingest"][0], "0")}


@pytest.fixture
def served_schema(live_server):
    # Too many events or bytes is refused with 413 (contract §1), a rejection too.
    rejections = [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
    config = schemathesis.Config.from_dict(
        {"checks": {"negative_data_rejection": {"expected-statuses": rejections}}}
    )
    return schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json", config=config)


def _real_ids(case_strategy, operation, source):
    """Half the cases name a real task or flag in the path instead of a made-up one."""
    names = {p.name for p in operation.path_parameters}
    if "task_id" in names:
        real = list(Task.objects.filter(known=True).values_list("task_id", flat=True))
        key = "task_id"
    elif "flag_id" in names:
        real = list(Flag.objects.values_list("pk", flat=True))
        key = "flag_id"
    else:
        return case_strategy
    assert real, f"the seed data has no {key} to aim at"

    def aim(pair):
        case, value = pair
        case.path_parameters = {**(case.path_parameters or {}), key: value}
        return case

    return st.one_of(case_strategy, st.tuples(case_strategy, st.sampled_from(real)).map(aim))


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_generated_requests_get_no_server_error(
    live_server, served_schema, fuzz_source, method, path
):
    operation = served_schema[path][method]
    # The token is fixed, not generated: a request is refused for its data, not its auth.
    headers = {"Authorization": f"Bearer {fuzz_source.token}"}
    cases = st.one_of(
        *(
            _real_ids(operation.as_strategy(mode, headers=headers), operation, fuzz_source)
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        )
    )
    checks = CHECKS + (BODY_CHECKS if operation.body else [])
    statuses: Counter = Counter()
    failures: dict[str, str] = {}
    session = requests.Session()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def send(case):
        response = case.call(base_url=live_server.url, session=session)
        statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=checks)
        except (Failure, FailureGroup) as found:
            for failure in getattr(found, "exceptions", [found]):
                key = f"{response.status_code} {failure.title}"
                failures.setdefault(key, f"{failure.message}\n  {case.as_curl_command()}")

    started = time.monotonic()
    send()
    elapsed = time.monotonic() - started
    connections.close_all()
    requests_made = sum(statuses.values())
    server_errors = sum(n for status, n in statuses.items() if status >= 500)
    print(
        f"\n{method} {path}: {requests_made} requests in {elapsed:.1f}s, "
        f"{server_errors} server errors, statuses {dict(sorted(statuses.items()))}"
    )
    assert not failures, "\n\n".join(f"{k}\n  {v}" for k, v in failures.items())
    # Hypothesis stops early only when it runs out of distinct inputs; no operation here
    # has so few, so every configured example is a request made.
    assert requests_made >= EXAMPLES
