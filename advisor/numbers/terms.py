"""Units and the Term: a computed figure with the arithmetic and the sources behind it."""
from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9
TFLOP = 1e12


@dataclass(frozen=True)
class Term:
    """A computed figure and how: `formula` shows the arithmetic, `sources` the IDs behind it."""

    value: float | None
    formula: str
    sources: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"value": _r(self.value), "formula": self.formula, "sources": list(self.sources)}


def _r(x, nd: int = 4):
    if isinstance(x, float):
        if x != x or x in (math.inf, -math.inf):
            return None
        return round(x, nd) if abs(x) >= 1e-3 or x == 0 else float(f"{x:.4g}")
    return x


def _gb(x: float) -> str:
    return f"{x / GB:,.2f} GB" if x < 100 * GB else f"{x / GB:,.0f} GB"

