"""The memo's memory chart: the geometry of the SVG that the HTML template draws (each candidate's
memory need, split in the ledger's proportions, against the capacity of its cards), as strings."""
from __future__ import annotations

import math

from advisor.inputs.catalog import Catalog
from advisor.numbers.objective import UNIT_FIELD, UNIT_LABELS
from advisor.shell.wording import money

#: the memory ledger's terms as the memo names them, in the ledger's order (the table and the chart)
LEDGER_LABELS = {"weights_gb": "Weights", "kv_cache_gb": "KV cache", "activations_gb": "Activations",
                 "gradients_gb": "Gradients", "optimizer_gb": "Optimizer states", "overhead_gb": "Overhead / safety"}


def gb(x) -> str:
    """A memory figure in words: one decimal below 1,000 GB."""
    if x is None:
        return "unknown"
    return f"{x:,.1f} GB" if x < 1000 else f"{x:,.0f} GB"


def chart(rec: dict, catalog: Catalog) -> dict:
    """Geometry of the SVG chart: each candidate's memory need (split in the ledger's proportions)
    against the capacity of its cards."""
    est = rec["estimate"]
    led = est["ledger"]
    total = led["total_gb"] or 1
    shown = [c for c in rec["candidates"] if c["fits"]][:12]
    cands = {c["gpu"]: c for c in est["candidates"]}
    rows = []
    scale_max = max((cands[c["gpu"]]["count"] * catalog.gpus[c["gpu"]].memory_gb for c in shown), default=1)
    width = 520
    colours = {"weights_gb": "#4e79a7", "kv_cache_gb": "#f28e2b", "activations_gb": "#59a14f",
               "gradients_gb": "#e15759", "optimizer_gb": "#b07aa1", "overhead_gb": "#9c9c9c"}
    for i, c in enumerate(shown):
        e = cands[c["gpu"]]
        capacity = e["count"] * catalog.gpus[c["gpu"]].memory_gb
        need = e["count"] * e["per_card_gb"]
        x = 0.0
        segs = []
        for k, colour in colours.items():
            share = (led[k] or 0) / total
            w = need * share / scale_max * width
            if w <= 0:
                continue
            segs.append({"x": f"{160 + x:.1f}", "w": f"{w:.1f}", "colour": colour, "label": LEDGER_LABELS[k]})
            x += w
        rows.append({"y": f"{30 + i * 28}", "ty": f"{30 + i * 28 + 14}", "gpu": c["gpu"],
                     "cap_w": f"{capacity / scale_max * width:.1f}", "segs": segs,
                     "label": f"{gb(need)} of {gb(capacity)} ({e['count']} card{'s' if e['count'] > 1 else ''})",
                     "lx": f"{160 + capacity / scale_max * width + 6:.1f}",
                     "winner": bool(rec.get("recommendation")) and c["gpu"] == rec["recommendation"]["gpu"]})
    present = [(k, col) for k, col in colours.items() if led[k]]
    legend, x, row, total_w = [], 160.0, 0, 160 + width + 230
    for k, col in present:
        w = 14 + len(LEDGER_LABELS[k]) * 7.5 + 16        # swatch, label (generous 12 px characters), gap
        if x + w > total_w and x > 160:
            x, row = 160.0, row + 1
        legend.append({"x": f"{x:.0f}", "tx": f"{x + 14:.0f}", "right": f"{x + w - 10:.0f}", "colour": col,
                       "label": LEDGER_LABELS[k], "y": f"{36 + len(rows) * 28 + row * 18}", "ty": f"{46 + len(rows) * 28 + row * 18}"})
        x += w
    alt = "Memory need against the cards' capacity: " + _listed([f"{r['gpu']} {r['label']}" for r in rows])
    return {"rows": rows, "height": f"{60 + len(rows) * 28 + row * 18}", "width": f"{total_w}", "legend": legend, "alt": alt,
            "legend_y": f"{36 + len(rows) * 28}", "legend_ty": f"{46 + len(rows) * 28}"}


def cost_chart(rec: dict, catalog: Catalog) -> dict:
    """Geometry of the cost chart: each priced candidate's cost in the unit the decision ranked on (per
    hour of serving, per million tokens, per job: numbers.objective) as a bar from zero, an x axis with
    ticks in that unit, and the winner marked. A modelled cost (per token, per job) carries its band
    from the speed model's error as a whisker (the record's cost_range); a price per hour is a quote,
    which that error does not move, so it has none."""
    r = rec.get("recommendation") or {}
    unit = r.get("unit")
    if unit not in UNIT_FIELD:
        return {"rows": []}
    field = UNIT_FIELD[unit]
    basis = r.get("cost_range_basis") or {}
    banded = basis.get("cost") == field          # cost_range is stated in this field (record._stability)
    cands = {c["gpu"]: c for c in rec["estimate"]["candidates"]}
    shown = [(c, cands[c["gpu"]].get(field)) for c in rec["candidates"] if c["fits"] and not c["excluded"]]
    shown = [(c, v) for c, v in shown if isinstance(v, (int, float))][:12]
    if not shown:
        return {"rows": []}

    def band(c):
        return c.get("cost_range") if banded else None
    top = max(max(v, (band(c) or [v, v])[1]) for c, v in shown)
    step = _nice_step(top / 4)
    axis_max = step * (int(top / step) + 1)
    left, width = 160, 460

    def x(v):
        return f"{left + v / axis_max * width:.1f}"
    rows = []
    for i, (c, v) in enumerate(shown):
        y = 40 + i * 26
        b = band(c)
        rows.append({"gpu": f"{c['count']} x {c['gpu']}", "y": f"{y}", "ty": f"{y + 13}", "w": f"{v / axis_max * width:.1f}",
                     "label": money(v), "lx": f"{float(x(max(v, b[1] if b else v))) + 6:.1f}", "winner": c["gpu"] == r.get("gpu"),
                     "band": {"x1": x(b[0]), "x2": x(b[1]), "y": f"{y + 9}"} if b else None})
    base = 40 + len(rows) * 26 + 4
    ticks = [{"x": x(step * k), "label": _tick(step * k, step)} for k in range(int(round(axis_max / step)) + 1)]
    label = UNIT_LABELS[unit]
    error = (f"whiskers: the speed model's error ({(basis.get('model_error') or 0):.1%})" if banded and basis.get("model_error")
             else "quoted prices, which the speed model's error does not move" if unit == "hour" else "no model error stated")
    return {"rows": rows, "axis_y": f"{base}", "tick_y": f"{base + 16}", "title_y": f"{base + 36}", "height": f"{base + 46}",
            "width": f"{left + width + 90}", "left": f"{left}", "right": f"{left + width}", "ticks": ticks,
            "title": f"Cost {label} by candidate, in the order the decision ranked them", "unit": label,
            "alt": f"Cost {label} by candidate: " + _listed([f"{r['gpu']} {r['label']}" + (" (chosen)" if r["winner"] else "")
                                                              for r in rows]),
            "axis_label": f"USD {label}; {error}; winner in bold"}


def _nice_step(x: float) -> float:
    """1, 2 or 5 times a power of ten at or above x: axis ticks people read at a glance."""
    import math
    if x <= 0:
        return 1.0
    p = 10 ** math.floor(math.log10(x))
    return next(m * p for m in (1, 2, 5, 10) if m * p >= x)


def _tick(v: float, step: float) -> str:
    """An axis tick in dollars, every tick of an axis with the same decimals (those its step needs):
    $0, $50, $100, not $0, $50.00, $100; $0.00, $0.20 below a dollar."""
    import math
    decimals = 0 if step >= 1 else max(2, -math.floor(math.log10(step) + 1e-9))      # cents below a dollar
    return f"${v:,.{decimals}f}"


#: one colour per point of the trade-off chart, matched in its key (the sweep's palette)
POINT_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
                 "#bab0ac", "#86bcb6", "#d37295"]


def tradeoff_chart(rec: dict) -> dict:
    """Geometry of the trade-off chart: each priced candidate's cost per unit of work (x) against what
    the user gets for it (y): tokens/s per user for serving, with the service level as a line, or
    training hours, with the deadline as a line. Points carry no text (they may coincide); the key
    beside the plot names each by its colour, with both figures."""
    r = rec.get("recommendation") or {}
    training = rec.get("inputs", {}).get("mode") in ("training", "fine-tuning")
    field = (r.get("cost_range_basis") or {}).get("cost")
    unit = (r.get("cost_range_basis") or {}).get("unit", "")
    speed = "training_hours" if training else "tokens_per_s_per_user"
    cands = {c["gpu"]: c for c in rec["estimate"]["candidates"]}
    pts = [(c, cands[c["gpu"]].get(field), cands[c["gpu"]].get(speed)) for c in rec["candidates"]
           if field and c["fits"] and not c["excluded"]]
    pts = [(c, x, y) for c, x, y in pts if isinstance(x, (int, float)) and isinstance(y, (int, float))][:12]
    if len(pts) < 2:
        return {"points": []}
    sl = rec.get("service_level") or {}
    level = (1000 / sl["tpot_ms"]) if not training and sl.get("tpot_ms") else \
        (rec.get("inputs", {}).get("constraints") or {}).get("deadline_hours") if training else None
    level = level if isinstance(level, (int, float)) and not isinstance(level, bool) else None
    xstep = _nice_step(max(x for _, x, _ in pts) / 4)
    ystep = _nice_step(max([y for _, _, y in pts] + ([level] if level else [])) / 4)
    xmax = xstep * (int(max(x for _, x, _ in pts) / xstep) + 1)
    ymax = ystep * (int(max([y for _, _, y in pts] + ([level] if level else [])) / ystep) + 1)
    left, top, w, h = 70, 52, 380, 220            # top: room for the title and the y axis's name above

    def px(v):
        return f"{left + v / xmax * w:.1f}"

    def py(v):
        return f"{top + h - v / ymax * h:.1f}"
    points, key = [], []
    for i, (c, x, y) in enumerate(pts):
        colour = POINT_COLOURS[i % len(POINT_COLOURS)]
        win = c["gpu"] == r.get("gpu")
        points.append({"cx": px(x), "cy": py(y), "colour": colour, "winner": win, "r": "7" if win else "5"})
        said = f"{_num(y)} h" if training else f"{_num(y)} tokens/s"
        key.append({"y": f"{top + 4 + i * 18}", "ty": f"{top + 8 + i * 18}", "colour": colour, "winner": win,
                    "text": f"{c['count']} x {c['gpu']}: {money(x)}, {said}" + (" (chosen)" if win else "")})
    kx = left + w + 24
    # the key's longest line sets the width: up to 8.4 px a character at the key's 12 px font in bold
    # (DejaVu Sans, headless Chromium's fallback), 290 px at least
    key_w = max(290, math.ceil(8.4 * max(len(k["text"]) for k in key)))
    return {"points": points, "key": key, "left": f"{left}", "right": f"{left + w}", "top": f"{top}",
            "bottom": f"{top + h}", "key_x": f"{kx}", "key_tx": f"{kx + 14}",
            "width": f"{kx + 14 + key_w}", "height": f"{max(top + h + 56, top + 18 * len(key) + 10)}",
            "xticks": [{"x": px(xstep * k), "label": _tick(xstep * k, xstep)} for k in range(int(round(xmax / xstep)) + 1)],
            "yticks": [{"y": py(ystep * k), "ty": f"{float(py(ystep * k)) + 4:.1f}", "label": _num(ystep * k)}
                       for k in range(1, int(round(ymax / ystep)) + 1)],       # the origin is the x axis's $0
            "tick_y": f"{top + h + 16}", "xlabel_y": f"{top + h + 36}",
            "title": ("Training hours against cost " if training else "Speed per user against cost ") + unit,
            "alt": ("Training hours against cost " if training else "Speed per user against cost ") + unit + ": "
                   + _listed([k["text"] for k in key]),
            "xlabel": f"USD {unit}", "ylabel": "hours" if training else "tokens/s per user",
            # the level's label on the side of the line where plans miss it (below the service level,
            # above the deadline), where fewest points are; above it when below would reach the x axis
            "level": {"y": py(level), "ty": f"{_level_label_y(float(py(level)), training, top + h):.1f}",
                      "label": f"deadline {_num(level)} h" if training else f"service level {_num(level)} tokens/s"}
            if level else None}


def _level_label_y(y: float, training: bool, bottom: float) -> float:
    """Baseline of the level's label: above a deadline's line, below a service level's, unless below
    would reach the x axis."""
    return y - 4 if training or y + 13 > bottom - 2 else y + 13


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:,.1f}".rstrip("0").rstrip(".")


def _listed(items: list[str], most: int = 6) -> str:
    """Items in a sentence, the first `most` of them and how many more (a chart's alt text)."""
    shown = "; ".join(items[:most])
    return shown + (f"; and {len(items) - most} more" if len(items) > most else "")
