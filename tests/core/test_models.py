"""Storage holds what Supervisor accepts, one rule for every stored text:
an index or a unique constraint covers a text only where the text's bound keeps its
row within PostgreSQL's btree limit (2,704 bytes, 4 bytes a character at worst);
a text without such a bound is indexed by its hash (Task.title_hash). A bounded column
holds the longest value Supervisor puts there."""

import hashlib

import pytest
from django.apps import apps
from django.db import models

from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import do_request_action, internal_source
from supervisor.core.contract.source_names import internal_source_name
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Namespace, Task
from tests.support.storage import delegated

BTREE_ROW = 2704  # bytes, PostgreSQL's "btree version 4 maximum"
TUPLE_HEADER = 8 + 8  # an index tuple's header and its null bitmap, rounded up
UTF8_MOST = 4  # bytes a character may take


def worst_bytes(field: models.Field) -> float:
    """The most bytes the field's value may take in an index row."""
    if isinstance(field, models.ForeignKey):
        return 8
    if isinstance(field, models.CharField):
        return 4 + UTF8_MOST * field.max_length  # a varlena header, then the text
    if isinstance(field, (models.TextField, models.JSONField, models.BinaryField)):
        return float("inf")
    return 8  # numbers, times, booleans


def covered_texts():
    """(model, index or constraint) for every index and unique constraint the project's
    models declare (core's and notify's), with the fields it covers."""
    for model in apps.get_models():
        if model._meta.app_label not in ("core", "notify"):
            continue
        for field in model._meta.concrete_fields:
            if field.unique and not field.primary_key:
                yield model, f"{field.name} (unique)", [field]
            elif field.db_index and not field.primary_key:
                yield model, f"{field.name} (index)", [field]
        for item in [*model._meta.indexes, *model._meta.constraints]:
            names = getattr(item, "fields", ())
            if names:
                fields = [model._meta.get_field(name.lstrip("-")) for name in names]
                yield model, item.name, fields
            else:
                assert not getattr(item, "expressions", ()), f"{item.name}: read its expressions"


def test_every_index_row_fits_a_btree_row_at_its_columns_bounds():
    too_big = [
        f"{model.__name__}.{name}: {sum(worst_bytes(f) for f in fields) + TUPLE_HEADER} bytes"
        for model, name, fields in covered_texts()
        if sum(worst_bytes(f) for f in fields) + TUPLE_HEADER > BTREE_ROW
    ]
    assert not too_big, "index these over a hash of the text: " + "; ".join(too_big)


def test_the_title_index_is_over_its_hash_as_postgresql_writes_it():
    [index] = [i for i in Task._meta.indexes if i.name == "task_parent_title_hash"]
    assert index.fields == ["parent_thread", "title_hash"]
    key = "Porter la boucle \u00e0 \u5b9f\u884c"
    assert Task.hash_title(key) == hashlib.md5(key.encode("utf-8")).hexdigest()
    assert Task._meta.get_field("title_hash").default == Task.hash_title("")


@pytest.mark.django_db
def test_the_internal_source_of_a_namespace_with_the_longest_name_is_stored():
    namespace = Namespace.objects.create(name="n" * 200)  # the form's bound
    source = internal_source(namespace)
    source.refresh_from_db()
    assert source.name == internal_source_name("n" * 200)


@pytest.mark.django_db
def test_an_action_by_a_source_with_the_longest_name_is_stored():
    named, _ = do_create_source("s" * 200, scopes="ingest,read,act")  # the form's bound
    named.connector = "webhook"  # nothing is sent: the action is only recorded here
    named.connector_settings = {"url": "http://127.0.0.1:9/", "secret": "s" * 24}
    named.save()
    apply_events(named, [delegated("e1", "task:1", "Port")])
    task = Task.objects.get(task_id="task:1")
    action, _ = do_request_action(task, "continue", actor=f"source:{named.name}")
    action.refresh_from_db()
    assert action.actor_name == f"source:{named.name}"
