"""A catalog figure (a value with its sources) and the checks every catalog file applies to figures:
finite numbers of sane size, values from a list, sources that exist. GPUs and models (catalog.py) and
price rows (prices.py) are checked with these, so one bad value gets the same words in every file.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from advisor.base import yamlio
from advisor.base.errors import Collector

#: a knowledge ID of the seed documents (knowledge.md): a figure may cite one instead of a source
KNOWLEDGE_ID = re.compile(r"^[KTCAW]\d\d$")


@dataclass(frozen=True)
class Figure:
    """A catalog value with its provenance. `value` is None when unknown or not applicable."""

    value: object
    sources: tuple[str, ...] = ()
    note: str | None = None
    unknown: bool = False
    extra: dict = field(default_factory=dict, compare=False)

    def cite(self) -> str:
        return ", ".join(self.sources) if self.sources else "no source"


NONE = Figure(None, unknown=True)


def figure(raw, col: Collector, where: str, line: int | None) -> Figure:
    if not isinstance(raw, dict) or "v" not in raw:
        col.add("expected a figure {v: VALUE, src: [SOURCE, ...]}", line, where)
        return NONE
    src = raw.get("src") or []
    if isinstance(src, str):
        src = [src]
    value = raw["v"]
    unknown = value == "unknown"
    extra = {k: v for k, v in raw.items() if k not in ("v", "src", "note")}
    return Figure(None if unknown else value, tuple(src), raw.get("note"), unknown, extra)


def figures_of(entry: dict, col: Collector, skip: set[str]) -> dict[str, Figure]:
    """Every field of a catalog entry but those in `skip`, read as a figure."""
    figs = {}
    for k, raw in entry.items():
        if k in skip:
            continue
        figs[k] = figure(raw, col, k, yamlio.line_of(entry, k))
    return figs


def check_enum(col, value, allowed, where, line):
    if value not in allowed:
        col.add(f"'{value}' is not one of {', '.join(allowed)}", line, where)


def check_non_negative(col, figs: dict[str, Figure], entry, names):
    for n in names:
        v = figs.get(n, NONE).value
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            col.add(f"must not be negative (got {v})", yamlio.line_of(entry, n), n)


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 1e18


def check_numbers(col, figs: dict[str, Figure], entry, owner: str, names, positive=(), whole=()):
    """Figures that are numbers must be finite numbers of sane size (a text, NaN or 10^400 would
    reach the arithmetic); `positive` ones above zero (a divisor), `whole` ones whole numbers >= 1."""
    for n in names:
        f = figs.get(n)
        if f is None or f.value is None:
            continue
        v, line = f.value, yamlio.line_of(entry, n)
        if not is_number(v):
            col.add(f"must be a finite number (got {str(v)[:40]!r})", line, f"{owner}.{n}")
        elif n in whole and (v != int(v) or v < (0 if n == "mig_instances" else 1)):
            col.add(f"must be a whole number >= {0 if n == 'mig_instances' else 1} (got {v})", line, f"{owner}.{n}")
        elif n in positive and v <= 0:
            col.add(f"must be above zero (got {v})", line, f"{owner}.{n}")


def check_sources(col, figs, entry, sources, owner):
    for k, f in figs.items():
        if f.value is None and not f.sources:
            continue
        if not f.sources and f.value is not None:
            col.add("figure has no source", yamlio.line_of(entry, k), f"{owner}.{k}")
        for s in f.sources:
            if not (s in sources or KNOWLEDGE_ID.match(s)):
                col.add(f"unknown source '{s}'", yamlio.line_of(entry, k), f"{owner}.{k}")
