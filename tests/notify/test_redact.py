"""Each common secret shape is redacted; ordinary words are left alone."""

import pytest

from supervisor.notify.redact import MARK, redact

SECRETS = {
    "openai": "use sk-proj-AbCdEf0123456789XyZaBcDeF for the call",
    "anthropic": "key sk-ant-api03-abcdefghijklmnop_QRST",
    "github": "pushed with ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "slack": "bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "aws": "AKIAIOSFODNN7EXAMPLE is the id",
    "jwt": "Authorization: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "password_pair": "login with password=hunter2-but-longer now",
    "token_pair": 'config {"token": "abc123def456ghi"}',
    "api_key_pair": "API_KEY: 9f8e7d6c5b4a",
    "bearer": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwx'",
    "url_password": "postgres://app:s3cr3tpass@db.internal/app",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----",
    "openssh": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----"
    ),
}
VALUES = [
    "AbCdEf0123456789XyZaBcDeF",
    "abcdefghijklmnop_QRST",
    "0123456789abcdefghijABCDEFGHIJ012345",
    "abcdefghijklmnop",
    "AbCdEfGhIjKlMnOp",
    "AKIAIOSFODNN7EXAMPLE",
    "dozjgNryP4J3jVmNHl0w5N",
    "hunter2",
    "abc123def456ghi",
    "9f8e7d6c5b4a",
    "abcdefghijklmnopqrstuvwx",
    "s3cr3tpass",
    "MIIEowIBAAKCAQEA",
    "b3BlbnNzaC1rZXktdjEAAAAA",
]


@pytest.mark.parametrize("name", SECRETS)
def test_each_secret_shape_is_redacted(name):
    out = redact(SECRETS[name])
    assert MARK in out
    assert not any(value in out for value in VALUES), out


def test_the_name_of_a_pair_stays_to_say_what_was_there():
    assert redact("password=hunter2") == f"password={MARK}"


def test_ordinary_text_is_unchanged():
    text = "The task skipped the token-bucket test; see the password reset page at https://x.io/a"
    assert redact(text) == text
