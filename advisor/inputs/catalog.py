"""The catalog: GPUs, models, prices and efficiency factors, each figure with its source and date.

Loaded from catalog/*.yaml (see docs/catalog.md). Lookup is by stable id or alias, case-insensitive;
an unknown name is an InputError that suggests the closest ids.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path

from advisor import HOME
from advisor.base import cache, yamlio
from advisor.base.text import clean
from advisor.base.errors import Collector, InputError, Problem
from advisor.base.gcpause import free_cycles, loads_for_good
from advisor.base.files import read_input

CATALOG_DIR = HOME / "catalog"
KNOWLEDGE_ID = re.compile(r"^[KTCAW]\d\d$")

VENDORS = ("nvidia", "amd", "huawei", "intel", "google")
GENERATIONS = ("turing", "ampere", "ada", "hopper", "blackwell", "rubin", "cdna3", "cdna4", "davinci", "gaudi", "tpu")
CLASSES = ("server", "workstation", "consumer")
COOLING = ("air", "liquid", "air-or-liquid")
FORM_FACTORS = ("sxm", "pcie", "oam", "module", "cloud")
SOFTWARE = ("cuda", "rocm", "cann", "habana", "xla")
MATURITY = ("mature", "maturing", "new", "limited")
#: precisions of weights the memory ledger has a size for (workload files and the catalog's models)
PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "mxfp4", "nvfp4", "fp4", "int4")
#: parts a model's shipped precision may name: every weight, or the experts and the rest apart
PRECISION_PARTS = ("all", "experts", "rest")
#: precisions a GPU's tensor units may run natively (gpus.yaml native_precisions)
NATIVE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "int8", "mxfp4", "nvfp4", "fp4", "int4")
PRICE_TIERS = ("quote", "catalog", "listing")  # in order of preference
#: what a price row buys: an instance by the hour (on demand, interruptible spot, reserved for a term),
#: a managed inference endpoint (serving on one node only), or the hardware itself (purchase.yaml)
PRICE_KINDS = ("on-demand", "spot", "reserved", "endpoint", "purchase")
PRICE_FIELDS = ("gpu", "gpus_per_instance", "usd_per_hour", "provider", "date", "source", "tier", "kind", "instance",
                "regions", "region_count", "commit", "usd_per_hour_median", "accelerator", "note")


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


def _figure(raw, col: Collector, where: str, line: int | None) -> Figure:
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


@dataclass(frozen=True)
class GPU:
    """An accelerator of the catalog: every figure with its source and date."""

    id: str
    name: str
    aliases: tuple[str, ...]
    vendor: str
    generation: str
    gpu_class: str
    status: str
    figures: dict[str, Figure]
    file: str
    line: int

    def fig(self, name: str) -> Figure:
        return self.figures.get(name, NONE)

    def num(self, name: str) -> float | None:
        v = self.fig(name).value
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    # figures read in the planner's loops are computed once per GPU (frozen: they never change)
    @cached_property
    def memory_gb(self) -> float:
        return self.num("memory_gb")

    @cached_property
    def bandwidth_tb_s(self) -> float:
        return self.num("bandwidth_tb_s")

    @cached_property
    def gpus_per_node(self) -> int:
        return int(self.num("gpus_per_node") or 1)

    @cached_property
    def native_precisions(self) -> tuple[str, ...]:
        return tuple(self.fig("native_precisions").value or ())

    def tflops(self, precision: str) -> float | None:
        """Dense spec rate for a compute precision (bf16, fp8, fp4)."""
        return self.num(f"{precision}_tflops")


@dataclass(frozen=True)
class Model:
    """A model of the catalog: its architecture figures, each with its source."""

    id: str
    name: str
    aliases: tuple[str, ...]
    figures: dict[str, Figure]
    file: str | None = None
    line: int | None = None

    def fig(self, name: str) -> Figure:
        return self.figures.get(name, NONE)

    def num(self, name: str) -> float | None:
        v = self.fig(name).value
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    @property
    def precision(self) -> dict[str, str]:
        """Shipped precision per part: {'all': 'bf16'} or {'experts': 'mxfp4', 'rest': 'bf16'}."""
        v = self.fig("precision").value
        if isinstance(v, dict):
            return dict(v)
        return {"all": v or "bf16"}


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


@dataclass(frozen=True)
class ApiPrice:
    """One API offer for a catalog model: USD per million tokens (cached input: None when not listed)."""

    model: str
    provider: str
    provider_model: str
    usd_per_million_input: float
    usd_per_million_cached_input: float | None
    usd_per_million_output: float
    date: str
    source: str
    file: str
    line: int


@dataclass(eq=False)
class Catalog:
    """GPUs, models, prices, efficiency figures and the sources they cite."""

    gpus: dict[str, GPU]
    models: dict[str, Model]
    prices: list[Price]
    efficiency: dict
    sources: dict[str, dict]
    knowledge: dict
    digest: str
    purchase: dict = field(default_factory=dict)   # purchase.yaml: per-GPU prices and data-centre costs
    api_prices: list[ApiPrice] = field(default_factory=list)   # api-prices.yaml: per-token API offers

    @cached_property
    def _gpu_names(self) -> dict[str, str]:
        return _name_index(self.gpus.values())

    @cached_property
    def _model_names(self) -> dict[str, str]:
        return _name_index(self.models.values())

    def knows_gpu(self, name: str) -> bool:
        """The name is a GPU id, name or alias of the catalog (as `gpu` would resolve it)."""
        return _norm(name) in self._gpu_names

    @property
    def gpu_names(self) -> frozenset[str]:
        """Every GPU id, name and alias, normalised as `gpu` looks them up."""
        return frozenset(self._gpu_names)

    def gpu(self, name: str, field_name: str = "gpu", file: str | None = None, line: int | None = None) -> GPU:
        return self.gpus[_resolve(name, self._gpu_names, "GPU", field_name, file, line)]

    def model(self, name: str, field_name: str = "model", file: str | None = None, line: int | None = None) -> Model:
        return self.models[_resolve(name, self._model_names, "model", field_name, file, line)]

    @cached_property
    def _prices_by_gpu(self) -> dict[str, list[Price]]:
        index: dict[str, list[Price]] = {}
        for p in self.prices:
            index.setdefault(p.gpu, []).append(p)
        return index

    def prices_for(self, gpu_id: str) -> list[Price]:
        return list(self._prices_by_gpu.get(gpu_id, ()))

    def with_prices(self, path: str | Path) -> "Catalog":
        """A copy whose prices include the quotes of a user's file (same gpu, size and provider replace)."""
        extra = load_prices(Path(path), self)
        replaced = {p.key for p in extra}
        prices = [p for p in self.prices if p.key not in replaced] + extra
        h = hashlib.sha256(self.digest.encode())
        h.update(Path(path).read_bytes())
        return Catalog(self.gpus, self.models, prices, self.efficiency, self.sources, self.knowledge, h.hexdigest(),
                       self.purchase, self.api_prices)


def _name_index(items) -> dict[str, str]:
    index: dict[str, str] = {}
    for item in items:
        for n in (item.id, item.name, *item.aliases):
            index.setdefault(_norm(n), item.id)
    return index


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


def _resolve(name, index: dict[str, str], kind: str, field_name: str, file, line) -> str:
    key = _norm(name)
    if key in index:
        return index[key]
    ids = sorted(set(index.values()))
    import difflib      # only when there is something to suggest
    close = difflib.get_close_matches(key, list(index), n=5, cutoff=0.5)
    hint = sorted({index[c] for c in close})
    msg = f"unknown {kind} '{name}'"
    msg += f"; did you mean {', '.join(hint)}?" if hint else f"; known: {', '.join(ids)}"
    raise InputError(Problem(msg, file, line, field_name))


# --- loading -----------------------------------------------------------------------------------

def _doc(path: Path, key: str, col: Collector):
    data = yamlio.load(path)
    if not isinstance(data, dict) or key not in data:
        col.add(f"expected a mapping with a '{key}' list", getattr(data, "line", 1))
        return None, {}
    return data[key], data.get("sources") or {}


def _check_enum(col, value, allowed, where, line):
    if value not in allowed:
        col.add(f"'{value}' is not one of {', '.join(allowed)}", line, where)


def _figures(entry: dict, col: Collector, skip: set[str]) -> dict[str, Figure]:
    figs = {}
    for k, raw in entry.items():
        if k in skip:
            continue
        figs[k] = _figure(raw, col, k, yamlio.line_of(entry, k))
    return figs


def _non_negative(col, figs: dict[str, Figure], entry, names):
    for n in names:
        v = figs.get(n, NONE).value
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            col.add(f"must not be negative (got {v})", yamlio.line_of(entry, n), n)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 1e18


def _numbers(col, figs: dict[str, Figure], entry, owner: str, names, positive=(), whole=()):
    """Figures that are numbers must be finite numbers of sane size (a text, NaN or 10^400 would
    reach the arithmetic); `positive` ones above zero (a divisor), `whole` ones whole numbers >= 1."""
    for n in names:
        f = figs.get(n)
        if f is None or f.value is None:
            continue
        v, line = f.value, yamlio.line_of(entry, n)
        if not _is_number(v):
            col.add(f"must be a finite number (got {str(v)[:40]!r})", line, f"{owner}.{n}")
        elif n in whole and (v != int(v) or v < (0 if n == "mig_instances" else 1)):
            col.add(f"must be a whole number >= {0 if n == 'mig_instances' else 1} (got {v})", line, f"{owner}.{n}")
        elif n in positive and v <= 0:
            col.add(f"must be above zero (got {v})", line, f"{owner}.{n}")


GPU_REQUIRED = ("memory_gb", "bandwidth_tb_s", "bf16_tflops", "gpus_per_node")
GPU_NUMBERS = ("launch_year", "memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops", "gpus_per_node",
               "tdp_w", "mig_instances")
GPU_FIGURES = ("launch_year", "memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops",
               "native_precisions", "interconnect", "form_factor", "gpus_per_node", "tdp_w", "cooling",
               "mig_instances", "us_export_controlled", "software")


def _entries(items, kind: str, col: Collector, seen: dict):
    """(line, entry, id) for each entry of a catalog list, reporting entries without an id and duplicates."""
    if items is not None and not isinstance(items, list):
        col.add(f"must be a list of {kind} entries", getattr(items, "line", None))
        return
    for i, e in enumerate(items or []):
        line = yamlio.line_of(items, i)
        if not isinstance(e, dict) or "id" not in e:
            col.add(f"each {kind} needs an id", line)
            continue
        if not isinstance(e["id"], str) or not e["id"].strip():
            col.add(f"a {kind} id is a text (got {e['id']!r})", yamlio.line_of(e, "id", line), "id")
            continue
        if e["id"] in seen:
            col.add(f"duplicate {kind} id '{e['id']}'", line, "id")
        for k in ("name", "hf_repo"):
            if k in e and not (isinstance(e[k], str) and e[k].strip()):
                col.add(f"must be a text (got {e[k]!r})", yamlio.line_of(e, k, line), f"{e['id']}.{k}")
                e = {x: y for x, y in e.items() if x != k}
        if "aliases" in e and not (isinstance(e["aliases"], list) and all(isinstance(a, str) for a in e["aliases"])):
            col.add("must be a list of texts", yamlio.line_of(e, "aliases", line), f"{e['id']}.aliases")
            e = {x: y for x, y in e.items() if x != "aliases"}
        yield line, e, e["id"]


def load_gpus(path: Path, sources: dict) -> dict[str, GPU]:
    col = Collector(str(path))
    items, _ = _doc(path, "gpus", col)
    gpus: dict[str, GPU] = {}
    for line, e, gid in _entries(items, "GPU", col, gpus):
        meta = {"id", "name", "aliases", "vendor", "generation", "class", "status"}
        figs = _figures(e, col, meta)
        for k in figs:
            if k not in GPU_FIGURES:
                col.add(f"unknown field (known: {', '.join(GPU_FIGURES)})", yamlio.line_of(e, k), f"{gid}.{k}")
        for k in GPU_REQUIRED:
            if not isinstance(figs.get(k, NONE).value, (int, float)):
                col.add("required number is missing or unknown", yamlio.line_of(e, k, line), f"{gid}.{k}")
        _non_negative(col, figs, e, ("memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops", "tdp_w"))
        _numbers(col, figs, e, gid, GPU_NUMBERS, positive=GPU_REQUIRED + ("fp8_tflops", "fp4_tflops", "tdp_w"),
                 whole=("gpus_per_node", "mig_instances"))
        _check_enum(col, e.get("vendor"), VENDORS, f"{gid}.vendor", yamlio.line_of(e, "vendor", line))
        _check_enum(col, e.get("generation"), GENERATIONS, f"{gid}.generation", yamlio.line_of(e, "generation", line))
        _check_enum(col, e.get("class"), CLASSES, f"{gid}.class", yamlio.line_of(e, "class", line))
        native = figs.get("native_precisions", NONE).value
        if native is not None and not (isinstance(native, list) and all(isinstance(x, str) and x in NATIVE_PRECISIONS
                                                                          for x in native)):
            col.add(f"must be a list of precisions from {', '.join(NATIVE_PRECISIONS)} (got {str(native)[:60]!r})",
                    yamlio.line_of(e, "native_precisions", line), f"{gid}.native_precisions")
        cooling = figs.get("cooling", NONE).value
        if cooling is not None:
            _check_enum(col, cooling, COOLING, f"{gid}.cooling", yamlio.line_of(e, "cooling", line))
        _check_sources(col, figs, e, sources, gid)
        gpus[gid] = GPU(gid, e.get("name", gid), tuple(e.get("aliases") or ()), e.get("vendor"), e.get("generation"),
                        e.get("class"), e.get("status", "shipping"), figs, str(path), line)
    col.raise_if_any()
    return gpus


def _check_sources(col, figs, entry, sources, owner):
    for k, f in figs.items():
        if f.value is None and not f.sources:
            continue
        if not f.sources and f.value is not None:
            col.add("figure has no source", yamlio.line_of(entry, k), f"{owner}.{k}")
        for s in f.sources:
            if not (s in sources or KNOWLEDGE_ID.match(s)):
                col.add(f"unknown source '{s}'", yamlio.line_of(entry, k), f"{owner}.{k}")


MODEL_FIGURES = ("params_b", "active_params_b", "expert_params_b", "experts", "experts_per_token", "layers",
                 "hidden_size", "attention_heads", "kv_heads", "head_dim", "sliding_window",
                 "sliding_window_layers", "mla_kv_dim", "precision", "checkpoint_gb", "max_context")


MODEL_NUMBERS = tuple(k for k in MODEL_FIGURES if k != "precision")


def model_invariants(v: dict) -> list[tuple[str, str]]:
    """(field, problem) for figures of one model that contradict each other (a window over more
    layers than the model has gives a negative KV cache); shared by the catalog and workload files."""
    def num(k):
        x = v.get(k)
        return x if _is_number(x) else None
    out = []
    pairs = (("active_params_b", "params_b"), ("expert_params_b", "params_b"), ("sliding_window_layers", "layers"),
             ("experts_per_token", "experts"), ("kv_heads", "attention_heads"))
    for small, big in pairs:
        a, b = num(small), num(big)
        if a is not None and b is not None and a > b:
            out.append((small, f"cannot exceed {big} ({a:g} > {b:g})"))
    p, act, exp = num("params_b"), num("active_params_b"), num("expert_params_b")
    if p is not None and act is not None and exp is not None and exp <= p and act < (p - exp) * (1 - 1e-6):
        out.append(("active_params_b", f"is below the parameters outside the experts ({p:g} - {exp:g} = {p - exp:g}), "
                                       "which every token uses"))
    return out


def _model_invariants(col, values: dict, entry, owner: str) -> None:
    for k, problem in model_invariants(values):
        col.add(problem, yamlio.line_of(entry, k), f"{owner}.{k}")


def _check_precision(col, v, line, where) -> None:
    """A model's shipped precision is one of PRECISIONS, or a mapping of parts to them (the experts
    and the rest apart, both given): the ledger looks each one up in its table of sizes."""
    if v is None:
        return
    if isinstance(v, dict):
        bad = [f"{k}: {x}" for k, x in v.items() if k not in PRECISION_PARTS or x not in PRECISIONS]
        if bad or not v or (("experts" in v) != ("rest" in v)):
            col.add(f"must map {', '.join(PRECISION_PARTS)} (experts with rest) to one of {', '.join(PRECISIONS)} "
                    f"(got {str(dict(v))[:60]})", line, where)
    elif v not in PRECISIONS:
        col.add(f"'{str(v)[:40]}' is not one of {', '.join(PRECISIONS)}", line, where)


def load_models(path: Path, sources: dict) -> dict[str, Model]:
    col = Collector(str(path))
    items, _ = _doc(path, "models", col)
    models: dict[str, Model] = {}
    for line, e, mid in _entries(items, "model", col, models):
        figs = _figures(e, col, {"id", "name", "aliases", "hf_repo"})
        for k in figs:
            if k not in MODEL_FIGURES:
                col.add(f"unknown field (known: {', '.join(MODEL_FIGURES)})", yamlio.line_of(e, k), f"{mid}.{k}")
        for k in ("params_b", "active_params_b"):
            v = figs.get(k, NONE).value
            if not isinstance(v, (int, float)) or v <= 0:
                col.add("required positive number", yamlio.line_of(e, k, line), f"{mid}.{k}")
        _non_negative(col, figs, e, MODEL_FIGURES[:-2])
        _numbers(col, figs, e, mid, MODEL_NUMBERS, positive=("params_b", "active_params_b", "checkpoint_gb"),
                 whole=("experts", "experts_per_token", "layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
                        "sliding_window", "mla_kv_dim", "max_context"))
        _model_invariants(col, {k: f.value for k, f in figs.items()}, e, mid)
        _check_precision(col, figs.get("precision", NONE).value, yamlio.line_of(e, "precision", line), f"{mid}.precision")
        _check_sources(col, figs, e, sources, mid)
        aliases = tuple(e.get("aliases") or ()) + ((e["hf_repo"],) if e.get("hf_repo") else ())
        models[mid] = Model(mid, e.get("name", mid), aliases, figs, str(path), line)
    col.raise_if_any()
    return models


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


def prices_from(data, name: str, catalog_or_gpus) -> list[Price]:
    """The price rows of a parsed price file (`name` for the messages), each checked: one problem per
    bad field with its line, as `--prices FILE` and the shipped catalog read them."""
    col = Collector(name)
    if not isinstance(data, dict) or "prices" not in data:
        col.add("expected a mapping with a 'prices' list", getattr(data, "line", 1))
    col.raise_if_any()
    items = data["prices"]
    gpus = catalog_or_gpus.gpus if isinstance(catalog_or_gpus, Catalog) else catalog_or_gpus
    names = _name_index(gpus.values())
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
        if bad:
            continue
        before = len(col.problems)
        texts = {k: _price_text(col, e, k, line, MAX_TEXT if k in ("source", "note") else MAX_NAME)
                 for k in ("provider", "date", "source", "instance", "accelerator", "commit", "note")}
        if len(col.problems) > before:
            continue
        empty = [k for k in ("provider", "date", "source") if not texts[k]]
        if empty:
            col.add("required field is empty once control characters are removed", line, empty[0])
            continue
        try:
            gid = _resolve(e["gpu"], names, "GPU", "gpu", name, yamlio.line_of(e, "gpu", line))
        except InputError as exc:
            col.problems.extend(exc.problems)
            continue
        usd, n = e["usd_per_hour"], e["gpus_per_instance"]
        if not _is_number(usd) or usd <= 0:
            col.add(f"must be a positive number (got {usd!r})", yamlio.line_of(e, "usd_per_hour", line), "usd_per_hour")
            continue
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 100_000:
            col.add(f"must be a whole number >= 1 (got {n!r})", yamlio.line_of(e, "gpus_per_instance", line), "gpus_per_instance")
            continue
        tier = e.get("tier", "quote")
        if tier not in PRICE_TIERS:
            col.add(f"'{tier}' is not one of {', '.join(PRICE_TIERS)}", yamlio.line_of(e, "tier", line), "tier")
            continue
        kind = e.get("kind", "on-demand")
        if kind not in PRICE_KINDS or kind == "purchase":
            col.add(f"'{kind}' is not one of {', '.join(k for k in PRICE_KINDS if k != 'purchase')} "
                    "(purchase prices belong in purchase.yaml)", yamlio.line_of(e, "kind", line), "kind")
            continue
        median = e.get("usd_per_hour_median")
        if median is not None and (not _is_number(median) or median < usd):
            col.add(f"must be a number >= usd_per_hour (got {median!r})", yamlio.line_of(e, "usd_per_hour_median", line),
                    "usd_per_hour_median")
            continue
        regions = e.get("regions") or []
        if isinstance(regions, str):
            regions = [regions]
        if not isinstance(regions, list) or not all(isinstance(r, str) and plain_text(r) for r in regions):
            col.add("must be a list of region names", yamlio.line_of(e, "regions", line), "regions")
            continue
        regions = [plain_text(r) for r in regions]
        if len(regions) > 10_000 or any(len(r) > MAX_NAME for r in regions):
            col.add(f"must be at most 10,000 region names of at most {MAX_NAME} characters", yamlio.line_of(e, "regions", line),
                    "regions")
            continue
        rc = e.get("region_count")
        if rc is not None and (not isinstance(rc, int) or isinstance(rc, bool) or not 0 <= rc <= 100_000):
            col.add(f"must be a whole number from 0 to 100,000 (got {rc!r})", yamlio.line_of(e, "region_count", line),
                    "region_count")
            continue
        p = Price(gid, n, float(usd), texts["provider"], texts["date"], texts["source"], tier, name, line,
                  kind, texts["instance"], tuple(regions), rc if rc is not None else (len(regions) or None),
                  texts["commit"], float(median) if median is not None else None, texts["note"])
        if p.key in seen:
            col.add(f"duplicate price for {gid} x{n} from {p.provider}"
                    + (f" ({p.instance}, {kind})" if p.instance else f" ({kind})"), line)
        seen.add(p.key)
        out.append(p)
    col.raise_if_any()
    return out


API_PRICE_FILE = "api-prices.yaml"
API_PRICE_FIELDS = ("model", "provider", "provider_model", "usd_per_million_input", "usd_per_million_cached_input",
                    "usd_per_million_output", "date", "source")


def load_api_prices(path: Path, models: dict) -> list[ApiPrice]:
    """api-prices.yaml (written by `prices import-api`): one row per provider model id, every price a
    number >= 0 per million tokens, each row dated and sourced; problems reported with file:line."""
    col = Collector(str(path))
    data = yamlio.load(path)
    items = data.get("api_prices") if isinstance(data, dict) else None
    if not isinstance(items, list):
        col.add("expected a mapping with an 'api_prices' list", getattr(data, "line", 1), "api_prices")
        col.raise_if_any()
    names = _name_index(models.values())
    out: list[ApiPrice] = []
    for i, e in enumerate(items):
        line = yamlio.line_of(items, i)
        if not isinstance(e, dict):
            col.add("each API price must be a mapping", line)
            continue
        bad = [k for k in API_PRICE_FIELDS if k != "usd_per_million_cached_input" and e.get(k) in (None, "")]
        for k in bad:
            col.add("required field is missing", line, k)
        for k in set(e) - set(API_PRICE_FIELDS):
            col.add(f"unknown field (known: {', '.join(API_PRICE_FIELDS)})", yamlio.line_of(e, k, line), k)
        for k in ("usd_per_million_input", "usd_per_million_cached_input", "usd_per_million_output"):
            v = e.get(k)
            if v is not None and (not _is_number(v) or v < 0):
                col.add(f"must be a number >= 0 (got {v!r})", yamlio.line_of(e, k, line), k)
                bad.append(k)
        if bad:
            continue
        try:
            mid = _resolve(e["model"], names, "model", "model", str(path), yamlio.line_of(e, "model", line))
        except InputError as exc:
            col.problems.extend(exc.problems)
            continue
        cached = e.get("usd_per_million_cached_input")
        out.append(ApiPrice(mid, str(e["provider"]), str(e["provider_model"]), float(e["usd_per_million_input"]),
                            float(cached) if cached is not None else None, float(e["usd_per_million_output"]),
                            str(e["date"]), str(e["source"]), str(path), line))
    col.raise_if_any()
    return out


PURCHASE_FILE = "purchase.yaml"
MODEL_SOURCES_FILE = "sources-models.yaml"   # sources of the config-derived models (catalog/build/modelbuild.py)
PRICE_FILES = ("prices.yaml", "prices-skypilot.yaml")


def load_purchase(path: Path, gpus: dict) -> dict:
    """purchase.yaml: {gpus: {gpu id: {usd_per_gpu: {v, range, src...}, unit_gpus, ...}}, site: {param: figure}}.
    Checked for the shape the cost module reads; every figure needs a source and a date."""
    col = Collector(str(path))
    data = yamlio.load(path)
    if not isinstance(data, dict):
        col.add("expected a mapping with 'gpus' and 'site'", 1)
        col.raise_if_any()
    out = {"gpus": {}, "site": {}}
    for gid, e in (data.get("gpus") or {}).items():
        line = yamlio.line_of(data.get("gpus"), gid)
        if gid not in gpus:
            col.add(f"unknown GPU id '{gid}'", line, "gpus")
            continue
        fig = e.get("usd_per_gpu") if isinstance(e, dict) else None
        v = fig.get("v") if isinstance(fig, dict) else None
        rng = fig.get("range") if isinstance(fig, dict) else None
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
            col.add("usd_per_gpu.v must be a positive number", line, f"{gid}.usd_per_gpu")
            continue
        if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, (int, float)) for x in rng) and rng[0] <= v <= rng[1]):
            col.add("usd_per_gpu.range must be [low, high] around v", line, f"{gid}.usd_per_gpu")
            continue
        if not fig.get("sources"):
            col.add("usd_per_gpu needs its sources", line, f"{gid}.usd_per_gpu")
            continue
        unit = e.get("unit_gpus", 1)
        if not isinstance(unit, int) or isinstance(unit, bool) or unit < 1:
            col.add(f"must be a whole number >= 1 (got {unit!r})", yamlio.line_of(e, "unit_gpus", line), f"{gid}.unit_gpus")
            continue
        out["gpus"][gid] = dict(e)
    known = ("usd_per_kwh", "pue", "hosting_usd_per_kw_month", "amortisation_years", "server_overhead",
             "maintenance_share_per_year", "utilisation")
    for k, fig in (data.get("site") or {}).items():
        line = yamlio.line_of(data.get("site"), k)
        if k not in known:
            col.add(f"unknown site figure (known: {', '.join(known)})", line, f"site.{k}")
            continue
        if not isinstance(fig, dict) or not isinstance(fig.get("v"), (int, float)) or not fig.get("src") or not fig.get("date"):
            col.add("expected {v: NUMBER, range: [low, high], src: ..., date: ...}", line, f"site.{k}")
            continue
        out["site"][k] = dict(fig)
    col.raise_if_any()
    return out


@loads_for_good
def load(directory: Path = CATALOG_DIR) -> Catalog:
    """Load and validate the whole catalog; all problems of a file are reported together. A catalog
    that passed is kept compiled in the cache, keyed by its folder, its files' bytes and this module."""
    directory = Path(directory)
    files = ["sources.yaml", MODEL_SOURCES_FILE, "gpus.yaml", "models.yaml", *PRICE_FILES, PURCHASE_FILE, "efficiency.yaml",
             "knowledge.yaml", API_PRICE_FILE]
    digest = hashlib.sha256()
    for f in files:
        if f in (MODEL_SOURCES_FILE, *PRICE_FILES[1:], PURCHASE_FILE, API_PRICE_FILE) and not os.path.lexists(directory / f):
            continue                   # optional files (a user's catalog folder may lack them)
        digest.update(f.encode())
        digest.update(read_input(directory / f, yamlio.MAX_BYTES, "catalog file"))   # regular files only, recorded as read
    if cache.cache_dir() is None:
        return _load(directory, digest.hexdigest())
    # the folder as given, since the catalog's entries remember their file by that path
    name = cache.key(COMPILED_VERSION, str(directory), str(directory.resolve()), digest.hexdigest(),
                     cache.source_of("inputs.catalog", "base.yamlio"))
    cat = _compiled_get(name)
    if cat is None:
        cat = _load(directory, digest.hexdigest())
        _compiled_put(name, cat)
    return cat


def _mapping(path: Path, key: str | None = None) -> dict:
    """A catalog file that must be a mapping (and, with `key`, hold a mapping under it)."""
    data = yamlio.load(path) or {}
    if not isinstance(data, dict):
        raise InputError(Problem(f"expected a mapping, not a {type(data).__name__}", str(path), getattr(data, "line", 1)))
    if key is None:
        return data
    inner = data.get(key) or {}
    if not isinstance(inner, dict):
        raise InputError(Problem(f"'{key}' must be a mapping", str(path), yamlio.line_of(data, key, 1), key))
    for k, v in inner.items():
        if not isinstance(v, dict):
            raise InputError(Problem("each source is a mapping {what: ..., published: ..., retrieved: ...}", str(path),
                                     yamlio.line_of(inner, k, 1), f"{key}.{k}"))
    return inner


def _check_efficiency(path: Path, eff: dict) -> None:
    """The efficiency shares the estimator divides and multiplies by: numbers where it reads them."""
    col = Collector(str(path))
    for k in ("hbm_share", "link_share"):
        f = eff.get(k)
        v = f.get("v") if isinstance(f, dict) else None
        if not _is_number(v) or not 0 < v <= 1:
            col.add("must be a figure {v: SHARE, src: [...]} with 0 < SHARE <= 1", yamlio.line_of(eff, k, 1), k)
    matmul = eff.get("matmul", {})
    if not isinstance(matmul, dict):
        col.add("must be a mapping", yamlio.line_of(eff, "matmul", 1), "matmul")
        col.raise_if_any()
    shares = matmul.get("default_share")
    for prec in ("bf16", "fp8", "fp4"):        # the estimator falls back to these for any GPU without a measurement
        if not isinstance(shares, dict) or prec not in shares:
            col.add(f"needs a share for {prec}", yamlio.line_of(matmul, "default_share", yamlio.line_of(eff, "matmul", 1)),
                    "matmul.default_share")
    for group in ("measured_tflops", "default_share"):
        table = matmul.get(group, {})
        if not isinstance(table, dict):
            col.add("must be a mapping", yamlio.line_of(matmul, group, 1), f"matmul.{group}")
            continue
        rows = table.values() if group == "measured_tflops" else [table]
        for row in rows:
            if not isinstance(row, dict):
                col.add("must map precisions to figures {v: ..., src: [...]}", yamlio.line_of(matmul, group, 1), f"matmul.{group}")
                continue
            for prec, f in row.items():
                v = f.get("v") if isinstance(f, dict) else None
                if not _is_number(v) or v <= 0 or (group == "default_share" and v > 1):
                    col.add(f"{prec}: must be a figure {{v: NUMBER above 0, src: [...]}}", yamlio.line_of(row, prec, 1),
                            f"matmul.{group}")
    col.raise_if_any()


def _load(directory: Path, digest: str) -> Catalog:
    sources = dict(_mapping(directory / "sources.yaml", "sources"))
    if (directory / MODEL_SOURCES_FILE).is_file():
        sources.update(_mapping(directory / MODEL_SOURCES_FILE, "sources"))
    efficiency = _mapping(directory / "efficiency.yaml")
    _check_efficiency(directory / "efficiency.yaml", efficiency)
    sources.update(_mapping(directory / "efficiency.yaml", "sources"))
    knowledge = _mapping(directory / "knowledge.yaml")
    gpus = load_gpus(directory / "gpus.yaml", sources)
    models = load_models(directory / "models.yaml", sources)
    prices = load_prices(directory / "prices.yaml", gpus)
    for extra in PRICE_FILES[1:]:
        if (directory / extra).is_file():
            prices += load_prices(directory / extra, gpus)
    purchase = load_purchase(directory / PURCHASE_FILE, gpus) if (directory / PURCHASE_FILE).is_file() else {}
    api = load_api_prices(directory / API_PRICE_FILE, models) if (directory / API_PRICE_FILE).is_file() else []
    free_cycles()                 # parsing YAML left some behind
    return Catalog(gpus, models, prices, efficiency, sources, knowledge, digest, purchase, api)


# --- the compiled-catalog cache (plain JSON; see advisor/cache.py) -----------------------------------

COMPILED_VERSION = "catalog-5"


def _enc_figures(figs: dict[str, Figure]) -> list:
    return [[k, cache.pack(f.value), list(f.sources), f.note, f.unknown, cache.pack(f.extra)] for k, f in figs.items()]


def _dec_figures(raw: list) -> dict[str, Figure]:
    return {k: Figure(v, tuple(src), note, unknown, extra) for k, v, src, note, unknown, extra in raw}


def _compiled_put(name: str, cat: Catalog) -> None:
    data = {
        "gpus": [[g.id, g.name, list(g.aliases), g.vendor, g.generation, g.gpu_class, g.status, _enc_figures(g.figures),
                  g.file, g.line] for g in cat.gpus.values()],
        "models": [[m.id, m.name, list(m.aliases), _enc_figures(m.figures), m.file, m.line] for m in cat.models.values()],
        "prices": [[p.gpu, p.gpus_per_instance, p.usd_per_hour, p.provider, p.date, p.source, p.tier, p.file, p.line,
                    p.kind, p.instance, list(p.regions), p.region_count, p.commit, p.usd_per_hour_median, p.note]
                   for p in cat.prices],
        "purchase": cache.pack(cat.purchase),
        "api_prices": [[getattr(a, f.name) for f in fields(ApiPrice)] for a in cat.api_prices],
        "efficiency": cache.pack(cat.efficiency), "sources": cache.pack(cat.sources),
        "knowledge": cache.pack(cat.knowledge), "digest": cat.digest,
    }
    cache.write_json("catalog", name, data)


def _compiled_get(name: str) -> Catalog | None:
    data = cache.read_json("catalog", name, packed=True)
    if data is None:
        return None
    try:
        gpus = {g[0]: GPU(g[0], g[1], tuple(g[2]), g[3], g[4], g[5], g[6], _dec_figures(g[7]), g[8], g[9])
                for g in data["gpus"]}
        models = {m[0]: Model(m[0], m[1], tuple(m[2]), _dec_figures(m[3]), m[4], m[5]) for m in data["models"]}
        prices = [Price(*p[:11], tuple(p[11]), *p[12:]) for p in data["prices"]]
        return Catalog(gpus, models, prices, data["efficiency"], data["sources"], data["knowledge"], data["digest"],
                       data["purchase"], [ApiPrice(*a) for a in data["api_prices"]])
    except (KeyError, TypeError, IndexError, ValueError):
        return None


_CACHE: dict[Path, Catalog] = {}


def default() -> Catalog:
    """The shipped catalog (or the folder GPU_ADVISOR_CATALOG names), loaded once per process."""
    directory = Path(os.environ.get("GPU_ADVISOR_CATALOG") or CATALOG_DIR)
    if directory not in _CACHE:
        for f in ("sources.yaml", "gpus.yaml", "models.yaml", "prices.yaml", "efficiency.yaml", "knowledge.yaml"):
            if not (directory / f).is_file():
                raise InputError(Problem(f"the catalog folder has no {f}", str(directory)))
        _CACHE[directory] = load(directory)
    return _CACHE[directory]
