"""The memo's trade-off chart: each plan's cost per unit of work (x) against what the user gets for it
(y: tokens/s per user when serving, hours when training), as ready-made strings for
templates/chart-tradeoff.svg.j2. Every point carries its number beside it, placed where it covers no
other label or point, and the key names each number's plan with both figures; the Pareto frontier (the
plans no other beats on both cost and speed) is drawn, and the better direction is said on each axis
and in the key."""
from __future__ import annotations

import math

from advisor.shell.memochart import MOST_ROWS, _listed, _nice_step, _num, _tick, sorted_by_cost
from advisor.shell.wording import money

#: one colour per point, matched in the key; twelve, as many as the chart's points (MOST_ROWS), so none
#: repeats (the numbers, not the colours, name the points)
POINT_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
                 "#bab0ac", "#86bcb6", "#d37295"]
NUMBER_PX, NUMBER_H = 8.4, 16.0           # a point's number: 11 px bold digits (8.35 px each laid out), its box's height
LEFT, TOP, W, H = 70, 52, 380, 220        # the plot; TOP leaves room for the title and the y axis's name


def tradeoff_chart(rec: dict) -> dict:
    """Geometry of the trade-off chart (module docstring); {"points": []} when fewer than two plans are
    priced."""
    r = rec.get("recommendation") or {}
    training = rec.get("inputs", {}).get("mode") in ("training", "fine-tuning")
    field = (r.get("cost_range_basis") or {}).get("cost")
    unit = (r.get("cost_range_basis") or {}).get("unit", "")
    speed = "training_hours" if training else "tokens_per_s_per_user"
    cands = {c["gpu"]: c for c in rec["estimate"]["candidates"]}
    pts = [(c, x, cands[c["gpu"]].get(speed)) for c, x in (sorted_by_cost(rec, field) if field else [])]
    pts = [(c, x, y) for c, x, y in pts if isinstance(y, (int, float)) and not isinstance(y, bool)][:MOST_ROWS]
    if len(pts) < 2:
        return {"points": []}
    level = _level(rec, training)
    xs, ys = [x for _, x, _ in pts], [y for _, _, y in pts] + ([level] if level else [])
    xstep, ystep = _nice_step(max(xs) / 4), _nice_step(max(ys) / 4)
    xmax, ymax = xstep * (int(max(xs) / xstep) + 1), ystep * (int(max(ys) / ystep) + 1)

    def px(v):
        return LEFT + v / xmax * W

    def py(v):
        return TOP + H - v / ymax * H
    level_geo = None
    taken: list[tuple[float, float, float, float]] = []          # boxes of the labels placed: x, y, w, h
    if level:
        label = f"deadline {_num(level)} h" if training else f"service level {_num(level)} tokens/s"
        ty = _level_label_y(py(level), training, TOP + H)
        taken.append((LEFT + W - len(label) * 6.6, ty - 12, len(label) * 6.6, NUMBER_H))
        level_geo = {"y": f"{py(level):.1f}", "ty": f"{ty:.1f}", "label": label}
    circles = [(px(x), py(y), 7 if c["gpu"] == r.get("gpu") else 5) for c, x, y in pts]
    points, key = [], []
    for i, (c, x, y) in enumerate(pts):
        colour, win, n = POINT_COLOURS[i % len(POINT_COLOURS)], c["gpu"] == r.get("gpu"), str(i + 1)
        cx, cy, rad = circles[i]
        lx, ly, lead = _place(cx, cy, rad, len(n) * NUMBER_PX, taken, circles)
        points.append({"cx": f"{cx:.1f}", "cy": f"{cy:.1f}", "colour": colour, "winner": win, "r": str(rad), "n": n,
                       "lx": f"{lx:.1f}", "ly": f"{ly:.1f}", "lead": lead})
        said = f"{_num(y)} h" if training else f"{_num(y)} tokens/s"
        key.append({"y": f"{TOP + 40 + i * 18}", "ty": f"{TOP + 49 + i * 18}", "colour": colour, "winner": win,
                    "text": f"{n}. {c['count']} x {c['gpu']}: {money(x)}, {said}" + (" (chosen)" if win else "")})
    kx = LEFT + W + 24
    better = "better: cheaper and faster (up and left)" if not training else "better: cheaper and sooner (down and left)"
    frontier = _frontier([(px(x), py(y), x, y) for _, x, y in pts], training)
    front_text = "Pareto frontier: no other plan is both cheaper and " + ("sooner" if training else "faster")
    if " " not in frontier:        # one plan is both the cheapest and the best on the other axis
        front_text = f"Pareto frontier: plan {frontier_first(pts, training)} alone, cheapest and " + ("soonest" if training else "fastest")
    # the key's longest line sets the width: up to 8.4 px a character in bold (DejaVu Sans, 12 px)
    key_w = max(290, math.ceil(8.4 * max(len(t) for t in [k["text"] for k in key] + [better, front_text])))
    title = ("Training hours against cost " if training else "Speed per user against cost ") + unit
    return {"points": points, "key": key, "left": f"{LEFT}", "right": f"{LEFT + W}", "top": f"{TOP}", "bottom": f"{TOP + H}",
            "key_x": f"{kx}", "key_tx": f"{kx + 14}", "key_line_x2": f"{kx + 10}", "width": f"{kx + 14 + key_w}",
            "height": f"{max(TOP + H + 58, TOP + 40 + 18 * len(key) + 10)}",
            "better": {"text": better, "y": f"{TOP + 4}"},
            "frontier": {"points": frontier, "y": f"{TOP + 22}", "ty": f"{TOP + 26}",
                         "text": front_text},
            "xticks": [{"x": f"{px(xstep * k):.1f}", "label": _tick(xstep * k, xstep)} for k in range(int(round(xmax / xstep)) + 1)],
            "yticks": [{"y": f"{py(ystep * k):.1f}", "ty": f"{py(ystep * k) + 4:.1f}", "label": _num(ystep * k)}
                       for k in range(1, int(round(ymax / ystep)) + 1)],       # the origin is the x axis's $0
            "tick_end_y": f"{TOP + H + 4}", "ytick_x1": f"{LEFT - 4}", "ytick_tx": f"{LEFT - 6}",
            "tick_y": f"{TOP + H + 16}", "title": title,
            "alt": title + ": " + _listed([k["text"] for k in key]),
            # two lines under the plot, clear of the key beside it however many plans it lists
            "xlabel": [{"y": f"{TOP + H + 34}", "text": f"USD {unit}, lower is better;"},
                       {"y": f"{TOP + H + 49}", "text": "the chosen plan ringed in black"}],
            "ylabel": "hours, lower is better" if training else "tokens/s per user, higher is better",
            "level": level_geo}


def _level(rec: dict, training: bool) -> float | None:
    """The line the plans are held to: the service level's speed per user, or the training deadline."""
    sl = rec.get("service_level") or {}
    level = (1000 / sl["tpot_ms"]) if not training and sl.get("tpot_ms") else \
        (rec.get("inputs", {}).get("constraints") or {}).get("deadline_hours") if training else None
    return level if isinstance(level, (int, float)) and not isinstance(level, bool) else None


def frontier_first(pts: list, training: bool) -> int:
    """The number of the plan a one-plan frontier holds: the cheapest, and best on the other axis."""
    return min(range(len(pts)), key=lambda i: (pts[i][1], pts[i][2] if training else -pts[i][2])) + 1


def _frontier(pts: list[tuple[float, float, float, float]], training: bool) -> str:
    """The Pareto frontier as an SVG polyline's points: the plans no other is both cheaper than (or as
    cheap) and better than on the other axis (faster; sooner when training), from the cheapest on."""
    def better(a, b):        # a is at least as good as b on both, and better on one
        y_ok = a[3] <= b[3] if training else a[3] >= b[3]
        return a[2] <= b[2] and y_ok and (a[2], a[3]) != (b[2], b[3])
    front = sorted({p for p in pts if not any(better(q, p) for q in pts)}, key=lambda p: p[2])
    return " ".join(f"{p[0]:.1f},{p[1]:.1f}" for p in front)


def _place(cx: float, cy: float, rad: float, w: float, taken: list, circles: list) -> tuple[float, float, dict | None]:
    """Where a point's number goes: the first spot around it, nearest first, whose box overlaps no label
    placed and no point and stays in the plot; a spot further out gets a leader line to its point.
    Returns the text's x and baseline, and the leader line or None; the box joins `taken`."""
    def free(x, y):
        box = (x - 1, y - 12, w + 2, NUMBER_H)
        if x < LEFT + 2 or x + w > LEFT + W or y - 12 < TOP - 8 or y + 4 > TOP + H - 2:
            return None
        if any(_meet(box, t) for t in taken):
            return None
        if any(_meet(box, (px - pr, py - pr, 2 * pr, 2 * pr)) for px, py, pr in circles):
            return None
        return box
    for d in (rad + 2, rad + 10, rad + 20, rad + 32, rad + 46):
        for ax, ay in ((1, 0), (-1, 0), (0, -1), (0, 1), (1, -1), (-1, -1), (1, 1), (-1, 1)):
            x = cx + ax * d - (w if ax < 0 else w / 2 if ax == 0 else 0)
            y = cy + ay * d + (4 if ay == 0 else -2 if ay < 0 else 11)
            box = free(x, y)
            if box:
                taken.append(box)
                lead = None if d <= rad + 2 else {"x1": f"{cx:.1f}", "y1": f"{cy:.1f}", "x2": f"{x + w / 2:.1f}",
                                                  "y2": f"{y - 4:.1f}"}
                return x, y, lead
    x, y = cx + rad + 2, cy + 4          # nowhere free: beside the point (the key still names it)
    taken.append((x - 1, y - 12, w + 2, NUMBER_H))
    return x, y, None


def _meet(a: tuple, b: tuple) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _level_label_y(y: float, training: bool, bottom: float) -> float:
    """Baseline of the level's label: above a deadline's line, below a service level's, unless below
    would reach the x axis."""
    return y - 4 if training or y + 13 > bottom - 2 else y + 13
