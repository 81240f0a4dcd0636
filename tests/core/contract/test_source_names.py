"""Supervisor's own source names: the internal source of a namespace is never one made
by hand, and a source made by hand under such a name before they were kept is renamed."""

import importlib

import pytest
from django.apps import apps

from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import internal_source
from supervisor.core.models import Change, Namespace, Source
from tests.support.cast import ADMIN, login_as

pytestmark = pytest.mark.django_db

renaming = importlib.import_module("supervisor.core.migrations.0018_reserved_source_names")


def test_the_internal_source_is_never_a_source_made_by_hand_under_its_name():
    prod = Namespace.objects.create(name="prod")
    # Made before the name was kept (do_create_source does not check names).
    taken, _ = do_create_source("supervisor@prod", "evil")
    with pytest.raises(RuntimeError, match="'supervisor@prod' is a source made by hand"):
        internal_source(prod)
    taken.refresh_from_db()
    assert taken.namespace.name == "evil" and not taken.internal


def test_the_internal_source_is_made_once_per_namespace():
    prod = Namespace.objects.create(name="prod")
    first = internal_source(prod)
    assert internal_source(prod) == first
    assert (first.name, first.namespace, first.internal) == ("supervisor@prod", prod, True)


def test_sources_made_by_hand_under_an_internal_name_are_renamed_and_it_is_recorded():
    prod = Namespace.objects.create(name="prod")
    own = internal_source(prod)
    taken, _ = do_create_source("supervisor@prod-2", "evil")
    lookalike, _ = do_create_source("Supervisor@x", "x")
    do_create_source("renamed-Supervisor@x", "x")  # the first new name is taken
    kept, _ = do_create_source("fleet", "fleet")

    renaming.rename_sources_under_kept_names(apps, None)

    names = dict(Source.objects.values_list("pk", "name"))
    assert names[taken.pk] == "renamed-supervisor@prod-2"
    assert names[lookalike.pk] == "renamed-Supervisor@x-2"
    assert names[own.pk] == "supervisor@prod" and names[kept.pk] == "fleet"
    changes = Change.objects.filter(kind="source.renamed").order_by("subject_id")
    assert [(c.subject_id, c.payload["previous"]) for c in changes] == [
        ("renamed-Supervisor@x-2", "Supervisor@x"),
        ("renamed-supervisor@prod-2", "supervisor@prod-2"),
    ]
    assert internal_source(Namespace.objects.get(name="evil")).internal


def test_the_rename_is_in_the_audit_with_the_old_name_and_why(client):
    do_create_source("supervisor@x", "x")
    renaming.rename_sources_under_kept_names(apps, None)
    login_as(client, ADMIN)
    html = client.get("/audit/?kind=admin").content.decode()
    assert "Renamed source" in html and "renamed-supervisor@x" in html
    assert "(was supervisor@x: names starting with &#x27;supervisor@&#x27; are" in html
