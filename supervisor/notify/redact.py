"""Secrets out of every text that leaves Supervisor: API keys, tokens, passwords and
private keys in their common shapes become `[redacted]`. The page keeps the full text."""

from __future__ import annotations

import re

MARK = "[redacted]"

# Whole-match secrets: their shape alone says what they are.
_SHAPES = [
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
        re.S,
    ),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI / Anthropic style (sk-proj-, sk-ant-)
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWTs
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),  # GitLab
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API keys
    re.compile(r"\bsup_[A-Za-z0-9_-]{20,}"),  # Supervisor's own source tokens
]
# Name/value pairs: keep the name (it says what was there), drop the value.
_PAIR = re.compile(
    r"""(?ix)
    (\b(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|token|access[_-]?token
        |refresh[_-]?token|auth[_-]?token|api[_-]?key|apikey|access[_-]?key|private[_-]?key)
     ["']?\s*[:=]\s*)
    (["']?)([^\s"',;&]+)\2
    """
)
_BEARER = re.compile(r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{12,}")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)", re.I)


def redact(text: str | None) -> str:
    if not text:
        return text or ""
    for shape in _SHAPES:
        text = shape.sub(MARK, text)
    text = _PAIR.sub(lambda m: f"{m.group(1)}{MARK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{MARK}", text)
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MARK}{m.group(2)}", text)
