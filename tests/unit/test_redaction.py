"""The built-in secret scrubber, on real-shaped samples and on text it must leave alone.

The samples below are shaped like the real thing (prefix, alphabet, length) and are
not live credentials: they are made up for this test.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

import convlog
from convlog.domain.conversation import conversation_id
from convlog.services.log import application
from convlog.services.redacting import redact_message

SECRETS = {
    "openai-key": [
        "sk-proj-4f9Qx2LmZ8vT1bN7cR3eW6yU0aS5dF8gH2jK4lP9oI1uY7tR3eW6qA0zX5cV8bN2mL4kJ7hG",
        "sk-8jF3kLmN2pQrS4tUvW6xYz9AbCdEfGhIjKlMnOpQrStUvWx",
        "sk-svcacct-Zx8Cv7Bn6Mq5Wx4Er3Ty2Ui1Op0AsDfGhJkL",
    ],
    "anthropic-key": [
        "sk-ant-api03-Xy7_Zq2-Lm9Nb4Vc1Kx8Jh5Gf3Ds6Pa0Qw2Er4Ty7Ui9Op1As3Df5Gh8Jk0Lz2Xc4Vb6Nm8Qw"
        "-AbCdEfAA",
        "sk-ant-admin01-Qw2Er4Ty7Ui9Op1As3Df5Gh8Jk0Lz2Xc4Vb6Nm8",
    ],
    "google-api-key": ["AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"],
    "github-token": ["ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH"],
    "slack-token": ["xoxb-2048597431-1029384756102-AbCdEfGhIjKlMnOpQrStUvWx",
                    "xoxp-1234567890-1234567890-1234567890-abcdef0123456789abcdef0123456789"],
    "slack-webhook": [
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"],
    "stripe-key": ["sk_live_51HqLyjWDarjtT1zdp7dcXmjPqSFZ1qX8q7mA0B5Z",
                   "rk_test_4eC39HqLyjWDarjtT1zdp7dc"],
    "aws-access-key-id": ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"],
    "jwt": ["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
}

UNTOUCHED = [
    "Let's use a task-based approach; ask-me-anything sessions are risk-free.",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 and uuid 123e4567-e89b-12d3-a456-426614174000",
    "See https://example.com:8080/docs and http://localhost:3000/api?q=a@b",
    "email me at alice@example.com, or ssh git@github.com:org/repo.git",
    "The bearer of bad news arrived.",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "sk-short is not a key, nor is AKIA alone, nor ghp_short",
    "password: see the vault (no value here)",
]


@pytest.mark.parametrize(("kind", "secret"),
                         [(k, s) for k, items in SECRETS.items() for s in items])
def test_secrets_of_every_kind_are_replaced(kind: str, secret: str) -> None:
    text = f"config: {secret} (from .env)"
    out = convlog.redact_secrets(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert out.startswith("config: ") and out.endswith(" (from .env)")


def test_bearer_tokens_aws_secrets_private_keys_and_url_passwords() -> None:
    text = (
        "curl -H 'Authorization: Bearer 7f3a9c2e1b8d4f6a0c5e9b3d7a1f8e2c' https://api.x.io\n"
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u\n"
        "-----END OPENSSH PRIVATE KEY-----\n"
        "DATABASE_URL=postgresql://app:s3cr3t-P4ss@db.internal:5432/prod\n")
    out = convlog.redact_secrets(text)
    for secret in ("7f3a9c2e1b8d4f6a0c5e9b3d7a1f8e2c", "wJalrXUtnFEMI/K7MDENG",
                   "b3BlbnNzaC1rZXktdjEAAAAABG5v", "s3cr3t-P4ss"):
        assert secret not in out
    assert "Bearer [REDACTED:bearer-token]" in out
    assert "aws_secret_access_key = [REDACTED:aws-secret-key]" in out
    assert "[REDACTED:private-key]" in out
    assert "postgresql://app:[REDACTED:password]@db.internal:5432/prod" in out


@pytest.mark.parametrize("text", UNTOUCHED)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert convlog.redact_secrets(text) == text


def test_secrets_inside_json_arguments_leave_valid_json() -> None:
    args = json.dumps({"headers": {"Authorization": "Bearer 7f3a9c2e1b8d4f6a0c5e9b3d7a1f8e2c"},
                       "key": SECRETS["openai-key"][0],
                       "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n"
                              "-----END RSA PRIVATE KEY-----"})
    message = convlog.assistant([convlog.ToolUsePart(id="t", name="http", arguments=args)],
                                tool_calls=[convlog.ToolCall(id="c", name="x", arguments=args)])
    out = redact_message(convlog.redact_secrets, message)
    for arguments in (out.content[0].arguments, out.tool_calls[0].arguments):  # type: ignore[union-attr]
        parsed = json.loads(arguments)
        assert parsed["key"] == "[REDACTED:openai-key]"
        assert parsed["pem"] == "[REDACTED:private-key]"
        assert "7f3a9c2e" not in arguments


def test_a_hook_that_breaks_tool_arguments_is_refused() -> None:
    message = convlog.assistant([convlog.ToolUsePart(id="t", name="x", arguments='{"a": 1}')])
    with pytest.raises(convlog.InvalidInput, match="invalid JSON") as caught:
        redact_message(lambda text: text.replace("{", ""), message)
    assert caught.value.field == "content[0].arguments"


def test_the_hook_runs_before_storage() -> None:
    secret = SECRETS["github-token"][0]
    with convlog.open("memory://", redact=convlog.redact_secrets,
                      preload_tokenizer=False) as log:
        conv = log.conversation("k")
        conv.append_turn([
            convlog.user(f"my token is {secret}"),
            convlog.assistant([convlog.ThinkingPart(text=f"the user pasted {secret}"),
                               convlog.TextPart(text="noted")]),
            convlog.tool([convlog.ToolResultPart(tool_use_id="t", content=f"TOKEN={secret}")],
                         tool_call_id="t"),
        ])
        stored = b"".join(s.state for s in application(log).store.recorder.select_events(
            conversation_id("k")))
        assert secret.encode() not in stored
        assert b"[REDACTED:github-token]" in stored
    with convlog.open("memory://", preload_tokenizer=False) as log:  # off by default
        log.conversation("k").append(convlog.user(f"my token is {secret}"))
        assert log.messages("k")[0].content == f"my token is {secret}"


def test_the_hook_reaches_the_native_payload_kept_beside_the_message() -> None:
    """A surface's own payload (`raw`: an ACP turn's updates, an SDK's item) holds the
    same words as the message: every string in it passes the hook too (issue 41)."""
    secret = SECRETS["github-token"][0]
    with convlog.open("memory://", redact=convlog.redact_secrets,
                      preload_tokenizer=False) as log:
        log.conversation("k").append(convlog.assistant(f"TOKEN={secret}", raw={"acp": [
            {"sessionUpdate": "tool_call_update", "toolCallId": "t", "rawOutput": {
                "env": [f"GITHUB_TOKEN={secret}", 3, None, True]}}]}))
        stored = b"".join(s.state for s in application(log).store.recorder.select_events(
            conversation_id("k")))
        assert secret.encode() not in stored
        raw = log.messages("k")[0].raw
        assert raw == {"acp": [{"sessionUpdate": "tool_call_update", "toolCallId": "t",
                                "rawOutput": {"env": ["GITHUB_TOKEN=[REDACTED:github-token]",
                                                      3, None, True]}}]}


def test_the_hook_reaches_a_title_and_the_agents_payload_kept_with_it() -> None:
    from convlog.domain.conversation import RecordFact
    from convlog.domain.events import TitleChanged

    secret = SECRETS["github-token"][0]
    with convlog.open("memory://", redact=convlog.redact_secrets,
                      preload_tokenizer=False) as log:
        log.conversation("k")
        application(log).execute("k", [RecordFact(event=TitleChanged(
            at=datetime.now(UTC), title=f"about {secret}",
            update={"sessionUpdate": "session_info_update", "title": f"about {secret}"}))])
        stored = b"".join(s.state for s in application(log).store.recorder.select_events(
            conversation_id("k")))
        assert secret.encode() not in stored and b"[REDACTED:github-token]" in stored
