"""`gpu-advisor sweep GRID.yaml --out table.csv`: decide every combination of a grid of workloads,
in parallel on all cores, with a progress bar; rows are written as they are decided, so an
interrupted sweep keeps what it finished. An optional Markdown or HTML summary charts the
recommended GPU across the grid.

A grid file:
    base: examples/chat-assistant.yaml      # a workload file (relative to the grid), or a mapping
    vary:
      model: [gpt-oss-120b, llama-3.1-70b]
      context_tokens: [8192, 32768]
      constraints.import_restricted: [false, true]
"""
from __future__ import annotations

import copy
import csv
import itertools
import os
from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError, Problem

MAX_COMBINATIONS = 100_000
MAX_JOBS = 256
COLUMNS = ("gpu", "count", "nodes", "tp", "pp", "dp", "per_card_gb", "usd_per_hour", "usd_per_million_tokens",
           "usd_per_job", "decisive_rule", "error")


def load_grid(path: str | Path, catalog) -> tuple[list[str], list[tuple], list[dict]]:
    """(varied fields, value combinations, workload documents); every invalid combination reported."""
    from advisor.inputs import workload
    path = Path(path)
    grid = yamlio.load(path)
    col = Collector(str(path))
    if not isinstance(grid, dict) or "vary" not in grid:
        col.add("a grid is a mapping with 'base' (a workload file or mapping) and 'vary' (field: [values])",
                getattr(grid, "line", 1))
        col.raise_if_any()
    base = grid.get("base") or {}
    if isinstance(base, str):
        base_path = (path.parent / base) if not Path(base).is_absolute() else Path(base)
        if not base_path.exists() and Path(base).exists():
            base_path = Path(base)
        base = yamlio.load(base_path)
    if not isinstance(base, dict):
        col.add("base must be a workload mapping or the path of a workload file", yamlio.line_of(grid, "base", 1), "base")
    vary = grid["vary"]
    if not isinstance(vary, dict) or not vary:
        col.add("vary must map fields to lists of values", yamlio.line_of(grid, "vary", 1), "vary")
    else:
        for k, v in vary.items():
            if not isinstance(k, str):
                col.add(f"{k!r} is not a field name (NAME or NAME.NAME, e.g. concurrency)", yamlio.line_of(vary, k), f"vary.{k}")
            elif not isinstance(v, list) or not v:
                col.add("must be a non-empty list of values", yamlio.line_of(vary, k), f"vary.{k}")
    for k in set(grid) - {"base", "vary"}:
        col.add("unknown key (known: base, vary)", yamlio.line_of(grid, k), str(k))
    col.raise_if_any()
    fields = [str(f) for f in vary]
    total = 1
    for f in vary:                 # counted before anything is expanded
        total *= len(vary[f])
        if total > MAX_COMBINATIONS:
            break
    if total > MAX_COMBINATIONS:
        raise InputError(Problem(f"more than {MAX_COMBINATIONS:,} combinations", str(path), yamlio.line_of(grid, "vary"), "vary"))
    for f in fields:
        parts = f.split(".")
        if any(not p for p in parts):
            col.add("a field path is NAME or NAME.NAME", yamlio.line_of(vary, f), f"vary.{f}")
            continue
        target = base
        for i, p in enumerate(parts[:-1]):
            target = target.get(p) if isinstance(target, dict) else None
            if target is not None and not isinstance(target, dict):
                col.add(f"the base's {'.'.join(parts[:i + 1])} is {target!r}, not a mapping: vary "
                        f"{'.'.join(parts[:i + 1])} itself", yamlio.line_of(vary, f), f"vary.{f}")
                break
    for f in fields:
        if any(g.startswith(f + ".") for g in fields):
            col.add("varies a whole field and a part of it at once", yamlio.line_of(vary, f), f"vary.{f}")
    col.raise_if_any()
    picks = list(itertools.product(*(range(len(vary[f])) for f in fields)))
    combos = [tuple(vary[f][i] for f, i in zip(fields, pick)) for pick in picks]
    docs = []
    found: dict = {}        # each problem once: (file, line, field, message) -> the combinations it was found in
    for pick, combo in zip(picks, combos):
        doc = copy.deepcopy(yamlio.plain(base))
        for f, v in zip(fields, combo):
            target = doc
            parts = f.split(".")
            for p in parts[:-1]:
                target = target.setdefault(p, {})
            target[parts[-1]] = v
        label = ", ".join(f"{f}={v}" for f, v in zip(fields, combo))
        try:
            workload.parse(doc, catalog, str(path))
        except InputError as exc:
            for pr in exc.problems:
                found.setdefault(_where(pr, path, vary, fields, pick), []).append(label)
        docs.append(doc)
    if found:
        raise InputError([Problem(f"{msg} ({labels[0]})" if len(labels) == 1 else
                                  f"{msg} (in {len(labels):,} of {len(combos):,} combinations, e.g. {labels[0]})",
                                  file, line, field)
                          for (file, line, field, msg), labels in list(found.items())[:50]])
    return fields, combos, docs


def _where(pr: Problem, path: Path, vary, fields: list[str], pick: tuple) -> tuple:
    """(file, line, field, message) of a combination's problem: the grid line of the value that caused
    it when the problem is in a varied field (`vary.FIELD` and the line of that value in its list),
    else the grid and the workload's own field name."""
    for f, i in zip(fields, pick):
        if pr.field and (pr.field == f or pr.field.startswith(f + ".") or f.startswith(pr.field + ".")):
            values = vary[f]
            line = values.line_of(i) if hasattr(values, "line_of") else None
            return str(path), line or yamlio.line_of(vary, f), f"vary.{f}", pr.message
    return str(path), None, pr.field, pr.message


# --- workers ---------------------------------------------------------------------------------------------

_STATE: dict = {}


class Terminated(Exception):
    """SIGTERM (or SIGHUP) to the sweep: handled as Ctrl-C is (the finished rows kept, the workers
    stopped, the lock and the temporary file removed), where the default action killed the parent
    outright and left both, its workers dying on a broken pipe (issue 42)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, frame):
    raise Terminated(signum)


def _stop_signals() -> dict:
    """Install _terminate for SIGTERM and SIGHUP in the parent (main thread only); the old handlers."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, _terminate) for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s}


def _init_worker(rules, prices):
    """A worker's start: Ctrl-C is the parent's to handle (no worker tracebacks); SIGTERM or SIGHUP, from
    the parent or to the whole process group, just ends it."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
        if s:
            signal.signal(s, _worker_exit)
    _init(rules, prices)


def _in_workers(docs, jobs, rules, prices, emit) -> None:
    """Every combination decided by `jobs` worker processes, each with its own share (every jobs-th) and its
    own pipe, the rows emitted in the grid's order. No queue or lock is shared between processes (as
    multiprocessing.Pool's are): whatever ends the sweep (all rows in, Ctrl-C, SIGTERM), each worker is
    stopped, killed if need be, and joined, and nothing it held can keep the sweep from ending."""
    import multiprocessing as mp
    from multiprocessing.connection import wait
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    procs, conns = [], {}
    try:
        for k in range(jobs):
            r, w = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_work, args=(k, jobs, docs, rules, prices, w), daemon=True)
            p.start()
            w.close()
            procs.append(p)
            conns[r] = k
        pending, nxt = {}, 0
        while conns:
            for r in wait(list(conns)):
                try:
                    i, result = r.recv()
                    pending[i] = result
                except (EOFError, OSError):          # the worker's share is done (or it ended)
                    del conns[r]
            while nxt in pending:
                emit(nxt, pending.pop(nxt))
                nxt += 1
        for i in range(nxt, len(docs)):   # a worker that ended early: its rows say so, in their place
            emit(i, pending.pop(i, {"error": "the worker deciding it ended before it did"}))
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(5)


def _work(k, jobs, docs, rules, prices, conn) -> None:
    """A worker: its share of the combinations, each row sent back as it is decided."""
    _init_worker(rules, prices)
    for i in range(k, len(docs), jobs):
        conn.send((i, _decide(docs[i])))
    conn.close()


def _init(rules, prices):
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)
    if "setup" not in _STATE:        # a forked worker has the parent's; a spawned one loads it again
        from advisor.judgement import advise
        _STATE["setup"] = advise.setup(rules, prices)


def _worker_exit(signum, frame):
    # SIGTERM to a worker (from the parent, or to the whole process group): SystemExit ends the process
    # silently, without the traceback of the parent's own handler (inherited at the fork)
    raise SystemExit(0)


def _decide(doc: dict) -> dict:
    from advisor.judgement.advise import advise
    try:
        d = advise(doc, _STATE["setup"], "sweep")
    except InputError as exc:
        return {"error": str(exc.problems[0])}
    if not d.winner:
        return {"error": "every candidate excluded", "decisive_rule": ""}
    c = d.estimate.candidate(d.winner)
    return {"gpu": c.gpu.id, "count": c.count, "nodes": c.nodes, "tp": c.tp, "pp": c.pp, "dp": c.dp,
            "per_card_gb": round(c.per_card_gb, 2), "usd_per_hour": _r(c.usd_per_hour),
            "usd_per_million_tokens": _r(c.usd_per_million_tokens), "usd_per_job": _r(c.usd_per_job),
            "decisive_rule": d.decisive["id"] if d.decisive else "", "error": ""}


def _r(x):
    return None if x is None else round(x, 4)


def run(grid_path, out_path, rules=None, prices=None, jobs: int | None = None, progress=True, summary=None):
    """Decide every combination and write the CSV as rows arrive.
    Returns (rows written, total, the signal that interrupted it (SIGINT, SIGTERM, SIGHUP) or 0, the
    varied fields).

    The rows go, as they are decided, to a temporary file beside `out_path`, under the exclusive
    lock of files.writing (a second sweep or recommend to the same file is refused, never
    interleaved); it replaces `out_path` when the sweep ends, or is interrupted with Ctrl-C or stopped
    with SIGTERM or SIGHUP (the finished rows are kept, the workers stopped). A sweep killed outright leaves the previous file as it was. The outputs
    (`out_path`, and the `summary` written later) are checked against every file read before any
    work starts."""
    from advisor.judgement import advise
    # loaded once, before any work: a broken knowledge base or price file is refused here (a worker whose
    # initializer failed would be respawned by the pool for ever)
    _STATE["setup"] = advise.setup(rules, prices)
    cat = _STATE["setup"].catalog
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise InputError(Problem(f"must be a whole number from 1 to {MAX_JOBS} (got {jobs})", field="--jobs"))
    fields, combos, docs = load_grid(grid_path, cat)
    jobs = min(jobs or os.cpu_count() or 1, max(1, len(docs)))
    out_path = Path(out_path)
    from advisor.base import files
    if summary:
        if os.path.realpath(summary) == os.path.realpath(out_path):
            raise InputError(Problem("is the table this sweep writes (--out): the summary needs a file of its own",
                                     str(summary), field="--summary"))
        files.refuse_output(summary)
    written, interrupted = 0, 0
    import signal
    old_handlers = _stop_signals()
    try:
        written, interrupted = _write_rows(out_path, fields, combos, docs, jobs, rules, prices, progress)
    except Terminated as exc:             # before the table was open, or while it was put in place: nothing kept
        return 0, len(docs), exc.signum, fields
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
    if interrupted:        # a signal may land between a row's write and its count: the file says what was kept
        with open(out_path, newline="", encoding="utf-8") as fh:
            written = max(0, sum(1 for _ in csv.reader(fh)) - 1)
    return written, len(docs), interrupted, fields


def _write_rows(out_path, fields, combos, docs, jobs, rules, prices, progress) -> tuple[int, int]:
    """(rows written, the signal that stopped the sweep: SIGINT or SIGTERM/SIGHUP, 0 when none)."""
    import signal
    from advisor.base import files
    written, interrupted = 0, 0
    with files.writing(out_path, newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(list(fields) + list(COLUMNS))
        fh.flush()

        def emit(i, result):
            nonlocal written
            writer.writerow([_cell(v) for v in combos[i]] + [_cell(result.get(c)) for c in COLUMNS])
            fh.flush()
            written += 1
            if progress:
                _bar(written, len(docs))

        try:
            if jobs == 1 or len(docs) < 8:
                _init(rules, prices)
                for i, doc in enumerate(docs):
                    emit(i, _decide(doc))
            else:
                _in_workers(docs, jobs, rules, prices, emit)
        except KeyboardInterrupt:
            interrupted = int(signal.SIGINT)
        except Terminated as exc:
            interrupted = exc.signum
        if progress:
            from advisor.shell import progress as bar
            bar.finish()
    if interrupted:        # Ctrl-C may land between a row's write and its count: the file says what was kept
        with open(out_path, newline="", encoding="utf-8") as fh:
            written = max(0, sum(1 for _ in csv.reader(fh)) - 1)
    return written, interrupted


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v              # a spreadsheet would read it as a formula
    return v


def _bar(done: int, total: int) -> None:
    from advisor.shell import progress as bar        # drawn by rich (advisor/shell/progress.py)
    bar.show(done, total)


# --- the summary ---------------------------------------------------------------------------------------

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


CHAR_PX = 7.5          # a generous average width of a 12 px system-ui character, for the chart's columns


def _shown(v: str) -> str:
    """A CSV cell as a person reads it: yes/no for booleans, thousands separators for whole numbers."""
    if v.lower() in ("true", "false"):
        return "yes" if v.lower() == "true" else "no"
    if v.isdigit() and len(v) > 3:
        return f"{int(v):,}"
    return v


def _header(field: str, width_chars: int) -> list[str]:
    """A field's column header: its last part in words, wrapped to the column's width."""
    words = field.split(".")[-1].replace("_", " ").split()
    lines, line = [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width_chars:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return lines + [line]


def summary_view(csv_path: Path, fields: list[str]) -> dict:
    """Ready-made strings for the summary template: the table and the chart's geometry. Every row is
    labelled with the varied fields, one column each under a (wrapped) header sized to its longest value,
    and has two bars: the cards recommended (every row has a plan) and the cost per unit of work (per
    million tokens, or per job), which compares 1 user with 128 where a price per hour would not; a row
    without a known price says so in place of its cost bar."""
    with open(csv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    gpus = sorted({r["gpu"] or "none" for r in rows})
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(gpus)}
    cell_h = 26
    columns, x = [], 0.0
    for f in fields:
        value_chars = max([len(_shown(r[f])) for r in rows] + [4])
        head = _header(f, max(value_chars, 10))
        chars = max([value_chars] + [len(h) for h in head])
        w = chars * CHAR_PX + 14
        columns.append({"field": f, "x": f"{x:.0f}", "right": f"{x + w - 6:.0f}", "head": head, "w": w})
        x += w
    head_lines = max([len(c["head"]) for c in columns] + [1])
    last_head = 36 + (head_lines - 1) * 14
    top = last_head + 10
    label_w = max(x, 60.0)
    # the cards: every row that has a plan; bars on an axis from 0 to a round count
    cards = [int(r["count"]) if (r["count"] or "").isdigit() else 0 for r in rows]
    cards_max = _round_up(max(cards + [1]))
    card_texts = [f"{r['count']} x {r['gpu']}" if r["gpu"] else (r["error"] or "no plan") for r in rows]
    cost_x = label_w + CARDS_PX + 8 + max([len(t) for t in card_texts] + [12]) * CHAR_PX + 16
    # the cost per unit of work: per job when every priced row has one, else per million tokens
    unit_field = "usd_per_job" if any(_cost(r.get("usd_per_job")) is not None for r in rows) and all(
        _cost(r.get("usd_per_job")) is not None for r in rows if _cost(r.get("usd_per_million_tokens")) is not None) \
        else "usd_per_million_tokens"
    costs = [_cost(r.get(unit_field)) for r in rows]
    cost_max = _round_up(max([c for c in costs if c is not None] + [0.0]))
    cost_texts = [(f"${c:,.2f}" if c is not None else "no price known" if r["gpu"] else "") for c, r in zip(costs, rows)]
    cells = []
    for i, r in enumerate(rows):
        y = top + i * cell_h
        cw = cards[i] / cards_max * CARDS_PX
        w = (costs[i] or 0.0) / cost_max * COST_PX if cost_max else 0.0
        cells.append({"y": str(y), "ty": str(y + 17), "label": ", ".join(f"{f}={_shown(r[f])}" for f in fields),
                      "cols": [{"x": c["x"], "right": c["right"], "text": _shown(r[c["field"]])} for c in columns],
                      "x": f"{label_w:.0f}", "w": f"{cw:.1f}", "tx": f"{label_w + cw + 6:.0f}", "colour": colour[r["gpu"] or "none"],
                      "text": card_texts[i], "cost_x": f"{cost_x:.0f}", "cost_w": f"{w:.1f}",
                      "cost_tx": f"{cost_x + w + 6:.0f}", "cost_text": cost_texts[i], "priced": costs[i] is not None})
    axis_y = top + len(rows) * cell_h + 4
    unit = "per job" if unit_field == "usd_per_job" else "per million tokens"
    axes = [{"x1": f"{label_w:.0f}", "x2": f"{label_w + CARDS_PX:.0f}", "caption": "GPUs recommended",
             "ticks": [{"x": f"{label_w + k / 2 * CARDS_PX:.0f}", "text": f"{cards_max * k / 2:,.10g}"} for k in range(3)
                       if float(cards_max * k / 2).is_integer()]},         # whole cards only: no 12.5 GPUs
            {"x1": f"{cost_x:.0f}", "x2": f"{cost_x + COST_PX:.0f}",
             "caption": f"USD {unit}" + (" (output tokens served, or training tokens)" if unit_field != "usd_per_job" else ""),
             "ticks": [{"x": f"{cost_x + k / 2 * COST_PX:.0f}", "text": f"${cost_max * k / 2:,.10g}"} for k in range(3)]
             if cost_max else []}]
    caption_px = max(len(a["caption"]) for a in axes[1:]) * CHAR_PX
    width = max(cost_x + COST_PX + 8 + max(len(t) for t in cost_texts + ["no price known"]) * CHAR_PX, cost_x + caption_px) + 20
    header = [{"x": c["x"], "right": c["right"], "lines": [{"y": str(36 + k * 14), "text": h} for k, h in enumerate(c["head"])]}
              for c in columns]
    counts = {g: sum(1 for r in rows if (r["gpu"] or "none") == g) for g in gpus}
    legend = [{"colour": colour[g], "gpu": g, "n": str(counts[g])} for g in gpus]
    table = [[_shown(r[f]) for f in fields] + [r["gpu"], r["count"], f"TP {r['tp']} x PP {r['pp']} x DP {r['dp']}" if r["gpu"] else "",
                                               f"${float(r['usd_per_hour']):,.2f}" if _cost(r["usd_per_hour"]) is not None else "unknown",
                                               f"${costs[i]:,.2f}" if costs[i] is not None else "unknown", r["decisive_rule"]]
             for i, r in enumerate(rows)]
    return {"fields": fields, "rows": table, "cells": cells, "header": header, "legend": legend, "count": str(len(rows)),
            "height": str(axis_y + 44), "width": f"{width:.0f}", "head_y": str(last_head),
            "heads": [{"x": f"{label_w:.0f}", "text": "GPUs recommended"}, {"x": f"{cost_x:.0f}", "text": f"Cost {unit}"}],
            "cost_head": f"USD {unit}",
            "axis": {"y": str(axis_y), "tick_end_y": str(axis_y + 4), "tick_y": str(axis_y + 16), "caption_y": str(axis_y + 34),
                     "axes": axes}}


CARDS_PX = 120         # the longest cards bar: its axis's round maximum
COST_PX = 220          # the longest cost bar


def _cost(v: str) -> float | None:
    try:
        return float(v) if v not in ("", None) else None
    except ValueError:
        return None


def _round_up(v: float) -> float:
    """The axis's end: the next 1, 2, 2.5 or 5 x 10^k at or above v (0 when nothing is priced)."""
    if v <= 0:
        return 0.0
    import math
    e = 10 ** math.floor(math.log10(v))
    return next(m * e for m in (1, 2, 2.5, 5, 10) if m * e >= v)


def write_summary(csv_path: Path, fields: list[str], out: Path) -> None:
    from advisor import HOME
    from advisor.base import sandbox
    from advisor.base.files import write_atomic
    from advisor.shell.wording import clean_all, markdown_finalize
    html = out.suffix in (".html", ".htm")
    # grid values and the CSV's cells are one line of visible text; Markdown escapes them as the memo does
    env = sandbox.environment(sandbox.confined_loader(HOME / "templates"), autoescape=html,
                              finalize=None if html else markdown_finalize)
    name = "sweep.html.j2" if html else "sweep.md.j2"
    write_atomic(out, env.get_template(name).render(**clean_all(summary_view(csv_path, fields))))
