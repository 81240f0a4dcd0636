"""The catalogue of flag kinds: every kind a rule can open is described there, whole."""

import importlib
import pkgutil

from supervisor.core import rules
from supervisor.core.flags import kinds as flag_kinds
from supervisor.core.flags.kinds import (
    ACTIONS,
    ANSWERS,
    CATALOGUE,
    KINDS,
    RANK,
    SUBJECTS,
    kind_of,
)
from supervisor.core.rules import RULES, source_silent


def rule_modules():
    """Every module under core/rules that names a KIND, listed in RULES or not: a new
    rule is caught before anyone wires it in."""
    for info in pkgutil.iter_modules(rules.__path__):
        module = importlib.import_module(f"{rules.__name__}.{info.name}")
        if hasattr(module, "KIND"):
            yield module


def test_every_kind_a_rule_can_open_is_in_the_catalogue_with_all_its_fields():
    kinds = {module.KIND for module in rule_modules()}
    assert source_silent.KIND in kinds
    assert kinds == set(KINDS)
    for kind in kinds:
        entry = CATALOGUE[kind]
        assert entry.kind == kind
        assert entry.subjects and entry.subjects <= SUBJECTS, kind
        assert entry.severity in RANK, kind
        assert entry.title and entry.meaning and entry.advice, kind
        assert entry.action in ACTIONS, kind
        assert entry.answered_by in ANSWERS, kind


def test_the_catalogue_lists_kinds_in_the_rules_order_then_source_silent():
    assert tuple(rule.KIND for rule in RULES) + (source_silent.KIND,) == KINDS


def test_critical_is_a_wrong_or_missing_result_with_the_parent():
    critical = {k for k, entry in CATALOGUE.items() if entry.severity == flag_kinds.CRITICAL}
    assert critical == {
        "stale_result",
        "undelivered_result",
        "never_delivered",
        "premature_completion",
        "failed_while_running",
        "completed_on_failure",
        "misrouted_wake",
    }


def test_a_kind_the_catalogue_does_not_know_reads_as_its_code_a_warning_to_explain():
    entry = kind_of("from_an_older_version")
    assert (entry.title, entry.severity, entry.advice, entry.action) == (
        "From an older version",
        "warning",
        "Explain, then resolve.",
        "explain",
    )
