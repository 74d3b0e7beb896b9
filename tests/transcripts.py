"""Synthetic Claude Code transcripts and Codex rollouts, in the shapes the tools write
(see tests/fixtures/README.md), for the watcher's tests: as many lines as a test
needs, each line's message id known in advance."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _at(i: int) -> str:
    return (T0 + timedelta(seconds=i)).isoformat().replace("+00:00", "Z")


def claude_lines(session: str, turns: int, *, start: int = 0, blocks: int = 1) -> list[str]:
    """`turns` turns of a Claude Code session: a user line, then an assistant response
    written as `blocks` lines (usage growing on each, the stop reason on the last)."""
    lines = []
    for t in range(start, start + turns):
        lines.append(json.dumps({
            "type": "user", "uuid": f"{session}-u{t}", "sessionId": session, "cwd": "/w",
            "timestamp": _at(2 * t), "isSidechain": False,
            "message": {"role": "user", "content": f"question {t} of {session}"}}))
        for b in range(blocks):
            last = b == blocks - 1
            lines.append(json.dumps({
                "type": "assistant", "uuid": f"{session}-a{t}-{b}", "sessionId": session,
                "cwd": "/w", "timestamp": _at(2 * t + 1), "requestId": f"req-{session}-{t}",
                "message": {
                    "id": f"msg-{session}-{t}", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": f"answer {t} part {b}"}],
                    "stop_reason": "end_turn" if last else None,
                    "usage": {"input_tokens": 10, "output_tokens": 5 * (b + 1),
                              "cache_read_input_tokens": 100}}}))
    return lines


def claude_ids(session: str, turns: int, *, start: int = 0, blocks: int = 1) -> set[str]:
    return {f"{session}-u{t}" for t in range(start, start + turns)} | {
        f"{session}-a{t}-{b}" for t in range(start, start + turns) for b in range(blocks)}


def codex_lines(session: str, turns: int, *, start: int = 0) -> list[str]:
    """A Codex rollout (its meta first when `start` is 0), then per turn a context,
    the user's message, the answer and its token count (after the answer, as Codex
    writes it). Turn t's messages are on lines 4t + 3 and 4t + 4."""
    lines = [] if start else [json.dumps({"timestamp": _at(0), "type": "session_meta",
                                          "payload": {"id": session, "cwd": "/w",
                                                      "cli_version": "0.53.0",
                                                      "originator": "codex_cli_rs"}})]
    for t in range(start, start + turns):
        total = 30 * (t + 1)
        lines += [
            json.dumps({"timestamp": _at(3 * t), "type": "turn_context",
                        "payload": {"cwd": "/w", "model": "gpt-5-codex"}}),
            json.dumps({"timestamp": _at(3 * t + 1), "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": f"question {t}"}]}}),
            json.dumps({"timestamp": _at(3 * t + 2), "type": "response_item", "payload": {
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": f"answer {t}"}]}}),
            json.dumps({"timestamp": _at(3 * t + 2), "type": "event_msg", "payload": {
                "type": "token_count", "info": {
                    "total_token_usage": {"input_tokens": total, "output_tokens": total // 3},
                    "last_token_usage": {"input_tokens": 30, "output_tokens": 10}}}}),
        ]
    return lines


def codex_ids(turns: int) -> set[str]:
    return {f"line-{4 * t + n}" for t in range(turns) for n in (3, 4)}
