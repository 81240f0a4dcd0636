"""`manage.py create_source`."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from supervisor.core.access.sources import source_for_token
from supervisor.core.models import Change, Source

pytestmark = pytest.mark.django_db


def create(*args) -> str:
    out = io.StringIO()
    call_command("create_source", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


def test_the_printed_token_is_the_source_s_and_only_its_hash_is_stored():
    token = create("fleet", "--scopes", "ingest,act")
    source = Source.objects.get(name="fleet")
    assert source_for_token(token) == source
    assert token not in source.token_hash and source.scope_set == {"ingest", "act"}


def test_sources_share_a_namespace_when_told():
    create("origin", "--namespace", "install")
    create("remote", "--namespace", "install")
    assert {s.namespace.name for s in Source.objects.all()} == {"install"}


def test_detection_overrides_are_kept():
    create("fleet", "--detection", '{"stuck_after": 120, "delivery_grace": 10}')
    assert Source.objects.get(name="fleet").settings == {"stuck_after": 120, "delivery_grace": 10}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x", "--scopes", "ingest,admin"], "unknown scope(s) admin"),
        (["x", "--detection", "{"], "--detection is not JSON"),
        (["x", "--detection", '{"stuck": 1}'], "keys among"),
        (["x", "--detection", '{"stuck_after": -1}'], "positive numbers"),
        (["x", "--connector", "carrier-pigeon"], "does not exist"),
        (["x", "--connector", "webhook", "--connector-settings", "{"], "not JSON"),
        (["x", "--connector", "webhook", "--connector-settings", '{"url": "ftp://x"}'], "url"),
    ],
)
def test_bad_arguments_are_clear_errors(args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        create(*args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["supervisor@prod", "--namespace", "evil"], "'supervisor@prod' is reserved: names"),
        (["Supervisor@prod"], "'Supervisor@prod' is reserved: names starting with"),
        (["\uff53upervisor@prod"], "is reserved: names starting with 'supervisor@'"),
        (["demo"], "'demo' is reserved for the simulated fleet's source"),
        (["fleet", "--namespace", "Demo"], "'Demo' is reserved for the simulated fleet"),
    ],
)
def test_names_supervisor_keeps_for_its_own_sources_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        create(*args)
    assert not Source.objects.exists()


def test_a_name_is_taken_once():
    create("fleet")
    with pytest.raises(CommandError, match="exists already"):
        create("fleet")


def test_a_connector_is_bound_with_its_settings():
    hook = {"url": "https://ops.example/hook", "secret": "0123456789abcdef"}
    create("fleet", "--connector", "webhook", "--connector-settings", json.dumps(hook))
    source = Source.objects.get(name="fleet")
    assert (source.connector, source.connector_settings) == ("webhook", hook)


def test_creating_a_source_is_in_the_change_log():
    create("fleet", "--scopes", "ingest,act", "--namespace", "install")
    change = Change.objects.get(kind="source.created")
    assert (change.subject_type, change.subject_id) == ("source", "fleet")
    assert change.payload["actor"] == "system" and change.payload["namespace"] == "install"
    assert change.payload["scopes"] == "ingest,act"
