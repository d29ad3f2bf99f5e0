"""Units and the Term: a computed figure with the arithmetic and the sources behind it."""
from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9
TFLOP = 1e12
HOURS_PER_MONTH = 730    # 24 x 365 / 12: the month every monthly figure uses


@dataclass(frozen=True)
class Term:
    """A computed figure and how: `formula` shows the arithmetic, `sources` the IDs behind it."""

    value: float | None
    formula: str
    sources: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"value": rounded(self.value), "formula": self.formula, "sources": list(self.sources)}


def rounded(x, nd: int = 4):
    if isinstance(x, float):
        if x != x or x in (math.inf, -math.inf):
            return None
        # four decimals for figures of 1 and above, four significant digits below (a cost per million
        # tokens of $0.02124 must not become $0.0212)
        return round(x, nd) if abs(x) >= 1 or x == 0 else float(f"{x:.{nd}g}")
    return x


def _gb(x: float) -> str:
    return f"{x / GB:,.2f} GB" if x < 100 * GB else f"{x / GB:,.0f} GB"

