"""How a log is opened: the options of `convlog.open`, `convlog.open_async` and
`AsyncConversationLog.open`, defined once.

Each opener keeps an explicit, typed signature (what an editor shows and mypy
checks), and hands the log ONE `LogOptions` value, so the log reads every option from
one place. tests/unit/test_api_parity.py checks that every opener takes exactly these
fields, with these defaults, and passes each one on: a new option is a field here,
and the test names each signature that still lacks it.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from convlog.accounting.prices import ModelPrice
from convlog.domain.errors import InvalidInput
from convlog.domain.memory import check_depth
from convlog.domain.numbers import whole_number
from convlog.domain.retention import RetentionPolicy, check_policy
from convlog.projections.memory import DEFAULT_CAP, DEFAULT_DEPTH, check_cap
from convlog.services.redacting import Redactor

ENV_CAP = "CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY"
ENV_DEPTH = "CONVLOG_CONTEXT_WINDOW_DEPTH"
RETENTION_ENV = {
    "archive_after_days": "CONVLOG_ARCHIVE_AFTER_DAYS",
    "erase_after_days": "CONVLOG_ERASE_AFTER_DAYS",
    "max_messages": "CONVLOG_MAX_MESSAGES",
    "max_bytes": "CONVLOG_MAX_BYTES",
}
"""The environment variables of a process's retention options (docs/settings.md)."""


def retention_options(given: dict[str, float | int | None], *, env: bool = True
                      ) -> RetentionPolicy | None:
    """The store retention policy a command-line process was given: each field from
    its flag (`given`, None: not given), else (`env`) its variable of
    `RETENTION_ENV`; None when neither gave any. A bad value is an InvalidInput
    naming the flag or variable."""
    fields: dict[str, float | int | None] = {}
    for name, var in RETENTION_ENV.items():
        value = given.get(name)
        if value is None and env and os.environ.get(var, "").strip():
            raw = os.environ[var].strip()
            number: float | int | None
            if name.startswith("max_"):
                number = whole_number(raw)
            else:
                try:
                    number = float(raw)
                except ValueError:
                    number = None
            if number is None:
                raise InvalidInput(f"must be a {'whole ' if name.startswith('max_') else ''}"
                                   f"number, not {raw!r}", field=var)
            value = number
        fields[name] = value
    if all(v is None for v in fields.values()):
        return None
    try:
        return check_policy(RetentionPolicy(**fields))  # type: ignore[arg-type]
    except InvalidInput as exc:
        flag = "--" + (exc.field or "").replace("_", "-")
        raise InvalidInput(exc.reason, field=flag) from None


def memory_policy(cap: int | None = None, depth: int | None = None) -> tuple[int, int]:
    """(max_injected_blocks_in_history, context_window_depth) of a command-line
    process (`convlog serve`, `convlog acp`, `record`...): the flags given, else
    $CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY / $CONVLOG_CONTEXT_WINDOW_DEPTH, else 3
    and 10. A bad value is an InvalidInput naming the flag or variable."""
    return (_setting(cap, ENV_CAP, "--max-injected-blocks-in-history", DEFAULT_CAP),
            _setting(depth, ENV_DEPTH, "--context-window-depth", DEFAULT_DEPTH))


def _setting(given: int | None, env: str, flag: str, default: int) -> int:
    if given is not None:
        where, value = flag, given
    elif os.environ.get(env, "").strip():
        raw = os.environ[env].strip()
        number = whole_number(raw)
        if number is None:
            raise InvalidInput(f"must be a whole number, not {raw!r}", field=env)
        where, value = env, number
    else:
        return default
    return check_cap(value, where) if env == ENV_CAP else check_depth(value, where)


class LogOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options of an open log (none is stored: they may differ between opens)."""

    create: bool = True
    """False: a missing SQLite file is an error instead of a new database."""
    prices: dict[str, ModelPrice] | None = None
    """Your own USD per million tokens for some models (they win over the bundled table)."""
    views: str | Path | None = None
    """The DuckDB file of read models (default: next to the database, convlog.duckdb)."""
    preload_tokenizer: bool = False
    """True: load the token counter in a background thread at open (~0.3 s, ~45 MiB),
    so the first context does not wait for it. Appends never count (a count is made
    when first needed: issue 45), so by default a process loads the counter only when
    it needs a count, and a process that only appends never loads it."""
    max_injected_blocks_in_history: int = DEFAULT_CAP
    """Memory blocks live in every context (0: a block lives for its own turn only)."""
    context_window_depth: int = DEFAULT_DEPTH
    """Turns before a memory id may be injected again (0: no cooldown)."""
    redact: Redactor | None = None
    """A ``str -> str`` function applied to every text a write stores (messages, memory
    blocks, summaries, errors) before anything is stored or counted
    (`convlog.redact_secrets` is the built-in scrubber); off by default."""

    def checked(self) -> LogOptions:
        """The options, with the memory rule's numbers checked (a typed error naming
        the option otherwise)."""
        check_cap(self.max_injected_blocks_in_history)
        check_depth(self.context_window_depth)
        return self
