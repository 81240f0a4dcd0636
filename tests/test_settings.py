"""Settings: importing them writes nothing, every variable goes through the same
helpers, and a bad value names its variable."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from supervisor import settings as module

ROOT = Path(__file__).resolve().parents[1]


def python(code, tmp_path, **env):
    """CODE in a fresh interpreter whose var/ folder does not exist yet."""
    base = {"PATH": os.environ["PATH"], "SUPERVISOR_VAR_DIR": str(tmp_path / "var")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_importing_the_settings_and_the_celery_app_writes_nothing(tmp_path):
    done = python("import supervisor.settings, supervisor.celery", tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_starting_process_makes_var_and_one_key_that_the_next_reads(tmp_path):
    code = (
        "import django; django.setup(); "
        "from django.conf import settings; print(settings.SECRET_KEY)"
    )
    env = {"DJANGO_SETTINGS_MODULE": "supervisor.settings"}
    first, second = python(code, tmp_path, **env), python(code, tmp_path, **env)
    assert first.returncode == 0, first.stderr
    key = tmp_path / "var" / "secret_key"
    assert first.stdout.strip() == second.stdout.strip() == key.read_text().strip()
    assert len(first.stdout.strip()) >= 50
    assert key.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "var" / "static").is_dir()


def test_a_bad_value_stops_the_import_and_names_its_variable(tmp_path):
    done = python("import supervisor.settings", tmp_path, SUPERVISOR_SWEEP_INTERVAL="fast")
    assert done.returncode != 0
    assert "SUPERVISOR_SWEEP_INTERVAL='fast': expected a number" in done.stderr
    assert not (tmp_path / "var").exists()


@pytest.mark.parametrize(
    ("helper", "value", "said"),
    [
        (module.env_int, "ten", "SUPERVISOR_TEST_VALUE='ten': expected a whole number"),
        (module.env_int, "1.5", "SUPERVISOR_TEST_VALUE='1.5': expected a whole number"),
        (module.env_float, "soon", "SUPERVISOR_TEST_VALUE='soon': expected a number"),
        (module.env_bool, "maybe", "SUPERVISOR_TEST_VALUE='maybe': expected one of"),
    ],
)
def test_each_helper_names_the_variable_of_a_bad_value(monkeypatch, helper, value, said):
    monkeypatch.setenv("SUPERVISOR_TEST_VALUE", value)
    with pytest.raises(ImproperlyConfigured, match=said.replace("(", r"\(").replace(".", r"\.")):
        helper("SUPERVISOR_TEST_VALUE", 0)


@pytest.mark.parametrize(
    ("value", "parsed"),
    [("", 7), ("  ", 7), ("1", True), ("Yes", True), ("on", True), ("0", False), ("off", False)],
)
def test_a_switch_is_on_off_or_its_default(monkeypatch, value, parsed):
    monkeypatch.setenv("SUPERVISOR_TEST_VALUE", value)
    assert module.env_bool("SUPERVISOR_TEST_VALUE", 7) == parsed


def test_an_unreadable_secret_file_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("SUPERVISOR_TEST_VALUE_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="SUPERVISOR_TEST_VALUE_FILE: cannot read"):
        module.env("SUPERVISOR_TEST_VALUE")


def test_every_variable_is_read_through_the_helpers():
    source = (ROOT / "supervisor" / "settings.py").read_text()
    helpers = source[: source.index("BASE_DIR =")]
    assert "os.environ" not in source.replace(helpers, "")
    for conversion in ("int(env(", "float(env(", "bool(env("):
        assert conversion not in source
