"""The memo's charts: the geometry of the SVGs the chart templates draw, as ready-made strings (the
templates compute nothing). A budget owner reads them at a glance: the cost bars cheapest first, the
chosen plan marked and, beside a cheaper plan, why it lost; each card's memory need against its own
capacity on an axis in GB; only plans that fit and that no rule excluded. The trade-off chart is in
advisor/shell/memotradeoff.py."""
from __future__ import annotations

import math
import textwrap

from advisor.inputs.catalog import Catalog
from advisor.numbers.objective import UNIT_FIELD, UNIT_LABELS
from advisor.shell.wording import money

#: the memory ledger's terms as the memo names them, in the ledger's order (the table and the chart)
LEDGER_LABELS = {"weights_gb": "Weights", "kv_cache_gb": "KV cache", "activations_gb": "Activations",
                 "gradients_gb": "Gradients", "optimizer_gb": "Optimizer states", "overhead_gb": "Overhead / safety"}
LEDGER_COLOURS = {"weights_gb": "#4e79a7", "kv_cache_gb": "#f28e2b", "activations_gb": "#59a14f",
                  "gradients_gb": "#e15759", "optimizer_gb": "#b07aa1", "overhead_gb": "#9c9c9c"}
#: a generous width of one character of the charts' 12 px font (DejaVu Sans, headless Chromium's fallback
#: for system-ui, averages 6.6 px on these labels); bold and 11 px text use their own
CHAR_PX, BOLD_PX, SMALL_PX = 7.2, 8.4, 6.6
MOST_ROWS = 12
LEFT = 160            # the bars start here: the row labels ("8 x a100-80gb-sxm") end before it


def gb(x) -> str:
    """A memory figure in words: one decimal below 1,000 GB."""
    if x is None:
        return "unknown"
    return f"{x:,.1f} GB" if x < 1000 else f"{x:,.0f} GB"


def plotted(rec: dict) -> list[dict]:
    """The record's candidates a chart shows: those that fit and that no rule excluded (the 192 x A10 a
    70B model would need is no choice, and its bar made the winner's a sliver), and the recommended plan
    however it was reached (the closest plan when none meets the target is excluded by it)."""
    win = (rec.get("recommendation") or {}).get("gpu")
    return [c for c in rec["candidates"] if c["fits"] and (not c["excluded"] or c["gpu"] == win)]


def _cards(n: int) -> str:
    return f"{n} card{'s' if n != 1 else ''}"


def chart(rec: dict, catalog: Catalog) -> dict:
    """Geometry of the memory chart: per card, what the plan needs (split in the ledger's proportions)
    against the card's own capacity (the outline), on an axis in GB from 0."""
    est = rec["estimate"]
    led = est["ledger"]
    total = led["total_gb"] or 1
    cands = {c["gpu"]: c for c in est["candidates"]}
    shown = [c for c in plotted(rec) if cands.get(c["gpu"], {}).get("per_card_gb") is not None][:MOST_ROWS]
    if not shown:
        return {"rows": []}
    width = 400
    top_gb = max(max(catalog.gpus[c["gpu"]].memory_gb, cands[c["gpu"]]["per_card_gb"]) for c in shown)
    step = _nice_step(top_gb / 4)
    axis_max = step * math.ceil(top_gb / step)

    def w(v):
        return v / axis_max * width
    rows, label_px = [], 0.0
    win = (rec.get("recommendation") or {}).get("gpu")
    for i, c in enumerate(shown):
        e = cands[c["gpu"]]
        capacity, need = catalog.gpus[c["gpu"]].memory_gb, e["per_card_gb"]
        x, segs = 0.0, []
        for k, colour in LEDGER_COLOURS.items():
            seg = w(need * (led.get(k) or 0) / total)
            if seg > 0:
                segs.append({"x": f"{LEFT + x:.1f}", "w": f"{seg:.1f}", "colour": colour, "label": LEDGER_LABELS[k]})
                x += seg
        y = 30 + i * 28
        label = f"{gb(need)} of {capacity:g} GB per card, {_cards(e['count'])}"
        lx = LEFT + max(w(capacity), w(need)) + 6
        label_px = max(label_px, lx + len(label) * CHAR_PX)
        rows.append({"y": f"{y}", "ty": f"{y + 14}", "gpu": f"{e['count']} x {c['gpu']}", "cap_w": f"{w(capacity):.1f}",
                     "segs": segs, "label": label, "lx": f"{lx:.1f}", "winner": c["gpu"] == win})
    axis_y = 30 + len(rows) * 28 + 2
    ticks = [{"x": f"{LEFT + w(step * k):.1f}", "label": f"{step * k:g}"} for k in range(int(round(axis_max / step)) + 1)]
    axis_label = "GB per card: the outline is the card's memory, the fill what the plan puts on it"
    total_w = max(label_px, LEFT + width + 40, LEFT + len(axis_label) * CHAR_PX) + 10
    legend, x, row = [], float(LEFT), 0
    for k, col in LEDGER_COLOURS.items():
        if not led.get(k):
            continue
        lw = 14 + len(LEDGER_LABELS[k]) * CHAR_PX + 16        # swatch, label, gap
        if x + lw > total_w and x > LEFT:
            x, row = float(LEFT), row + 1
        y = axis_y + 50 + row * 18
        legend.append({"x": f"{x:.0f}", "tx": f"{x + 14:.0f}", "right": f"{x + lw - 10:.0f}", "colour": col,
                       "label": LEDGER_LABELS[k], "y": f"{y - 10}", "ty": f"{y}"})
        x += lw
    return {"rows": rows, "width": f"{total_w:.0f}", "height": f"{axis_y + 60 + row * 18}", "legend": legend, "ticks": ticks,
            "left": f"{LEFT}", "right": f"{LEFT + width}", "axis_y": f"{axis_y}", "tick_end_y": f"{axis_y + 4}",
            "tick_y": f"{axis_y + 16}", "axis_label_y": f"{axis_y + 32}",
            "title": "Memory each card needs against the card's own memory",
            "axis_label": axis_label,
            "alt": "Memory per card against its capacity: " + _listed([f"{r['gpu']} {r['label']}" for r in rows])}


def cost_chart(rec: dict, catalog: Catalog, lost_because: dict[str, str] | None = None) -> dict:
    """Geometry of the cost chart: each plan's cost in the unit the decision ranked on (per hour of
    serving, per million tokens, per job: numbers.objective) as a bar from zero, cheapest first, the
    chosen plan marked, and under each plan cheaper than it the reason it lost (`lost_because`, by GPU:
    the alternatives' plain words). A modelled cost (per token, per job) carries its band from the
    speed model's error as a whisker (the record's cost_range); a price per hour is a quote, which that
    error does not move, so it has none."""
    r = rec.get("recommendation") or {}
    unit = r.get("unit")
    if unit not in UNIT_FIELD:
        return {"rows": []}
    field = UNIT_FIELD[unit]
    basis = r.get("cost_range_basis") or {}
    banded = basis.get("cost") == field          # cost_range is stated in this field (record._stability)
    shown = sorted_by_cost(rec, field)
    if not shown:
        return {"rows": []}
    win_cost = next((v for c, v in shown if c["gpu"] == r.get("gpu")), None)

    def band(c):
        return c.get("cost_range") if banded else None
    top = max(max(v, (band(c) or [v, v])[1]) for c, v in shown)
    step = _nice_step(top / 4)
    axis_max = step * (int(top / step) + 1)
    width = 460
    label = UNIT_LABELS[unit]
    error = (f"whiskers: the speed model's error ({(basis.get('model_error') or 0):.1%})" if banded and basis.get("model_error")
             else "quoted prices, which the speed model's error does not move" if unit == "hour" else "no model error stated")
    axis_label = f"USD {label}; {error}; the chosen plan in blue"
    right_px = max(LEFT + width + 90, math.ceil(LEFT + len(axis_label) * CHAR_PX + 10))
    wrap_chars = int((right_px - LEFT) / SMALL_PX)

    def x(v):
        return f"{LEFT + v / axis_max * width:.1f}"
    rows, y = [], 40
    for c, v in shown:
        b = band(c)
        win = c["gpu"] == r.get("gpu")
        why = (lost_because or {}).get(c["gpu"]) if win_cost is not None and not win and v <= win_cost else None
        lines = textwrap.wrap(f"Not chosen though cheaper: {why}.", wrap_chars, break_on_hyphens=False) if why else []
        rows.append({"gpu": f"{c['count']} x {c['gpu']}", "y": f"{y}", "ty": f"{y + 13}", "w": f"{v / axis_max * width:.1f}",
                     "label": money(v) + ((": closest plan" if r.get("closest") else ": chosen") if win else ""), "winner": win,
                     "lx": f"{float(x(max(v, b[1] if b else v))) + 6:.1f}",
                     "band": {"x1": x(b[0]), "x2": x(b[1]), "y": f"{y + 9}"} if b else None,
                     "why": [{"y": f"{y + 32 + k * 14}", "text": t} for k, t in enumerate(lines)]})
        y += 26 + 14 * len(lines) + (4 if lines else 0)
    base = y + 4
    ticks = [{"x": x(step * k), "label": _tick(step * k, step)} for k in range(int(round(axis_max / step)) + 1)]
    return {"rows": rows, "axis_y": f"{base}", "tick_end_y": f"{base + 4}", "tick_y": f"{base + 16}", "title_y": f"{base + 36}",
            "height": f"{base + 46}", "width": f"{right_px}", "left": f"{LEFT}", "right": f"{LEFT + width}", "ticks": ticks,
            "title": f"Cost {label} of each plan that fits, cheapest first", "unit": label,
            "alt": f"Cost {label}, cheapest first: " + _listed([f"{r['gpu']} {r['label']}" for r in rows]),
            "axis_label": axis_label}


def sorted_by_cost(rec: dict, field: str) -> list[tuple[dict, float]]:
    """The plotted plans with their cost in `field`, cheapest first (the decision's rank breaks ties), at
    most MOST_ROWS of them and the chosen plan always among them."""
    cands = {c["gpu"]: c for c in rec["estimate"]["candidates"]}
    priced = [(c, cands[c["gpu"]].get(field)) for c in plotted(rec)]
    priced = sorted(((c, v) for c, v in priced if isinstance(v, (int, float)) and not isinstance(v, bool)),
                    key=lambda cv: (cv[1], cv[0].get("rank") or 0))
    win = (rec.get("recommendation") or {}).get("gpu")
    shown = priced[:MOST_ROWS]
    if win and all(c["gpu"] != win for c, _ in shown):
        shown = shown[:MOST_ROWS - 1] + [cv for cv in priced if cv[0]["gpu"] == win]
    return shown


def _nice_step(x: float) -> float:
    """1, 2 or 5 times a power of ten at or above x: axis ticks people read at a glance."""
    if x <= 0:
        return 1.0
    p = 10 ** math.floor(math.log10(x))
    return next(m * p for m in (1, 2, 5, 10) if m * p >= x)


def _tick(v: float, step: float) -> str:
    """An axis tick in dollars, every tick of an axis with the same decimals (those its step needs):
    $0, $50, $100, not $0, $50.00, $100; $0.00, $0.20 below a dollar."""
    decimals = 0 if step >= 1 else max(2, -math.floor(math.log10(step) + 1e-9))      # cents below a dollar
    return f"${v:,.{decimals}f}"


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:,.1f}".rstrip("0").rstrip(".")


def _listed(items: list[str], most: int = 6) -> str:
    """Items in a sentence, the first `most` of them and how many more (a chart's alt text)."""
    shown = "; ".join(items[:most])
    return shown + (f"; and {len(items) - most} more" if len(items) > most else "")
