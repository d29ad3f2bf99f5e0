"""Rental prices: the price row (`Price`), price files (`prices_from`, `load_prices`: every row checked,
one problem per bad field with its line) and the one protocol every source of rows goes through
(`PriceSource`): the shipped price files, a user's `--prices FILE` and the text `prices import` makes
(advisor/inputs/skypilot.py). A new source is one class with a name, `rows` and `fingerprint`.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError
from advisor.base.text import clean
from advisor.inputs.figures import is_number
from advisor.inputs.names import name_index, resolve
from advisor.inputs.skypilotnames import PROVIDERS

PRICE_TIERS = ("quote", "catalog", "listing")  # in order of preference
#: what a price row buys: an instance by the hour (on demand, interruptible spot, reserved for a term),
#: a managed inference endpoint (serving on one node only), or the hardware itself (purchase.yaml)
PRICE_KINDS = ("on-demand", "spot", "reserved", "endpoint", "purchase")
PRICE_FIELDS = ("gpu", "gpus_per_instance", "usd_per_hour", "provider", "date", "source", "tier", "kind", "instance",
                "regions", "region_count", "commit", "usd_per_hour_median", "accelerator", "note")


@dataclass(frozen=True)
class Price:
    """One rental quote: USD per hour for an instance of `gpus_per_instance` GPUs."""

    gpu: str
    gpus_per_instance: int
    usd_per_hour: float
    provider: str
    date: str
    source: str
    tier: str
    file: str
    line: int
    kind: str = "on-demand"
    instance: str | None = None          # the provider's instance type, when known
    regions: tuple[str, ...] = ()        # regions offering it at this price or dearer (empty: not recorded)
    region_count: int | None = None      # how many regions the source lists (when their names are not kept)
    commit: str | None = None            # the source file's version (SkyPilot catalog commit)
    usd_per_hour_median: float | None = None   # median over the regions (usd_per_hour is the cheapest)
    note: str | None = None

    @property
    def key(self) -> tuple:
        """Rows with the same key are the same offer: a user's file replaces a shipped row with its key."""
        return (self.gpu, self.gpus_per_instance, self.provider.lower(), (self.instance or "").lower(), self.kind)



#: characters a name in a price file may have (provider, instance, accelerator, region, date, commit)
MAX_NAME = 200
#: characters a longer text may have (source, note)
MAX_TEXT = 1000


def plain_text(text: str) -> str:
    """`text` as one line of plain text: control and format characters (terminal escapes, bidi
    overrides, zero-width marks) dropped, line breaks and tabs read as spaces."""
    return clean(text).strip()


def load_prices(path: Path, catalog_or_gpus) -> list[Price]:
    return prices_from(yamlio.load(path), str(path), catalog_or_gpus)


def _price_text(col, e, k, line, limit) -> str | None:
    """A text field of a price row as plain text of at most `limit` characters (None: absent)."""
    v = e.get(k)
    if v is None or v == "":
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        col.add(f"must be a text (got {str(v)[:40]!r})", yamlio.line_of(e, k, line), k)
        return None
    text = plain_text(str(v))
    if len(text) > limit:
        col.add(f"must be at most {limit} characters (got {len(text):,})", yamlio.line_of(e, k, line), k)
        return None
    return text


def _fields_present(col: Collector, e: dict, line) -> bool:
    """Whether a price row has every required field and no infinite or NaN figure (an error in `col` for
    each that does not, and for each unknown field); apart from _price_row because a row missing a
    field is not read further."""
    bad = False
    for k, v in e.items():      # a NaN never compares, an infinity passes every lower bound
        if isinstance(v, float) and not math.isfinite(v) and k != "usd_per_hour":   # that one: its own check below
            col.add(f"must be a finite number (got {v})", yamlio.line_of(e, k, line), k)
            bad = True
    for k in ("gpu", "gpus_per_instance", "usd_per_hour", "provider", "date", "source"):
        if e.get(k) in (None, ""):
            col.add("required field is missing", line, k)
            bad = True
    for k in set(e) - set(PRICE_FIELDS):
        col.add(f"unknown field (known: {', '.join(PRICE_FIELDS)})", yamlio.line_of(e, k, line), k)
    return not bad


def _regions(col: Collector, e: dict, line) -> list[str] | None:
    """A price row's regions (one name or a list), control characters removed; None after an error in
    `col` (not a list of names, or too many or too long)."""
    regions = e.get("regions") or []
    if isinstance(regions, str):
        regions = [regions]
    if not isinstance(regions, list) or not all(isinstance(r, str) and plain_text(r) for r in regions):
        col.add("must be a list of region names", yamlio.line_of(e, "regions", line), "regions")
        return None
    regions = [plain_text(r) for r in regions]
    if len(regions) > 10_000 or any(len(r) > MAX_NAME for r in regions):
        col.add(f"must be at most 10,000 region names of at most {MAX_NAME} characters", yamlio.line_of(e, "regions", line),
                "regions")
        return None
    return regions


def _price_row(col: Collector, e: dict, line, names, name: str) -> Price | None:
    """One row of a price file as a Price, each field checked in turn; None after the first problem it
    finds (in `col`, with its line). Apart from prices_from, which checks the file's shape and the
    rows' duplicates."""
    if not _fields_present(col, e, line):
        return None
    before = len(col.problems)
    texts = {k: _price_text(col, e, k, line, MAX_TEXT if k in ("source", "note") else MAX_NAME)
             for k in ("provider", "date", "source", "instance", "accelerator", "commit", "note")}
    if len(col.problems) > before:
        return None
    empty = [k for k in ("provider", "date", "source") if not texts[k]]
    if empty:
        col.add("required field is empty once control characters are removed", line, empty[0])
        return None
    try:
        gid = resolve(e["gpu"], names, "GPU", "gpu", name, yamlio.line_of(e, "gpu", line))
    except InputError as exc:
        col.problems.extend(exc.problems)
        return None
    usd, n = e["usd_per_hour"], e["gpus_per_instance"]
    if not is_number(usd) or usd <= 0:
        col.add(f"must be a positive number (got {usd!r})", yamlio.line_of(e, "usd_per_hour", line), "usd_per_hour")
        return None
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 100_000:
        col.add(f"must be a whole number >= 1 (got {n!r})", yamlio.line_of(e, "gpus_per_instance", line), "gpus_per_instance")
        return None
    tier = e.get("tier", "quote")
    if tier not in PRICE_TIERS:
        col.add(f"'{tier}' is not one of {', '.join(PRICE_TIERS)}", yamlio.line_of(e, "tier", line), "tier")
        return None
    kind = e.get("kind", "on-demand")
    if kind not in PRICE_KINDS or kind == "purchase":
        col.add(f"'{kind}' is not one of {', '.join(k for k in PRICE_KINDS if k != 'purchase')} "
                "(purchase prices belong in purchase.yaml)", yamlio.line_of(e, "kind", line), "kind")
        return None
    median = e.get("usd_per_hour_median")
    if median is not None and (not is_number(median) or median < usd):
        col.add(f"must be a number >= usd_per_hour (got {median!r})", yamlio.line_of(e, "usd_per_hour_median", line),
                "usd_per_hour_median")
        return None
    regions = _regions(col, e, line)
    if regions is None:
        return None
    rc = e.get("region_count")
    if rc is not None and (not isinstance(rc, int) or isinstance(rc, bool) or not 0 <= rc <= 100_000):
        col.add(f"must be a whole number from 0 to 100,000 (got {rc!r})", yamlio.line_of(e, "region_count", line),
                "region_count")
        return None
    return Price(gid, n, float(usd), texts["provider"], texts["date"], texts["source"], tier, name, line,
                 kind, texts["instance"], tuple(regions), rc if rc is not None else (len(regions) or None),
                 texts["commit"], float(median) if median is not None else None, texts["note"])


def prices_from(data, name: str, catalog_or_gpus) -> list[Price]:
    """The price rows of a parsed price file (`name` for the messages), each checked: one problem per
    bad field with its line, as `--prices FILE` and the shipped catalog read them."""
    col = Collector(name)
    if isinstance(data, dict) and "prices" not in data and "api_prices" in data:
        # `prices import-api --out` writes these: a per-token price file, read by --api-prices (issue 42)
        col.add("this is an API price file (per-token prices, api_prices:): use --api-prices FILE "
                "(or the workload's api_prices: FILE)", getattr(data, "line", 1))
    elif not isinstance(data, dict) or "prices" not in data:
        col.add("expected a mapping with a 'prices' list", getattr(data, "line", 1))
    col.raise_if_any()
    items = data["prices"]
    gpus = getattr(catalog_or_gpus, "gpus", catalog_or_gpus)     # a Catalog, or its GPUs by id while it loads
    names = name_index(gpus.values())
    out: list[Price] = []
    seen = set()
    if not isinstance(items, list):
        col.add("'prices' must be a list", getattr(items, "line", None), "prices")
        col.raise_if_any()
    for i, e in enumerate(items):
        line = yamlio.line_of(items, i)
        if not isinstance(e, dict):
            col.add("each price must be a mapping", line)
            continue
        p = _price_row(col, e, line, names, name)
        if p is None:
            continue
        if p.key in seen:
            col.add(f"duplicate price for {p.gpu} x{p.gpus_per_instance} from {p.provider}"
                    + (f" ({p.instance}, {p.kind})" if p.instance else f" ({p.kind})"), line)
        seen.add(p.key)
        out.append(p)
    col.raise_if_any()
    return out


#: the catalog folder's price files: prices.yaml (hand-kept quotes) always, the others when present
PRICE_FILES = ("prices.yaml", "prices-skypilot.yaml")


class PriceSource(Protocol):
    """Where price rows come from. `Catalog.with_prices` takes any of these, and the catalog's own
    files are read through `PriceFile`, so every row meets the same checks wherever it comes from."""

    name: str          # named in every problem its rows have (a file's path)

    def rows(self, gpus) -> list[Price]:
        """Its rows, each checked and resolved against `gpus` (the catalog's GPUs by id); a bad row is
        an InputError naming `name`, the line and the field."""
        ...

    def fingerprint(self) -> bytes:
        """What identifies its rows: folded into the catalog's digest, so a decision record names
        the prices it was made with."""
        ...


@dataclass(frozen=True)
class PriceFile:
    """A price file (prices.yaml schema): a shipped one, or a user's `--prices FILE`."""

    path: Path

    @property
    def name(self) -> str:
        return str(self.path)

    def rows(self, gpus) -> list[Price]:
        return load_prices(self.path, gpus)

    def fingerprint(self) -> bytes:
        return Path(self.path).read_bytes()


@dataclass(frozen=True)
class PriceText:
    """A price file's text before it is written (what `prices import` makes), read as `--prices FILE`
    would read the file."""

    text: str
    name: str

    def rows(self, gpus) -> list[Price]:
        return prices_from(yamlio.loads(self.text, self.name), self.name, gpus)

    def fingerprint(self) -> bytes:
        return self.text.encode()


def shipped(directory: Path) -> list[PriceFile]:
    """The price files of a catalog folder, in PRICE_FILES order (the first one is required)."""
    return [PriceFile(directory / f) for i, f in enumerate(PRICE_FILES) if i == 0 or (directory / f).is_file()]


# --- which provider a name means (constraints.providers; the cost model's offers) -------------------

def provider_key(s: str) -> str:
    """A provider name as it is compared: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", s.lower())


@functools.lru_cache(maxsize=4096)
def provider_names(provider: str) -> frozenset[str]:
    """The whole names a provider answers to: its own, without a trailing qualifier in brackets
    ("DataCrunch (Prime Intellect)" is DataCrunch), and SkyPilot's id for it ("vast" for Vast.ai)."""
    names = {provider_key(provider), provider_key(re.sub(r"\s*\([^()]*\)\s*$", "", provider))}
    names |= {provider_key(cloud) for cloud, shown in PROVIDERS.items() if provider_key(shown) in names}
    return frozenset(n for n in names if n)


def provider_matches(p: Price, wanted: frozenset[str]) -> bool:
    """Whole names, case and punctuation aside: "AWS" is not "AWSOME Cheap Cloud"."""
    return not wanted or not wanted.isdisjoint(provider_names(p.provider))


def check_providers(names: tuple[str, ...], raw: list, prices, col: Collector, line) -> None:
    """constraints.providers: each name must answer to a price row (the shipped files and any --prices
    file); a name no offer answers to would leave every GPU unpriced, not rented from it."""
    known = {n for p in prices for n in provider_names(p.provider)}
    shown = sorted({p.provider for p in prices}, key=str.lower)
    for i, name in enumerate(names):
        if provider_key(name) not in known:
            col.add(f"no price row names provider '{name}'; known: {', '.join(shown)}",
                    yamlio.line_of(raw, i, line), "constraints.providers")
