"""convlog: an event-sourced conversation log for AI agent hosts.

    import convlog
    log = convlog.open()                       # $CONVLOG_URL, else sqlite:///./convlog.db
    conv = log.conversation("discord:thread:42", user="u1", agent="copilot")
    conv.append_turn([convlog.user("hi"), convlog.assistant("hello", model="gpt-4o")])

`await convlog.open_async()` gives the same API as coroutines.

This module is the public facade; the code behind it lives in rooms by role:

    services/     application services: log, handles, asyncio, the writer, resume
                  (services/resume/), context, input, the import driver
    storage/      eventsourcing application, msgspec mapper, sqlite / postgres / memory
    views/        DuckDB read models, analytics, telemetry, chart
    accounting/   token counting and prices
    crypto/       encryption at rest: keys, AES-GCM formats, per-user key ring, redaction
  entry points, each through the facade or the services (a test checks it):
    cli/          the `convlog` command and the demos
    acp/          the `convlog acp` proxy and `AgentSessions` (extra `[acp]`)
    http/         `convlog serve` and `convlog.Client` / `AsyncClient` (extra `[http]`)
    integrations/ session stores for the OpenAI Agents SDK, the Claude Agent SDK and
                  Google ADK
    importers/    other tools' history (Claude Code, OpenAI, Codex) -> conversations
    watch/        `convlog watch`: capture transcripts while other tools write them
    otel/         `convlog export --otel`: the log as OpenTelemetry spans
    html/         `convlog html` / `convlog report`: static pages (extra `[html]`)

Each room's `__init__.py` says what lives there and what it may import;
tests/unit/test_dependency_direction.py holds them to it.

Everything a host needs is imported from here; the rooms' module paths are not a
promise.

The asyncio API (`AsyncConversationLog`, `AsyncConversationHandle`), the HTTP clients
of `convlog serve` (`Client`, `AsyncClient`: they need `convlog[http]`) and
`__version__` load on first use: asyncio (with ssl) and importlib.metadata would otherwise add
~11 MiB to every synchronous host's memory and ~40 ms to its start.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlog.accounting.prices import ModelPrice
from convlog.crypto.errors import (
    BadKey,
    EncryptionKeyError,
    MissingKey,
    NotEncrypted,
    UnknownDataKey,
    WrongKey,
)
from convlog.crypto.keys import generate_key
from convlog.crypto.redaction import redact_secrets
from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.errors import (
    ArchivedConversation,
    CompactedMeanwhile,
    ConversationForgotten,
    ConvlogError,
    InvalidInput,
    SystemMessageRejected,
    UnknownConversation,
    UnknownUser,
)
from convlog.domain.memory import MemoryCooling
from convlog.domain.messages import Message
from convlog.domain.renamed import renamed
from convlog.domain.retention import CapReached, RetentionPolicy
from convlog.projections.context import Budget
from convlog.projections.memory import DEFAULT_CAP, DEFAULT_DEPTH
from convlog.projections.replay_views import ConversationView, RepairMark, ViewEntry
from convlog.projections.view_diff import MissingMessage, ViewDiff
from convlog.services.builders import assistant, tool, user
from convlog.services.compaction import Compaction, CompactionPlan
from convlog.services.context import Context
from convlog.services.fork import Forked
from convlog.services.handle import ConversationHandle
from convlog.services.import_run import ImportProgress, ImportSummary
from convlog.services.importing import ImportedConversation, Importer, ImportFailed, ImportFailure
from convlog.services.log import ConversationLog
from convlog.services.memory import MemoryBlock
from convlog.services.options import LogOptions
from convlog.services.privacy import ForgetResult
from convlog.services.redacting import Redactor
from convlog.services.results import AppendResult, ConversationInfo
from convlog.services.resume.resumption import ConversationPart, ResumptionContext
from convlog.services.resume.run import Attempt, ResumeOutcome, Tier, TierCall, TierFailed
from convlog.services.retention import RetentionAction, RetentionInForce, RetentionRun
from convlog.services.rewind import Rewound
from convlog.services.summary import ConversationSummary
from convlog.storage.errors import (
    ConcurrencyError,
    CorruptEvent,
    StorageError,
    StorageUnavailable,
    UnsupportedURL,
)
from convlog.views.analytics import CatalogRow, CostRow
from convlog.views.telemetry import TelemetryRow

if TYPE_CHECKING:
    from convlog.http.aclient import AsyncClient
    from convlog.http.client import Client
    from convlog.services.aio import AsyncConversationHandle, AsyncConversationLog

    __version__: str
    SessionInfo = ConversationInfo  # deprecated

RENAMED = {"SessionInfo": "ConversationInfo"}
"""Old public names, served with a DeprecationWarning (convlog.domain.renamed)."""
_renamed = renamed("convlog", RENAMED, globals())


def __getattr__(name: str) -> Any:
    """The lazily loaded names (PEP 562); each is loaded once, then a plain global.
    Old names (RENAMED) are served on every use, each time with its warning."""
    if name in RENAMED:
        return _renamed(name)
    if name in ("AsyncConversationLog", "AsyncConversationHandle"):
        from convlog.services import aio

        value: Any = getattr(aio, name)
    elif name == "Client":  # the HTTP clients: need the `http` extra (httpx)
        from convlog.http.client import Client

        value = Client
    elif name == "AsyncClient":
        from convlog.http.aclient import AsyncClient

        value = AsyncClient
    elif name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("convlog")
        except PackageNotFoundError:  # running from a source tree that is not installed
            value = "0.0.0+unknown"
    else:
        raise AttributeError(f"module 'convlog' has no attribute {name!r}")
    globals()[name] = value
    return value


def open(
    url: str | None = None,
    *,
    create: bool = True,
    prices: dict[str, ModelPrice] | None = None,
    views: str | Path | None = None,
    preload_tokenizer: bool = False,
    max_injected_blocks_in_history: int = DEFAULT_CAP,
    context_window_depth: int = DEFAULT_DEPTH,
    redact: Redactor | None = None,
) -> ConversationLog:
    """Open a conversation log. `url`: ``sqlite:///path``, a file path, ``memory://``,
    ``postgresql://...``; default ``$CONVLOG_URL``, else ``sqlite:///./convlog.db``.
    The options are `LogOptions`' fields (each documented there): `create=False`
    makes a missing SQLite file an error; `prices` your own USD per million tokens;
    `views` the DuckDB file of read models; `preload_tokenizer=True` loads the
    token counter in the background at open (by default it is loaded when a count is
    first needed; appends never count); `max_injected_blocks_in_history` (default 3) and
    `context_window_depth` (default 10) are the memory-block rule; `redact` a
    ``str -> str`` function applied to every text before it is stored
    (`convlog.redact_secrets` is the built-in scrubber).

    Encryption at rest: with ``CONVLOG_KEY`` or ``CONVLOG_KEY_FILE`` set, a new store
    is encrypted; an encrypted store needs its key (see docs/encryption.md)."""
    return ConversationLog.with_options(url, LogOptions(
        create=create, prices=prices, views=views, preload_tokenizer=preload_tokenizer,
        max_injected_blocks_in_history=max_injected_blocks_in_history,
        context_window_depth=context_window_depth, redact=redact))


async def open_async(
    url: str | None = None,
    *,
    create: bool = True,
    prices: dict[str, ModelPrice] | None = None,
    views: str | Path | None = None,
    preload_tokenizer: bool = False,
    max_injected_blocks_in_history: int = DEFAULT_CAP,
    context_window_depth: int = DEFAULT_DEPTH,
    redact: Redactor | None = None,
) -> AsyncConversationLog:
    """`open()` for asyncio hosts (same arguments): every method is a coroutine run off
    the event loop."""
    from convlog.services.aio import AsyncConversationLog

    return await AsyncConversationLog.with_options(url, LogOptions(
        create=create, prices=prices, views=views, preload_tokenizer=preload_tokenizer,
        max_injected_blocks_in_history=max_injected_blocks_in_history,
        context_window_depth=context_window_depth, redact=redact))


__all__ = [
    "AppendResult",
    "ArchivedConversation",
    "AsyncClient",
    "AsyncConversationHandle",
    "AsyncConversationLog",
    "Attempt",
    "BadKey",
    "Budget",
    "CapReached",
    "CatalogRow",
    "Client",
    "CompactedMeanwhile",
    "Compaction",
    "CompactionPlan",
    "ConcurrencyError",
    "Context",
    "ConversationForgotten",
    "ConversationHandle",
    "ConversationInfo",
    "ConversationLog",
    "ConversationPart",
    "ConversationSummary",
    "ConversationView",
    "ConvlogError",
    "CorruptEvent",
    "CostRow",
    "EncryptionKeyError",
    "ForgetResult",
    "Forked",
    "ImagePart",
    "ImportFailed",
    "ImportFailure",
    "ImportProgress",
    "ImportSummary",
    "ImportedConversation",
    "Importer",
    "InvalidInput",
    "LogOptions",
    "MemoryBlock",
    "MemoryCooling",
    "Message",
    "MissingKey",
    "MissingMessage",
    "ModelPrice",
    "NotEncrypted",
    "Redactor",
    "RepairMark",
    "ResumeOutcome",
    "ResumptionContext",
    "RetentionAction",
    "RetentionInForce",
    "RetentionPolicy",
    "RetentionRun",
    "Rewound",
    "StorageError",
    "StorageUnavailable",
    "SystemMessageRejected",
    "TelemetryRow",
    "TextPart",
    "ThinkingPart",
    "Tier",
    "TierCall",
    "TierFailed",
    "ToolCall",
    "ToolResultPart",
    "ToolUsePart",
    "UnknownConversation",
    "UnknownDataKey",
    "UnknownUser",
    "UnsupportedURL",
    "Usage",
    "ViewDiff",
    "ViewEntry",
    "WrongKey",
    "__version__",
    "assistant",
    "generate_key",
    "open",
    "open_async",
    "redact_secrets",
    "tool",
    "user",
]
