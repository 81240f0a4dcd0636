"""Fixtures for the pages: a viewer, an operator who may act, and flagged data."""

import pytest
from django.contrib.auth.models import Permission

from tests.support.scenarios import load_own


@pytest.fixture
def viewer(user):
    """A logged-in user without the act permission (the `user` fixture)."""
    return user


@pytest.fixture
def acting(user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    return user


@pytest.fixture
def three_levels(source):
    """Lead → release-plan → schema-audit → index-check; release-plan flagged thrice."""
    return load_own(source, "three-levels.json")
