"""USD per message from a maintained offline price table, overridable by the host.

The table is `genai-prices` (bundled data, correct offline). Looking a price up
through its generic API costs ~140 us, so each model is resolved ONCE and its
per-million-token rates are applied with plain arithmetic; tiered prices (by
context size) go through genai-prices' own calculation. A model the table does not
know is remembered as unknown: the projection then records a null cost and a flag.

Host overrides (its own prices, e.g. for a private deployment) win over the table:
pass ``prices={"model": ModelPrice(...)}`` to `convlog.open`, or point
``$CONVLOG_PRICES`` at a JSON file ``{"model": {"input_per_mtok": 1.0, ...}}`` so
that every process (host and CLI) prices the same way. Every figure stores the
version of the table that produced it (``genai-prices 0.2.3`` or ``host``).
"""

from __future__ import annotations

import os
import threading
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path
from typing import Any

import msgspec

from convlog.domain.content import Usage
from convlog.domain.errors import InvalidInput
from convlog.projections.usage import Quote

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

    def usd(self, usage: Usage) -> float:
        read = self.cache_read_per_mtok if self.cache_read_per_mtok is not None else (
            self.input_per_mtok)
        write = self.cache_write_per_mtok if self.cache_write_per_mtok is not None else (
            self.input_per_mtok)
        return (usage.input_tokens * self.input_per_mtok + usage.output_tokens
                * self.output_per_mtok + usage.cache_read_tokens * read
                + usage.cache_write_tokens * write) / 1_000_000


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
    """Callable as a `Pricer`: (model, usage) -> Quote, or None when unknown."""

    def __init__(self, overrides: dict[str, ModelPrice] | None = None):
        env_path = os.environ.get(ENV_VAR)
        self.overrides = {**(load_overrides(env_path) if env_path else {}),
                          **(overrides or {})}
        self.version = f"genai-prices {version('genai-prices')}"
        self._resolved: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, model: str, usage: Usage) -> Quote | None:
        own = self.overrides.get(model)
        if own is not None:
            return Quote(own.usd(usage), "host")
        rates = self._resolve(model)
        if rates is None:
            return None
        if isinstance(rates, ModelPrice):
            return Quote(rates.usd(usage), self.version)
        from genai_prices import Usage as GenaiUsage

        total = rates.calc_price(GenaiUsage(
            input_tokens=usage.input_tokens + usage.cache_read_tokens
            + usage.cache_write_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens))["total_price"]
        return Quote(float(total), self.version)

    def _resolve(self, model: str) -> Any:
        if model in self._resolved:
            return self._resolved[model]
        with self._lock:
            if model not in self._resolved:
                self._resolved[model] = _lookup(model)
            return self._resolved[model]


def _lookup(model: str) -> Any:
    """Linear rates as a ModelPrice, genai-prices' own object for tiered prices, or
    None for a model the table does not know."""
    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    try:
        found = calc_price(GenaiUsage(input_tokens=1, output_tokens=1), model).model_price
    except LookupError:
        return None
    rates = {name: getattr(found, name, None) for name in
             ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")}
    if all(v is None or isinstance(v, Decimal | int | float) for v in rates.values()):
        return ModelPrice(
            input_per_mtok=float(rates["input_mtok"] or 0),
            output_per_mtok=float(rates["output_mtok"] or 0),
            cache_read_per_mtok=None if rates["cache_read_mtok"] is None
            else float(rates["cache_read_mtok"]),
            cache_write_per_mtok=None if rates["cache_write_mtok"] is None
            else float(rates["cache_write_mtok"]))
    return found
