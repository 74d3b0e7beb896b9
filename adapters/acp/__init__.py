"""convlog for the Agent Client Protocol: the `convlog acp` proxy, and a helper for
agents written in Python with the SDK.

Needs the optional extra: ``pip install 'convlog[acp]'`` (the
`agent-client-protocol` SDK, import name `acp`). `import convlog` never needs it.

    wire.py        hardened newline-delimited JSON-RPC frames (the SDK's Transport seam)
    downstream.py  the real agent: its process and the SDK connection to it
    turns.py       one prompt turn assembled from streamed updates into two messages
    native.py      the updates of a turn kept as the agent sent them (the messages' `raw`)
    queue.py       one prompt turn at a time per session, in the order they came
    replay.py      a stored conversation as `session/update` notifications
    catalog.py     capabilities added to initialize, agent names, session/list
    sessions.py    client ids <-> conversations <-> agent sessions; tiered attach
    recorder.py    the proxy's writes (one `append_turn` per turn)
    proxy.py       the method handlers of both sides
    run.py         serving on stdio, shutdown
    helper.py      `AgentSessions`: session/load and the id mapping for Python agents

Also here:
- `checks`: the checks of what a client sends to the methods the proxy serves itself.
- `lifecycle`: session/close, delete, fork, and the facts an agent reports (title,
  context window).
- `preamble`: the host's system prompt in a prompt, recorded as the preamble, not as
  dialogue.

May import: the public facade (`import convlog`), the application services
(`convlog.services`), domain and projection types, and the `acp` SDK. It is an
integration room: never storage or the views, and no events written around the
services. The proxy receives the application (`Proxy(app)`, services.application)
and builds its host API over it; `AgentSessions`, handed a host's log, reaches it with
`convlog.services.log.application(log)`. Never `.store` / `.writer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convlog.domain.errors import ConvlogError

EXTRA_HINT = "the ACP proxy needs the 'acp' extra: pip install 'convlog[acp]'"


def require_sdk() -> None:
    """Fail with one clear error when the ACP SDK is not installed."""
    try:
        import acp  # noqa: F401
    except ImportError:
        raise ConvlogError(EXTRA_HINT) from None


require_sdk()

if TYPE_CHECKING:
    from convlog.acp.helper import AgentSessions, Loaded
    from convlog.acp.proxy import Proxy
    from convlog.acp.run import run_stdio


_LAZY = {"Proxy": "convlog.acp.proxy", "run_stdio": "convlog.acp.run",
         "AgentSessions": "convlog.acp.helper", "Loaded": "convlog.acp.helper"}


def __getattr__(name: str) -> Any:
    """The public names load on first use (the SDK and pydantic are heavy)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'convlog.acp' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name]), name)


__all__ = ["AgentSessions", "Loaded", "Proxy", "run_stdio"]
