"""The one way a USD figure is written, on every surface (CLI tables, the import
summary, the HTML pages, the resumption context): a figure that differs from one
surface to the next, or reads $0 when nobody knows the price, makes users distrust
every figure.

* ``$2.5000``: the cost, every priced usage included;
* ``$2.5000+``: at least that much: some usage has no known price (set one with
  ``$CONVLOG_PRICES`` or ``prices=``);
* ``unknown``: there is usage, and no price is known for any of it;
* ``-``: nothing to price (no usage was recorded).
"""

from __future__ import annotations

UNKNOWN = "unknown"
NOTHING = "-"
LEGEND = ("($X+ : at least that much, some usage has no known price; unknown: no price "
          "known; set prices with $CONVLOG_PRICES)")


def usd_text(cost: float | None, incomplete: bool = False) -> str:
    """`cost` (USD, None when no price applied) as every surface shows it;
    `incomplete`: some usage in it has no known price."""
    if cost is None:
        return UNKNOWN if incomplete else NOTHING
    return f"${cost:,.4f}" + ("+" if incomplete else "")
