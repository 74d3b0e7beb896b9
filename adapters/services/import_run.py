"""The import driver: every conversation an importer reads becomes ONE atomic batch.

Idempotency comes from the log itself: message ids are taken from the records, and a
batch skips the ids the conversation already holds, so importing a file twice adds
nothing and a file that grew adds only its new records. Usage repeated across the
records of one provider response (same `response_id`) is counted once in the summary,
as the views count it; tokens and cost are those of the messages added by this run.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from convlog.accounting.prices import PriceTable
from convlog.domain.conversation import AppendMessages, StartSession
from convlog.domain.errors import ConvlogError, InvalidInput
from convlog.services.importing import (
    ImportedConversation,
    Importer,
    ImportFailed,
    ImportFailure,
)

if TYPE_CHECKING:
    from convlog.services.log import ConversationLog


class ImportSummary(msgspec.Struct, kw_only=True):
    """What an import did. `conversations` were read whole; `messages` were added
    now and `messages_known` were already recorded (a re-import adds 0)."""

    format: str
    files: int = 0
    bytes: int = 0
    conversations: int = 0
    conversations_changed: int = 0
    messages: int = 0
    messages_known: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_models: list[str] = []
    """Models with usage but no known price: `cost_usd` is a lower bound then."""
    skipped: dict[str, int] = {}
    """Records read but not imported as messages, by record type (never fatal)."""
    failures: list[ImportFailure] = []
    seconds: float = 0.0


class ImportProgress(msgspec.Struct, frozen=True, kw_only=True):
    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int
    conversations: int
    messages: int


ProgressCallback = Callable[[ImportProgress], None]


def collect_files(importer: Importer, paths: Sequence[str | Path]) -> list[tuple[Path, int]]:
    """Every file to read, with its size; a path that does not exist is an error
    before anything is written."""
    found: list[tuple[Path, int]] = []
    for given in paths:
        path = Path(given).expanduser()
        if not path.exists():
            raise InvalidInput("no such file or directory", where=str(path))
        for file in importer.files(path):
            try:
                found.append((file, file.stat().st_size))
            except OSError as exc:
                raise InvalidInput(f"cannot read: {exc.strerror}", where=str(file)) from None
    return found


def run_import(log: ConversationLog, importer: Importer, paths: Sequence[str | Path], *,
               prices: PriceTable, keep_going: bool = False,
               progress: ProgressCallback | None = None) -> ImportSummary:
    """Import `paths` with `importer`. Without `keep_going` the first unreadable
    conversation raises ImportFailed (the ones before it stay recorded, each whole);
    with it, every failure is collected in the summary and the rest is imported."""
    started = time.perf_counter()
    files = collect_files(importer, paths)
    summary = ImportSummary(format=importer.name, files=len(files),
                            bytes=sum(size for _, size in files))
    skipped: Counter[str] = Counter()
    unpriced: set[str] = set()
    done = 0
    if progress is not None:  # the totals, before the first file is read
        progress(ImportProgress(bytes_done=0, bytes_total=summary.bytes, files_done=0,
                                files_total=len(files), conversations=0, messages=0))
    for number, (file, size) in enumerate(files, start=1):
        try:
            for item in importer.conversations(file):
                failure = item if isinstance(item, ImportFailure) else _record(
                    log, item, summary, prices, unpriced)
                if isinstance(item, ImportedConversation):
                    skipped.update(item.skipped)
                if failure is not None:
                    if not keep_going:
                        raise ImportFailed(failure.error)
                    summary.failures.append(failure)
        except OSError as exc:  # a file that vanished or cannot be read mid-way
            failure = ImportFailure(source=str(file), error=f"{file}: {exc.strerror or exc}")
            if not keep_going:
                raise ImportFailed(failure.error) from None
            summary.failures.append(failure)
        done += size
        if progress is not None:
            progress(ImportProgress(bytes_done=done, bytes_total=summary.bytes,
                                    files_done=number, files_total=len(files),
                                    conversations=summary.conversations,
                                    messages=summary.messages))
    summary.skipped = dict(skipped.most_common())
    summary.unpriced_models = sorted(unpriced)
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def _record(log: ConversationLog, conv: ImportedConversation, summary: ImportSummary,
            prices: PriceTable, unpriced: set[str]) -> ImportFailure | None:
    """One conversation, one batch: the start (a no-op when it exists) and every
    message; known ids are skipped by the log."""
    if not conv.messages:
        conv.skipped["empty conversation"] += 1
        return None
    start = StartSession(agent=conv.agent, title=conv.title, workspace=conv.workspace,
                         metadata=conv.metadata)
    try:
        # Known ids are looked up first, so a re-import neither counts the tokens of
        # messages it will not write nor loses a write to the index's conflict.
        known = log.known_message_ids(conv.key, [m.id for m in conv.messages])
        fresh = [m for m in conv.messages if m.id not in known]
        result = log.execute(conv.key, [start, AppendMessages(messages=fresh)]) if fresh else None
    except InvalidInput as exc:  # decided inside the write: nothing of it was recorded
        return ImportFailure(source=conv.source, key=conv.key,
                             error=f"{conv.source}: conversation {conv.key!r}: {exc}")
    except ConvlogError as exc:
        raise ImportFailed(f"{conv.source}: conversation {conv.key!r}: {exc}") from None
    summary.conversations += 1
    if result is None:
        summary.messages_known += len(known)
        return None
    summary.messages += len(result.appended)
    summary.messages_known += len(known) + len(result.skipped)
    if result.appended:
        summary.conversations_changed += 1
        _count_usage(conv, frozenset(result.appended), summary, prices, unpriced)
    return None


def _count_usage(conv: ImportedConversation, appended: Iterable[str], summary: ImportSummary,
                 prices: PriceTable, unpriced: set[str]) -> None:
    """Tokens and USD of the messages added now, each provider response once (the
    first record that carries it, as in the views)."""
    new = set(appended)
    seen: set[str] = set()
    for message in conv.messages:
        response = message.response_id
        first = response is None or response not in seen
        if response is not None:
            seen.add(response)
        usage = message.usage
        if usage is None or not first or message.id not in new:
            continue
        summary.input_tokens += usage.input_tokens
        summary.output_tokens += usage.output_tokens
        summary.cache_read_tokens += usage.cache_read_tokens
        summary.cache_write_tokens += usage.cache_write_tokens
        if message.cost_usd is not None:
            summary.cost_usd += float(message.cost_usd)
            continue
        if not any(getattr(usage, name) for name in usage.__struct_fields__):
            continue  # e.g. Claude Code's "<synthetic>" error messages: nothing to price
        found = prices.rates(message.model) if message.model else None
        if found is None:
            unpriced.add(message.model or "(no model)")
            continue
        rate = found[0]
        summary.cost_usd += (
            usage.input_tokens * rate.input_per_mtok
            + usage.output_tokens * rate.output_per_mtok
            + usage.cache_read_tokens * _or(rate.cache_read_per_mtok, rate.input_per_mtok)
            + usage.cache_write_tokens * _or(rate.cache_write_per_mtok, rate.input_per_mtok)
        ) / 1e6


def _or(rate: float | None, default: float) -> float:
    return default if rate is None else rate
