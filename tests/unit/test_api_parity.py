"""The public API is restated in several classes (the log, its handle, their asyncio
twins, the HTTP clients and their conversations): every operation they share must
take the same parameters, so an option cannot land in one and not the others.

Compared with `inspect.signature`: each parameter's name, kind, default and type
(as written, `convlog.` prefixes aside), and the return type between twins. What is
allowed to differ is listed here, each with its reason: a new difference is a
decision made in this file, not an accident.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.messages import Message
from convlog.http.aclient import AsyncClient, AsyncRemoteConversation
from convlog.http.client import Client, RemoteConversation
from convlog.services.aio import AsyncConversationHandle, AsyncConversationLog
from convlog.services.handle import ConversationHandle
from convlog.services.log import ConversationLog
from convlog.services.options import LogOptions

Param = tuple[str, str, str, str]

CONSTRUCTORS = {"with_options", "close", "conversation", "get"}  # twins' own types
NOT_ON_THE_HANDLE = {  # operations of the log taking a key that a handle does not repeat
    "exists": "a handle exists by construction",
    "can_resume": "a catalog question, asked of the log",
    "get": "returns a handle",
    "conversation": "returns a handle",
    "state": "a property of the handle (`conv.state`)",
    "live_items": "the SDK session stores' read path (issue 30), asked of the log",
    "live_json": "the Google ADK service's read path (issue 30), asked of the log",
    "known_message_ids": "an importer's lookup of many ids, asked of the log",
    "record_injection": "for hosts running the tiers themselves; `resume()` records it",
}
ON_THE_HANDLE_AS = {  # a log's parameter a handle names otherwise (its own key is taken)
    "fork": {"new_key": "key"},  # conv.fork(at=..., key=NEW): the brief of issue 47
}
HTTP_EXTRA_PARAMS = {  # parameters only a remote call has
    "append_turn": {"idempotency_key": "HTTP retries replay by Idempotency-Key"},
}
HTTP_MISSING_PARAMS = {  # parameters a remote call cannot take
    "context": {"summarizer": "a Python callable cannot cross HTTP",
                "summarizer_name": "goes with the summarizer"},
    "compact": {"model": "the server counts with its own tokenizer",
                "through": "the client passes its plan's own `through_message_id`"},
    "set_store_retention_policy": {"pinned": "over HTTP a policy is set on purpose; the "
                                             "server's own options are its flags"},
}
ASYNC_TYPES = {  # parameter types the asyncio twins widen
    "summarizer": ("Summarizer|None", "Summarizer|AsyncSummarizer|None"),
    "summarizer!": ("Summarizer|str", "Summarizer|AsyncSummarizer|str"),  # a required one
}


def norm(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return re.sub(r"\bconvlog\.|\s", "", text)


def params(fn: Callable[..., Any], *, drop: int = 0) -> list[Param]:
    """(name, kind, default, type) of each parameter after self and `drop` more."""
    found = list(inspect.signature(fn).parameters.values())
    if found and found[0].name in ("self", "cls"):
        found = found[1:]
    return [(p.name, p.kind.name, repr(p.default), norm(p.annotation))
            for p in found[drop:]]


def returns(fn: Callable[..., Any]) -> str:
    return norm(inspect.signature(fn).return_annotation)


def operations(cls: type) -> dict[str, Any]:
    return {name: getattr(cls, name) for name in dir(cls)
            if not name.startswith("_") and callable(getattr(cls, name))}


def widened(sync: list[Param]) -> list[Param]:
    """The parameters as the asyncio twin declares them."""
    return [(n, k, d, next((w for s, w in (ASYNC_TYPES.get(n, ("", "")),
                                            ASYNC_TYPES.get(f"{n}!", ("", ""))) if t == s), t))
            for n, k, d, t in sync]


def test_the_async_log_mirrors_the_log() -> None:
    sync, twin = operations(ConversationLog), operations(AsyncConversationLog)
    assert sorted(set(sync) - set(twin)) == []  # every operation has its coroutine
    assert sorted(set(twin) - set(sync)) == ["open"]
    for name in sorted(set(sync) & set(twin) - CONSTRUCTORS):
        assert params(twin[name]) == widened(params(sync[name])), name
        assert returns(twin[name]) == returns(sync[name]), name
    for name in ("conversation", "get"):
        assert params(twin[name]) == params(sync[name]), name
    assert params(twin["open"]) == params(ConversationLog.__init__)[:-1]  # but master_key


def test_a_handle_is_the_log_with_its_key() -> None:
    log, handle = operations(ConversationLog), operations(ConversationHandle)
    keyed = {n for n, f in log.items() if params(f) and params(f)[0][0] == "key"}
    assert sorted(keyed - set(handle)) == sorted(NOT_ON_THE_HANDLE)
    assert set(handle) - keyed == set()  # `state` is a property: not an operation here
    for name in sorted(set(handle)):
        renamed = ON_THE_HANDLE_AS.get(name, {})
        assert params(handle[name]) == [(renamed.get(n, n), *rest) for n, *rest
                                        in params(log[name], drop=1)], name
        assert returns(handle[name]) == returns(log[name]), name


def test_the_async_handle_mirrors_the_handle() -> None:
    sync, twin = operations(ConversationHandle), operations(AsyncConversationHandle)
    assert set(twin) - set(sync) == {"state"}  # a coroutine: a property cannot await
    assert set(sync) - set(twin) == set()
    for name in sorted(sync):
        assert params(twin[name]) == widened(params(sync[name])), name
        assert returns(twin[name]) == returns(sync[name]), name


@pytest.mark.parametrize(("blocking", "asyncio"), [
    (Client, AsyncClient), (RemoteConversation, AsyncRemoteConversation)])
def test_the_async_http_client_mirrors_the_blocking_one(blocking: type, asyncio: type) -> None:
    sync, twin = operations(blocking), operations(asyncio)
    assert set(sync) - {"send"} == set(twin) - {"send"}
    for name in sorted(set(sync) - {"send"}):
        assert params(twin[name]) == widened(params(sync[name])), name
        expected = returns(sync[name]).replace(
            "Generator[EventOut,None,None]", "AsyncGenerator[EventOut,None]").replace(
            "RemoteConversation", "AsyncRemoteConversation")
        assert returns(twin[name]) == expected, name


@pytest.mark.parametrize(("remote", "local", "drop"), [
    (Client, ConversationLog, 0), (RemoteConversation, ConversationHandle, 0)])
def test_the_http_client_takes_what_the_library_takes(remote: type, local: type,
                                                      drop: int) -> None:
    theirs, ours = operations(remote), operations(local)
    for name in sorted(set(theirs) & set(ours) - {"close", "get"}):
        expected = [p for p in params(ours[name], drop=drop)
                    if p[0] not in HTTP_MISSING_PARAMS.get(name, {})]
        got = [p for p in params(theirs[name]) if p[0] not in HTTP_EXTRA_PARAMS.get(name, {})]
        assert got == expected, name
        assert [p[0] for p in params(theirs[name]) if p not in expected] == list(
            HTTP_EXTRA_PARAMS.get(name, {})), name


OPENERS: dict[str, Callable[..., Any]] = {
    "convlog.open": convlog.open, "convlog.open_async": convlog.open_async,
    "AsyncConversationLog.open": AsyncConversationLog.open,
    "ConversationLog": ConversationLog.__init__,
}


@pytest.mark.parametrize("name", sorted(OPENERS))
def test_every_opener_takes_exactly_the_log_options(name: str) -> None:
    given = [p for p in params(OPENERS[name]) if p[0] not in ("url", "master_key")]
    fields = [(f.name, "KEYWORD_ONLY", repr(f.default), norm(f.type))
              for f in msgspec_fields(LogOptions)]
    assert given == fields


def msgspec_fields(cls: type) -> list[Any]:
    import msgspec

    annotations = {k: v for c in reversed(cls.__mro__)
                   for k, v in getattr(c, "__annotations__", {}).items()}
    return [type("F", (), {"name": f.name, "default": f.default, "type": annotations[f.name]})
            for f in msgspec.structs.fields(cls)]


def non_default_options(tmp_path: Path) -> LogOptions:
    return LogOptions(create=False, prices={"m": convlog.ModelPrice(input_per_mtok=1,
                                                                      output_per_mtok=2)},
                      views=str(tmp_path / "v.duckdb"), preload_tokenizer=False,
                      max_injected_blocks_in_history=1, context_window_depth=2,
                      redact=str.upper)


async def _open_async(opener: Callable[..., Any], options: dict[str, Any]) -> LogOptions:
    async with await opener("memory://", **options) as log:
        found: LogOptions = log.sync.options
        return found


def test_every_opener_passes_every_option_on(tmp_path: Path) -> None:
    import asyncio

    import msgspec

    wanted = non_default_options(tmp_path)
    given = msgspec.structs.asdict(wanted)
    for opener in (convlog.open, ConversationLog):
        with opener("memory://", **given) as log:
            assert log.options == wanted, opener
    for coroutine in (convlog.open_async, AsyncConversationLog.open):
        assert asyncio.run(_open_async(coroutine, given)) == wanted, coroutine


def test_the_message_builders_take_every_field_of_a_message() -> None:
    import msgspec

    # a record (`record=`) is no message: the SDK stores build one as a `Message`
    # themselves (convlog.domain.records), a host's builders never do
    fields = {f.name for f in msgspec.structs.fields(Message)} - {"role", "content", "record"}
    for builder in (convlog.user, convlog.assistant, convlog.tool):
        assert {p[0] for p in params(builder)} - {"content"} == fields, builder.__name__
        assert all(p[1] in ("KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD") for p in params(builder))


def test_no_public_operation_takes_untyped_keywords() -> None:
    loose = [f"{cls.__name__}.{name}" for cls in (
        ConversationLog, ConversationHandle, AsyncConversationLog, AsyncConversationHandle,
        Client, AsyncClient, RemoteConversation, AsyncRemoteConversation)
        for name, fn in operations(cls).items()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD
               for p in inspect.signature(fn).parameters.values())]
    assert loose == []
