"""Rental prices from SkyPilot's public catalog (skypilot-org/skypilot-catalog, catalogs/v7).

Reads either SkyPilot's own `vms.csv` files (a skypilot-catalog checkout or `~/.sky/catalogs/v7`,
one folder per cloud) or the compact per-instance snapshot kept in `../shared/reference/prices/`
(one `<cloud>.csv` per cloud, aggregated over regions, with a README naming each file's commit).
Each instance type becomes one `on-demand` row (the cheapest region's price, with the median over
regions) and, where the source has a spot price below it, one `spot` row. SkyPilot's accelerator names
are mapped to catalog GPU ids by `map_accelerator` (a tested table); names it cannot map are reported,
never guessed.

`gpu-advisor prices import PATH --out FILE` writes a price file that `--prices FILE` reads; the shipped
`catalog/prices-skypilot.yaml` is built with

    gpu-advisor prices import ../shared/reference/prices catalog/skypilot-excerpts --skip seeweb \
        --out prices-skypilot.yaml && mv prices-skypilot.yaml catalog/

(`--out` never names a file the import read nor any file of the catalog folder.) What it accepts:
- CSVs in UTF-8 with or without a BOM, UTF-16 with a BOM; a file that is not UTF-8 is read as Latin-1
  and the import says so. Only regular files are read (a FIFO, device or socket is refused unopened),
  of at most MAX_CSV_BYTES and MAX_ROWS rows, read as a stream; a missing column is one error naming
  the file and the columns.
- A row with a bad value (a count that is not a whole number from 1 to 100,000; a price that is not a
  number from $0.0001 to $100,000 an hour: text, NaN, infinity, zero, negative; a name over 200
  characters) is skipped and counted per column with the first file:line, as unmapped accelerator
  names are: both are printed after the import and written in the file's header.
- The commit: `--commit` (hex), else the snapshot README's, else read from the checkout's .git folder
  without running git and without leaving that folder (a detached HEAD, or a refs/... ref, loose or
  packed; anything else leaves the commit unknown).
- The text is checked by the loader `--prices FILE` uses before anything is written.

This module builds the import (rows, the file's text, the check); reading the sources is
skypilotread.py's job, mapping SkyPilot's names to catalog ids skypilotnames.py's.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path

from advisor.base.errors import InputError, Problem
from advisor.inputs.prices import PriceText, plain_text
from advisor.inputs.skypilotnames import PROVIDERS, SIMPLE, TPU_IDS, map_accelerator  # noqa: F401  (SIMPLE, TPU_IDS: the tests read them here)
from advisor.inputs.skypilotread import SOURCE_REPO, Offer, Report, collect

#: clouds whose Price is an auction bid equal to SpotPrice on every row (the snapshot's README): spot only
AUCTION_CLOUDS = {"mithril"}


def price_rows(offers: list[Offer], date: str, known=None) -> tuple[list[dict], dict[str, int]]:
    """Catalog price rows (prices.yaml schema) and the accelerator names left unmapped (with row counts);
    with `known` (GPU ids), a name mapped to an id outside it counts as unmapped too."""
    rows, unmapped = [], {}
    for o in offers:
        gid, n = map_accelerator(o.accelerator, o.count, o.memory_gib, o.instance, o.cloud)
        if gid is not None and known is not None and gid not in known:
            gid = None
        if gid is None:
            unmapped[o.accelerator] = unmapped.get(o.accelerator, 0) + 1
            continue
        base = {"gpu": gid, "gpus_per_instance": n, "provider": PROVIDERS.get(o.cloud, o.cloud), "instance": o.instance,
                "accelerator": o.accelerator, "date": date, "commit": o.commit, "source": o.source, "tier": "quote"}
        if o.region_count:
            base["region_count"] = o.region_count
        if o.regions:
            base["regions"] = o.regions
        if o.price_min and o.cloud not in AUCTION_CLOUDS:
            rows.append({**base, "kind": "on-demand", "usd_per_hour": o.price_min,
                         "usd_per_hour_median": max(o.price_median or o.price_min, o.price_min)})
        spot_ok = o.spot_min and (o.cloud in AUCTION_CLOUDS or not o.price_min or o.spot_min < o.price_min)
        if spot_ok:     # a spot price at or above on-demand is not a discount (runpod L40S rows): left out
            rows.append({**base, "kind": "spot", "usd_per_hour": o.spot_min,
                         "usd_per_hour_median": max(o.spot_median or o.spot_min, o.spot_min)})
    # one row per key: identical instance names listed twice by a source keep the cheaper row
    best: dict[tuple, dict] = {}
    for r in rows:
        k = (r["gpu"], r["gpus_per_instance"], r["provider"].lower(), r["instance"].lower(), r["kind"])
        if k not in best or r["usd_per_hour"] < best[k]["usd_per_hour"]:
            best[k] = r
    out = sorted(best.values(), key=lambda r: (r["gpu"], r["kind"], r["gpus_per_instance"], r["usd_per_hour"], r["provider"], r["instance"]))
    return out, unmapped


ORDER = ("gpu", "gpus_per_instance", "kind", "usd_per_hour", "usd_per_hour_median", "provider", "instance", "accelerator",
         "region_count", "regions", "date", "commit", "source", "tier")


def _yaml_scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return f"{v:g}" if isinstance(v, float) else str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_yaml_scalar(x) for x in v) + "]"
    s = str(v)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_yaml(rows: list[dict], header: str) -> str:
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] + ["prices:" if rows else "prices: []"]   # bare 'prices:' is null
    for r in rows:
        lines.append("  - {" + ", ".join(f"{k}: {_yaml_scalar(r[k])}" for k in ORDER if r.get(k) is not None) + "}")
    return "\n".join(lines) + "\n"


@dataclass
class Imported:
    """A price file made by `prices import`: its text, rows, the accelerator names left unmapped and
    the report of what was read and skipped."""

    text: str
    rows: list[dict]
    unmapped: dict[str, int]
    report: Report

    def summary(self, limit: int = 20) -> list[str]:
        """The lines `prices import` prints about what it left out."""
        out = []
        if self.unmapped:
            names = sorted(self.unmapped.items())
            out.append("not mapped to a catalog GPU (no row written): " + ", ".join(f"{k} ({v})" for k, v in names[:limit])
                       + (f" and {len(names) - limit} more" if len(names) > limit else ""))
        if self.report.skipped:
            out.append("rows skipped for a bad value (no row written): " + self.report.skipped_text())
        return out + self.report.notes


DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
GIVEN_COMMIT = re.compile(r"^[0-9a-f]{4,40}$")


def import_prices(paths, skip=(), date: str | None = None, commit: str | None = None, catalog=None) -> Imported:
    """The price file for every offer under PATHS. With `catalog`, rows only for its GPUs, and the text
    is checked by the loader `--prices FILE` uses before it is returned: an import never makes a file
    that the tool itself would refuse."""
    if date is not None and not DATE.match(date):
        raise InputError(Problem(f"must be a date YYYY-MM-DD or YYYY-MM (got {plain_text(date)[:40]!r})", field="--date"))
    if commit is not None and not GIVEN_COMMIT.match(commit):
        raise InputError(Problem(f"must be a git commit: 4 to 40 hex digits (got {plain_text(commit)[:40]!r})", field="--commit"))
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    report = Report()
    offers, dates = [], []
    for p in paths:
        found, stated = collect(Path(p), tuple(skip), commit, report)
        offers += found
        dates += [stated] if stated else []
    stated = max(dates) if dates else None
    path = plain_text(" ".join(str(p) for p in paths))
    when = date or stated or datetime.date.today().isoformat()
    rows, unmapped = price_rows(offers, when, set(catalog.gpus) if catalog is not None else None)
    header = (f"Rental prices from SkyPilot's catalog ({SOURCE_REPO}, catalogs/v7), imported by\n"
              f"`gpu-advisor prices import {path}{''.join(' --skip ' + plain_text(s) for s in skip)}` (do not edit by hand: re-run it).\n"
              f"Retrieved {when}; each row names the source file and its commit. usd_per_hour is the cheapest region's\n"
              f"price for the whole instance, usd_per_hour_median the median over regions. kind: on-demand | spot.\n"
              f"{len(rows)} rows; SkyPilot accelerator names not mapped to a catalog GPU: "
              + (", ".join(f"{k} ({v})" for k, v in sorted(unmapped.items())[:50]) or "none")
              + (f" and {len(unmapped) - 50} more" if len(unmapped) > 50 else "")
              + (f"\nRows skipped for a bad value: {report.skipped_text()}" if report.skipped else ""))
    text = to_yaml(rows, header)
    if catalog is not None:
        try:
            PriceText(text, "the imported price file").rows(catalog.gpus)
        except InputError as exc:
            raise InputError(Problem(f"the import made a price file its own loader refuses, so nothing was written: "
                                     f"{exc.problems[0]}")) from None
    return Imported(text, rows, unmapped, report)
