"""Production settings: `check --deploy` is clean behind HTTPS, secrets come from the
environment or from *_FILE files, and the HTTPS answers carry HSTS and secure cookies."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json
from django.conf import settings
seen = {
    "secret_key": settings.SECRET_KEY,
    "database": settings.DATABASES["default"]["NAME"],
    "email_password": settings.MAILERS["default"]["OPTIONS"]["password"],
}
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()  # replaces the mailers: read above
client = Client()
plain = client.get("/login/")
secure = client.get("/login/", secure=True)
print(json.dumps({
    **seen,
    "plain": [plain.status_code, plain.get("Location")],
    "hsts": secure.get("Strict-Transport-Security"),
    "cookie": secure.cookies["csrftoken"].output(),
}))
"""


def manage(tmp_path, *args, **env):
    """manage.py in a clean environment: only what a production unit would set. A check
    fails on warnings too."""
    if args[0] == "check":
        args = (*args, "--fail-level", "WARNING")
    base = {
        "PATH": os.environ["PATH"],
        "SUPERVISOR_VAR_DIR": str(tmp_path / "var"),
        "ALLOWED_HOSTS": "testserver",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_behind_https(tmp_path):
    key = secrets.token_urlsafe(50)
    done = manage(tmp_path, "check", "--deploy", SECRET_KEY=key, SUPERVISOR_HTTPS="1")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "no issues" in done.stdout


def test_check_deploy_names_what_plain_http_lacks(tmp_path):
    done = manage(tmp_path, "check", "--deploy", SECRET_KEY=secrets.token_urlsafe(50))
    assert done.returncode != 0
    for warning in ["security.W004", "security.W008", "security.W012", "security.W016"]:
        assert warning in done.stderr


def test_secrets_are_read_from_files_and_https_answers_are_hardened(tmp_path):
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    key = secrets.token_urlsafe(50)
    (secret_dir / "key").write_text(key + "\n")  # as editors and `echo` leave them
    (secret_dir / "mail").write_text("smtp-pass\n")
    db_path = tmp_path / "file-named.sqlite3"
    (secret_dir / "db").write_text(str(db_path))
    done = manage(
        tmp_path,
        "shell",
        "-c",
        PROBE,
        SECRET_KEY_FILE=str(secret_dir / "key"),
        EMAIL_HOST_PASSWORD_FILE=str(secret_dir / "mail"),
        SUPERVISOR_SQLITE_PATH_FILE=str(secret_dir / "db"),
        SUPERVISOR_HTTPS="1",
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["secret_key"] == key
    assert seen["email_password"] == "smtp-pass"
    assert seen["database"] == str(db_path)
    # Plain HTTP is sent to HTTPS; HTTPS answers carry HSTS; cookies are TLS-only.
    assert seen["plain"] == [301, "https://testserver/login/"]
    assert seen["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert "Secure" in seen["cookie"] and "SameSite=Lax" in seen["cookie"]
    # The key was not written to var/: the file was the only source.
    assert not (tmp_path / "var" / "secret_key").exists()


OUTBOUND_PROBE = """
import json
from django.conf import settings
from supervisor.connectors.webhook.connector import WebhookConnector
from supervisor.core.contract.connectors import SettingsError
from supervisor.notify.channels import target_refusal

def webhook(url):
    try:
        WebhookConnector.check_settings({"url": url, "secret": "0123456789abcdef"})
    except SettingsError as exc:
        return str(exc)
    return None

print(json.dumps({
    "allow_private": settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE,
    "webhook_loopback": webhook("http://127.0.0.1:8001/"),
    "webhook_metadata": webhook("http://169.254.169.254/"),
    "channel_private": target_refusal("apprise", "json://10.0.0.8/hook"),
}))
"""


def test_outbound_requests_to_private_addresses_are_refused_by_default_in_production(tmp_path):
    done = manage(
        tmp_path,
        "shell",
        "-c",
        OUTBOUND_PROBE,
        SECRET_KEY=secrets.token_urlsafe(50),
        SUPERVISOR_HTTPS="1",
    )
    assert done.returncode == 0, done.stderr
    production = json.loads(done.stdout.strip().splitlines()[-1])
    assert production["allow_private"] is False
    assert production["webhook_loopback"] == (
        "url: 127.0.0.1 is a loopback address, allowed only with "
        "SUPERVISOR_OUTBOUND_ALLOW_PRIVATE=1"
    )
    assert production["channel_private"] == (
        "its host is a private address, allowed only with SUPERVISOR_OUTBOUND_ALLOW_PRIVATE=1"
    )
    assert production["webhook_metadata"] == (
        "url: 169.254.169.254 is a link-local address, where cloud metadata services "
        "answer, never allowed"
    )


def test_outbound_requests_to_loopback_are_allowed_by_the_embedded_defaults(tmp_path):
    """`make run`'s demo receiver and the tests' receivers are on loopback."""

    def allowed(**env) -> str:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import supervisor.settings as s; print(s.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE)",
            ],
            cwd=ROOT,
            env={"PATH": os.environ["PATH"], "SUPERVISOR_VAR_DIR": str(tmp_path / "var"), **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert allowed() == "True"
    assert allowed(SUPERVISOR_HTTPS="1") == "False"
    assert allowed(SUPERVISOR_HTTPS="1", SUPERVISOR_OUTBOUND_ALLOW_PRIVATE="1") == "True"
