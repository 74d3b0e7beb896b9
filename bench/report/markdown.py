"""Markdown pieces every block is made of: tables and figures formatted one way.

Why: the generated blocks sit side by side in the documentation; one set of helpers keeps
their numbers (significant digits, thousands separators, ``1.23x``, ``met``) and tables
alike, whichever family of benches a block belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def num(x: float, digits: int = 3) -> str:
    """A figure with about ``digits`` significant digits, thousands separated."""
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    if abs(x) < 1:
        return f"{x:.{digits}g}"
    decimals = max(0, digits - 1 - int(f"{abs(x):e}".split("e")[1]))
    return f"{x:,.{decimals}f}"


def ms(x: float) -> str:
    return f"{num(x)} ms"


def ratio(x: float) -> str:
    return f"{x:.2f}x"


def met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]],
          right: Sequence[bool] | None = None) -> str:
    aligns = right if right is not None else [i > 0 for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |",
             "| " + " | ".join("---:" if a else "---" for a in aligns) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def k(n: float) -> str:
    """1000 -> 1k, 100000 -> 100k."""
    return f"{n / 1000:g}k" if n >= 1000 else f"{n:g}"
