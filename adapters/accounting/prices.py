"""USD per message from a maintained offline price table, overridable by the host.

The table is `genai-prices` (bundled data, correct offline). Looking a price up
through its generic API costs ~140 us, so each model is resolved ONCE into
per-million-token rates, which the views apply in SQL (convlog.projections.usage).
A model the table does not know has no rates: the views record a null cost and a
flag for it, never zero.

Host overrides (its own prices, e.g. for a private deployment) win over the table:
pass ``prices={"model": ModelPrice(...)}`` to `convlog.open`, or point
``$CONVLOG_PRICES`` at a JSON file ``{"model": {"input_per_mtok": 1.0, ...}}`` so
that every process (host and CLI) prices the same way; a running process reads the
file again once it changed. Every figure stores the version of the table that
produced it (``genai-prices 0.2.3`` or ``host``), and the views reprice every figure
when the table in force changes (convlog.views.pricing).
"""

from __future__ import annotations

import hashlib
import os
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from convlog.domain.errors import InvalidInput

ENV_VAR = "CONVLOG_PRICES"



class ModelPrice(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """USD per million tokens. Cache prices default to the input price."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is not None and not 0 <= value < float("inf"):
                raise InvalidInput("must be a finite price >= 0", field=name)


def load_overrides(path: str | Path) -> dict[str, ModelPrice]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read price overrides: {exc.strerror}", where=str(path)
                           ) from None
    try:
        return msgspec.json.decode(data, type=dict[str, ModelPrice])
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc), where=str(path)) from None
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"not JSON: {exc}", where=str(path)) from None


class PriceTable:
    """Per-model rates for the views' ``model_prices`` table.

    genai-prices has tiered prices for some models (a higher rate once a prompt passes
    e.g. 200k tokens); the views apply the BASE tier, and those figures carry the
    version ``genai-prices X (base tier)`` so nobody mistakes them for exact."""

    def __init__(self, overrides: dict[str, ModelPrice] | None = None):
        self._host = dict(overrides or {})
        self._env_path = os.environ.get(ENV_VAR)
        self._file_seen: tuple[int, int, int] | None = _signature(self._env_path)
        self.overrides = {**(load_overrides(self._env_path) if self._env_path else {}),
                          **self._host}
        from importlib.metadata import version  # ~4 MiB of imports: only when pricing

        self.version = f"genai-prices {version('genai-prices')}"
        self.fingerprint = self._fingerprint()
        """Changes when the table or the overrides do: the views then reprice."""
        self._resolved: dict[str, tuple[ModelPrice, str] | None] = {}
        self._lock = threading.Lock()

    def _fingerprint(self) -> str:
        return hashlib.sha1(msgspec.json.encode(
            [self.version, sorted(self.overrides.items())])).hexdigest()[:16]

    def reload_if_changed(self) -> bool:
        """Read ``$CONVLOG_PRICES``'s file again if it changed since it was read (a
        long-running host then prices with the file in force, as a new CLI process
        does); True when it did. A file that became unreadable or invalid raises."""
        if self._env_path is None:
            return False
        seen = _signature(self._env_path)
        if seen == self._file_seen:
            return False
        self.overrides = {**load_overrides(self._env_path), **self._host}
        self._file_seen = seen
        self.fingerprint = self._fingerprint()
        return True

    def rates(self, model: str) -> tuple[ModelPrice, str] | None:
        """(rates, price version) for `model`, or None when no price is known."""
        own = self.overrides.get(model)
        if own is not None:
            return own, "host"
        with self._lock:
            if model not in self._resolved:
                self._resolved[model] = _lookup(model, self.version)
            return self._resolved[model]


def _signature(path: str | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of the price file: its content changed when this
    does. None when there is no file to read."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _rate(value: Any) -> tuple[float | None, bool]:
    """(USD per million tokens, whether it was tiered) from a genai-prices price."""
    if value is None:
        return None, False
    if isinstance(value, Decimal | int | float):
        return float(value), False
    base = getattr(value, "base", None)  # TieredPrices: use the base tier
    return (None if base is None else float(base)), True


def _lookup(model: str, table_version: str) -> tuple[ModelPrice, str] | None:
    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    try:
        found = calc_price(GenaiUsage(input_tokens=1, output_tokens=1), model).model_price
    except LookupError:
        return None
    rates = {name: _rate(getattr(found, name, None)) for name in
             ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")}
    tiered = any(t for _, t in rates.values())
    price = ModelPrice(
        input_per_mtok=rates["input_mtok"][0] or 0.0,
        output_per_mtok=rates["output_mtok"][0] or 0.0,
        cache_read_per_mtok=rates["cache_read_mtok"][0],
        cache_write_per_mtok=rates["cache_write_mtok"][0])
    return price, f"{table_version} (base tier)" if tiered else table_version
