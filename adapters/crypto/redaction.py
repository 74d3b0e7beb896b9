"""A scrubber for secrets that end up in conversations: `redact_secrets(text)`.

Agents read files, print environments and echo configuration; the keys they see land
in the transcript, and an append-only log would keep them for ever. This replaces the
common secret shapes with ``[REDACTED:<kind>]`` before anything is stored (pass it as
``convlog.open(redact=convlog.redact_secrets)``; off by default). The replacement
has no quote or backslash, so secrets inside JSON strings (tool arguments) leave
valid JSON behind.

Shapes are those the providers document (prefixes and lengths); generic text (hex
hashes, UUIDs, ordinary URLs, words like "task-based") is left alone. It is a net,
not a guarantee: a secret with no recognisable shape passes through.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", re.S)),
    ("anthropic-key", re.compile(r"\bsk-ant-[a-z]{3,6}\d{2}-[A-Za-z0-9_-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    ("slack-webhook", re.compile(
        r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
_AWS_SECRET = re.compile(
    r"(?i)(aws_secret_access_key|secret_access_key|aws_secret)(\W{1,4})([A-Za-z0-9/+=]{40})\b")
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^\s:/@\"']+:)([^\s@/\"']+)(@)")


def redact_secrets(text: str) -> str:
    """`text` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text:
        return text
    for kind, pattern in _PATTERNS:
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    text = _AWS_SECRET.sub(lambda m: f"{m[1]}{m[2]}[REDACTED:aws-secret-key]", text)
    text = _BEARER.sub(lambda m: f"{m[1]}[REDACTED:bearer-token]", text)
    return _URL_PASSWORD.sub(lambda m: f"{m[1]}[REDACTED:password]{m[3]}", text)
