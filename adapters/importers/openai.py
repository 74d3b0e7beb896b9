"""OpenAI message lists: Chat Completions `messages` and Responses / Agents SDK items.

Accepted files:

- ``.json``: a JSON array of messages or items (one conversation), or an object with
  `messages` (or `items`, `input`) and optionally `id`, `model`, `usage`;
- ``.jsonl``: one such object per line (one conversation per line), or one message
  or item per line (the whole file is one conversation, e.g. an Agents SDK session
  dumped item by item).

The key is ``openai:<id>`` when the object has an `id`, else the file's name and a
short hash of its full path (``openai:chat-1a2b3c4d``, ``:<line>`` added for one
conversation per line), so two files of the same name never merge. Message ids are
the items' own `id`s, else their position (``m0``, ``m1``...), which an append-only
file keeps. A `usage` of the object goes on its last assistant message. A ``.json``
document is read whole (up to the line limit); JSON Lines are streamed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message
from convlog.importers.files import FileImporter
from convlog.importers.lines import decode, located, read_document, read_lines
from convlog.importers.responses import ApiUsage, Item, to_message, usage
from convlog.services.importing import ImportedConversation, ImportFailure


class Container(msgspec.Struct):
    messages: list[Item] | None = None
    items: list[Item] | None = None
    input: list[Item] | None = None
    id: str | None = None
    model: str | None = None
    usage: ApiUsage | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None


class Peek(msgspec.Struct):
    messages: msgspec.Raw = msgspec.Raw()
    items: msgspec.Raw = msgspec.Raw()
    input: msgspec.Raw = msgspec.Raw()


class OpenAIImporter(FileImporter):
    name = "openai"

    def wanted(self, path: Path) -> bool:
        return path.suffix in (".json", ".jsonl")

    def read(self, path: Path) -> Iterator[ImportedConversation | ImportFailure]:
        base = f"openai:{path.stem}-{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}"
        if path.suffix == ".jsonl":
            yield from self._jsonl(path, base)
        else:
            yield self._document(path, base)

    def _document(self, path: Path, base: str) -> ImportedConversation:
        data = read_document(path, self.max_line_bytes)
        if data.lstrip()[:1] == b"[":
            items = decode(data, list[Item], str(path))
            return _conversation(Container(items=items), base, str(path), path)
        return _conversation(decode(data, Container, str(path)), base, str(path), path)

    def _jsonl(self, path: Path, base: str
               ) -> Iterator[ImportedConversation | ImportFailure]:
        lines = read_lines(path, self.max_line_bytes)
        first = next(lines, None)
        if first is None:
            return
        number, raw = first
        peek = decode(raw, Peek, f"{path}:{number}")
        if not (peek.messages or peek.items or peek.input):  # one item per line
            yield self._items(path, base, first, lines)
            return
        for number, raw in _chain(first, lines):
            where = f"{path}:{number}"
            try:
                container = decode(raw, Container, where)
                yield _conversation(container, f"{base}:{number}", where, path)
            except InvalidInput as exc:
                yield ImportFailure(source=where, error=str(located(exc, where)))

    def _items(self, path: Path, base: str, first: tuple[int, bytes],
               rest: Iterator[tuple[int, bytes]]) -> ImportedConversation:
        conv = ImportedConversation(key=base, messages=[], origins=[], source=str(path),
                                    agent="openai", metadata={"source": "openai"})
        ids: set[str] = set()
        for number, raw in _chain(first, rest):
            where = f"{path}:{number}"
            try:
                message = to_message(decode(raw, Item, where), f"m{number}", conv.skipped)
            except InvalidInput as exc:
                raise located(exc, where) from None
            _add(conv, ids, message, where)
        return conv


def _chain(first: tuple[int, bytes], rest: Iterator[tuple[int, bytes]]
           ) -> Iterator[tuple[int, bytes]]:
    yield first
    yield from rest


def _conversation(container: Container, base: str, where: str, path: Path
                  ) -> ImportedConversation:
    items = container.messages or container.items or container.input or []
    metadata: dict[str, Any] = {"source": "openai", **(container.metadata or {})}
    if container.model:
        metadata["model"] = container.model
    conv = ImportedConversation(
        key=f"openai:{container.id}" if container.id else base, messages=[], origins=[],
        source=str(path), agent="openai", title=container.title, metadata=metadata)
    ids: set[str] = set()
    for i, item in enumerate(items):
        try:
            message = to_message(item, f"m{i}", conv.skipped, model=container.model)
        except InvalidInput as exc:
            raise exc.nested(f"messages[{i}]").located(where) from None
        _add(conv, ids, message, where)
    if container.usage is not None:
        _attach_usage(conv.messages, container)
    return conv


def _add(conv: ImportedConversation, ids: set[str], message: Message | None, where: str
         ) -> None:
    if message is None:
        return
    if message.id in ids:
        conv.skipped["duplicate record"] += 1
        return
    ids.add(message.id)
    conv.messages.append(message)
    conv.origins.append(where)


def _attach_usage(messages: list[Message], container: Container) -> None:
    assert container.usage is not None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            messages[i] = msgspec.structs.replace(
                messages[i], usage=usage(container.usage),
                model=messages[i].model or container.model)
            return
