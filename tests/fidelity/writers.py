"""The writers of the matrix: each writes the one conversation (tests/fidelity/
conversation.py) through its surface, the way a host of that surface does, with a
restart between turns where the surface has processes, and reads it back its own way
(`native`).

A writer returns `Written`: where the log is, the conversation's key, what it sent
(as facts) and what its own read gave back. Writers that run processes or SDKs live
in their own modules (writers_acp, writers_sdks, writers_files) and register here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import convlog
from convlog.domain.content import Content, ImagePart, TextPart
from tests.fidelity.conversation import (
    ANSWERS,
    ARGS,
    ASK,
    PNG_URL,
    RESULTS,
    TITLE,
    TOOL,
    USAGE,
    Fact,
    Facts,
    sent,
)
from tests.fidelity.readers import messages


@dataclass
class Written:
    writer: str
    url: str
    key: str
    sent: Facts
    native: Facts
    workdir: Path


Writer = Callable[[Path], Written]


def turns() -> list[list[convlog.Message]]:
    """The conversation as library messages, a list per turn (a turn per process)."""
    out = []
    for turn in range(3):
        content: Content = ASK[turn] if turn else [
            TextPart(text=ASK[0]), ImagePart(ref=PNG_URL, media_type="image/png")]
        calling = convlog.Message(role="assistant", content="", model="gpt-4o",
                                  tool_calls=[convlog.ToolCall(
                                      id="call-2" if turn == 2 else "call-1", name=TOOL,
                                      arguments=json.dumps(ARGS[turn]))])
        batch = [convlog.Message(role="user", content=content), calling]
        if turn < 2:
            batch += [convlog.Message(role="tool", content=RESULTS[turn], tool_call_id="call-1"),
                      convlog.Message(role="assistant", content=ANSWERS[turn], model="gpt-4o",
                                      usage=convlog.Usage(input_tokens=USAGE[turn][0],
                                                          output_tokens=USAGE[turn][1]))]
        out.append(batch)
    return out


def library(tmp: Path) -> Written:
    """`convlog.open()`: a process per turn (the log opened again for each)."""
    url, key = f"sqlite:///{tmp / 'library.db'}", "fidelity:library"
    for i, batch in enumerate(turns()):
        with convlog.open(url) as log:
            if i == 0:
                log.conversation(key, user="u1", agent="weather", title=TITLE)
            log.append_turn(key, batch)
    with convlog.open(url) as log:
        native = messages(log, key)
    return Written("library", url, key, sent(Fact("image", PNG_URL)), native, tmp)


def http(tmp: Path) -> Written:
    """`convlog.Client` against a real `convlog serve` process; a client per turn.
    Its own read is `GET .../messages` (with the conversation's info for the title)."""
    from convlog.http.client import RemoteConversation
    from tests.httpserver import spawn_serve

    url, key = f"sqlite:///{tmp / 'http.db'}", "fidelity:http"
    with spawn_serve(url, tmp) as (base, _):
        for i, batch in enumerate(turns()):
            with convlog.Client(base) as client:
                if i == 0:
                    client.conversation(key, user="u1", agent="weather", title=TITLE)
                RemoteConversation(client, key).append_turn(batch)
        with convlog.Client(base) as client:
            remote = RemoteConversation(client, key)
            native = Facts()
            from tests.fidelity.readers import message_facts

            for m in remote.messages():
                message_facts(native, m)
            info = remote.info()
            if info.title:
                native.add(Fact("title", str(info.title)))
    return Written("http", url, key, sent(Fact("image", PNG_URL)), native, tmp)


def _writers() -> dict[str, Writer]:
    from tests.fidelity import writers_acp as acp
    from tests.fidelity import writers_files as files
    from tests.fidelity import writers_sdks as sdks

    return {
        "library": library,
        "http": http,
        "import-claude-code": files.import_claude_code,
        "import-openai": files.import_openai,
        "import-codex": files.import_codex,
        "watch": files.watch,
        "acp": acp.acp_proxy,
        "openai-agents": sdks.openai_agents,
        "claude-agent-sdk": sdks.claude_agent_sdk,
        "google-adk": sdks.google_adk,
    }


WRITERS: dict[str, Writer] = _writers()
"""Every writer, by the name the matrix and the rules use."""
