"""The catalog: GPUs, models, prices and efficiency factors, each figure with its source and date.

Loaded from catalog/*.yaml (see docs/catalog.md) and kept compiled in the cache. Lookup is by stable
id or alias, case-insensitive (names.py); figures and their checks are figures.py's, price rows and
their sources prices.py's.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path

from advisor import HOME
from advisor.base import cache, yamlio
from advisor.inputs.apiprices import API_PRICE_FILE, ApiPrice, load_api_prices
from advisor.inputs.engines import ENGINE_FILE, load_engines
from advisor.inputs.capacity import CAPACITY_FILE, load_capacity
from advisor.inputs.fabric import FABRIC_FILE, load_fabric
from advisor.inputs.sitefiles import PURCHASE_FILE, check_efficiency, load_purchase
from advisor.base.errors import Collector, InputError, Problem
from advisor.base.gcpause import free_cycles, loads_for_good
from advisor.base.files import read_input
from advisor.inputs import prices as prices_mod
from advisor.inputs.figures import NONE, Figure, check_enum, check_non_negative, check_numbers, check_sources, figures_of
from advisor.inputs.modelchecks import check_model_invariants, check_precision
from advisor.inputs.modelchecks import PRECISIONS, model_invariants  # noqa: F401  (read here by the workload's schema)
from advisor.inputs.names import release_of, name_index, norm, resolve
from advisor.inputs.prices import PRICE_FILES, Price, PriceFile, PriceSource

CATALOG_DIR = HOME / "catalog"

VENDORS = ("nvidia", "amd", "huawei", "intel", "google")
GENERATIONS = ("turing", "ampere", "ada", "hopper", "blackwell", "rubin", "cdna3", "cdna4", "davinci", "gaudi", "tpu")
CLASSES = ("server", "workstation", "consumer")
COOLING = ("air", "liquid", "air-or-liquid")
FORM_FACTORS = ("sxm", "pcie", "oam", "module", "cloud")
SOFTWARE = ("cuda", "rocm", "cann", "habana", "xla")
MATURITY = ("mature", "maturing", "new", "limited")
#: precisions a GPU's tensor units may run natively (gpus.yaml native_precisions)
NATIVE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "int8", "mxfp4", "nvfp4", "fp4", "int4")


_UNREAD = object()


class Figures:
    """A catalog entry's figures (`figures`: name -> Figure), each read as a number once: entries are
    frozen, and the planner reads some figures for every layout it tries."""

    def fig(self, name: str) -> Figure:
        return self.figures.get(name, NONE)

    def num(self, name: str) -> float | None:
        got = self._numbers.get(name, _UNREAD)
        if got is _UNREAD:
            v = self.fig(name).value
            got = self._numbers[name] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        return got

    @cached_property
    def _numbers(self) -> dict:
        # each figure read as a number once (frozen: they never change); the planner reads some
        # figures for every layout it tries
        return {}


@dataclass(frozen=True)
class GPU(Figures):
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
    # months from the GPU's volume shipping (`shipping_since`) to the catalog's `as_of` date: how long its
    # software has had (K12: software lags hardware by about a year); None where either date is not given
    months_shipping: int | None = None

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
    def p2p(self) -> bool:
        """One card can write another's memory directly (NVLink, xGMI or PCIe peer-to-peer); false where
        the catalog says the driver gives none (GeForce), and NCCL stages every transfer in host memory."""
        return self.fig("p2p").value is not False

    @cached_property
    def native_precisions(self) -> tuple[str, ...]:
        return tuple(self.fig("native_precisions").value or ())

    def tflops(self, precision: str) -> float | None:
        """Dense spec rate for a compute precision (bf16, fp8, fp4)."""
        return self.num(f"{precision}_tflops")


@dataclass(frozen=True)
class Model(Figures):
    """A model of the catalog: its architecture figures, each with its source."""

    id: str
    name: str
    aliases: tuple[str, ...]
    figures: dict[str, Figure]
    file: str | None = None
    line: int | None = None

    @property
    def precision(self) -> dict[str, str]:
        """Shipped precision per part: {'all': 'bf16'} or {'experts': 'mxfp4', 'rest': 'bf16'}."""
        v = self.fig("precision").value
        if isinstance(v, dict):
            return dict(v)
        return {"all": v or "bf16"}


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
    engines: dict = field(default_factory=dict)    # engines.yaml: {engines: {id: properties}, defaults: [rules]}
    capacity: dict = field(default_factory=dict)   # capacity.yaml: on-demand capacity, contract rates, spot figures
    fabric: list = field(default_factory=list)     # fabric.yaml: the network between a listing's instances (inputs.fabric)

    @cached_property
    def _gpu_names(self) -> dict[str, str]:
        return name_index(self.gpus.values())

    @cached_property
    def _model_names(self) -> dict[str, str]:
        return name_index(self.models.values())

    def knows_gpu(self, name: str) -> bool:
        """The name is a GPU id, name or alias of the catalog (as `gpu` would resolve it)."""
        return norm(name) in self._gpu_names

    @property
    def gpu_names(self) -> frozenset[str]:
        """Every GPU id, name and alias, normalised as `gpu` looks them up."""
        return frozenset(self._gpu_names)

    def gpu(self, name: str, field_name: str = "gpu", file: str | None = None, line: int | None = None) -> GPU:
        return self.gpus[resolve(name, self._gpu_names, "GPU", field_name, file, line)]

    def model(self, name: str, field_name: str = "model", file: str | None = None, line: int | None = None) -> Model:
        return self.models[resolve(name, self._model_names, "model", field_name, file, line)]

    def model_release(self, name: str, field_name: str = "model", file=None, line=None) -> tuple[Model, str | None]:
        """`model`, also for a release of a catalog architecture (names.release_of), with how it was read."""
        got = None if norm(name) in self._model_names else release_of(name, self._model_names)
        if got and got[1] is None:      # an FP8 checkpoint is its architecture with other bytes: how to ask for it
            raise InputError(Problem(f"unknown model '{name}'; its FP8 weights are model: {got[0]} with precision: fp8", file, line, field_name))
        if not got:
            return self.model(name, field_name, file, line), None
        m = self.models[got[0]]
        return m, (f"model: '{name}' is read as {m.id} ({m.name}), the architecture it is a release of ({got[1]}): memory "
                   "and speed are that model's; give the release's config.json as the model if its architecture or context differs")

    @cached_property
    def _prices_by_gpu(self) -> dict[str, list[Price]]:
        index: dict[str, list[Price]] = {}
        for p in self.prices:
            index.setdefault(p.gpu, []).append(p)
        return index

    def prices_for(self, gpu_id: str) -> list[Price]:
        return list(self._prices_by_gpu.get(gpu_id, ()))

    def with_prices(self, source: PriceSource | str | Path) -> "Catalog":
        """A copy whose prices include the rows of a source, a user's price file by default (a row with
        the key of a shipped one replaces it)."""
        if isinstance(source, (str, Path)):
            source = PriceFile(Path(source))
        extra = source.rows(self.gpus)
        replaced = {p.key for p in extra}
        prices = [p for p in self.prices if p.key not in replaced] + extra
        h = hashlib.sha256(self.digest.encode())
        h.update(source.fingerprint())
        return replace(self, prices=prices, digest=h.hexdigest())    # every other part as loaded


# --- loading -----------------------------------------------------------------------------------

def _doc(path: Path, key: str, col: Collector, data=None):
    data = yamlio.load(path) if data is None else data
    if not isinstance(data, dict) or key not in data:
        col.add(f"expected a mapping with a '{key}' list", getattr(data, "line", 1))
        return None, {}
    return data[key], data.get("sources") or {}



GPU_REQUIRED = ("memory_gb", "bandwidth_tb_s", "bf16_tflops", "gpus_per_node")
GPU_NUMBERS = ("launch_year", "memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops", "gpus_per_node",
               "tdp_w", "mig_instances", "system_kw", "nvlink_domain")
GPU_FIGURES = ("launch_year", "memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops",
               "native_precisions", "interconnect", "form_factor", "gpus_per_node", "tdp_w", "cooling",
               "mig_instances", "us_export_controlled", "software",
               "system_kw",       # power of the vendor's gpus_per_node-GPU system at the wall (issue 22)
               "nvlink_domain",   # GPUs one NVLink domain spans (8 for HGX, 72 for NVL72)
               "p2p",             # false: no peer-to-peer between the cards (GeForce), collectives go through host memory
               "shipping_since")  # "YYYY-MM": volume shipping began (the months to the file's as_of: GPU.months_shipping)


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


MONTH = re.compile(r"(\d{4})-(\d{2})(?:-\d{2})?$")


def _month(text, col: Collector, line, where: str) -> tuple[int, int] | None:
    """(year, month) of a "YYYY-MM" (or "YYYY-MM-DD") text; None, reported, for anything else."""
    m = MONTH.match(str(text)) if text is not None else None
    if not m or not 1 <= int(m.group(2)) <= 12:
        col.add(f"must be a date as YYYY-MM (got {str(text)[:40]!r})", line, where)
        return None
    return int(m.group(1)), int(m.group(2))


def load_gpus(path: Path, sources: dict) -> dict[str, GPU]:
    col = Collector(str(path))
    data = yamlio.load(path)
    items, _ = _doc(path, "gpus", col, data)
    as_of = (_month(data.get("as_of"), col, yamlio.line_of(data, "as_of"), "as_of")
             if isinstance(data, dict) and "as_of" in data else None)
    gpus: dict[str, GPU] = {}
    for line, e, gid in _entries(items, "GPU", col, gpus):
        meta = {"id", "name", "aliases", "vendor", "generation", "class", "status"}
        figs = figures_of(e, col, meta)
        for k in figs:
            if k not in GPU_FIGURES:
                col.add(f"unknown field (known: {', '.join(GPU_FIGURES)})", yamlio.line_of(e, k), f"{gid}.{k}")
        for k in GPU_REQUIRED:
            if not isinstance(figs.get(k, NONE).value, (int, float)):
                col.add("required number is missing or unknown", yamlio.line_of(e, k, line), f"{gid}.{k}")
        check_non_negative(col, figs, e, ("memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops", "tdp_w"))
        check_numbers(col, figs, e, gid, GPU_NUMBERS, positive=GPU_REQUIRED + ("fp8_tflops", "fp4_tflops", "tdp_w"),
                 whole=("gpus_per_node", "mig_instances"))
        check_enum(col, e.get("vendor"), VENDORS, f"{gid}.vendor", yamlio.line_of(e, "vendor", line))
        check_enum(col, e.get("generation"), GENERATIONS, f"{gid}.generation", yamlio.line_of(e, "generation", line))
        check_enum(col, e.get("class"), CLASSES, f"{gid}.class", yamlio.line_of(e, "class", line))
        native = figs.get("native_precisions", NONE).value
        if native is not None and not (isinstance(native, list) and all(isinstance(x, str) and x in NATIVE_PRECISIONS
                                                                          for x in native)):
            col.add(f"must be a list of precisions from {', '.join(NATIVE_PRECISIONS)} (got {str(native)[:60]!r})",
                    yamlio.line_of(e, "native_precisions", line), f"{gid}.native_precisions")
        p2p = figs.get("p2p", NONE).value
        if p2p is not None and not isinstance(p2p, bool):
            col.add(f"must be true or false (got {str(p2p)[:40]!r})", yamlio.line_of(e, "p2p", line), f"{gid}.p2p")
        cooling = figs.get("cooling", NONE).value
        if cooling is not None:
            check_enum(col, cooling, COOLING, f"{gid}.cooling", yamlio.line_of(e, "cooling", line))
        check_sources(col, figs, e, sources, gid)
        since = figs.get("shipping_since", NONE).value
        since = _month(since, col, yamlio.line_of(e, "shipping_since", line), f"{gid}.shipping_since") if since is not None else None
        months = (as_of[0] - since[0]) * 12 + as_of[1] - since[1] if as_of and since else None
        gpus[gid] = GPU(gid, e.get("name", gid), tuple(e.get("aliases") or ()), e.get("vendor"), e.get("generation"),
                        e.get("class"), e.get("status", "shipping"), figs, str(path), line, months)
    col.raise_if_any()
    return gpus


MODEL_FIGURES = ("params_b", "active_params_b", "expert_params_b", "experts", "experts_per_token",
                 "moe_layers",     # layers with routed experts (DeepSeek-V3: 58 of 61, first_k_dense_replace 3)
                 "layers",
                 "hidden_size", "attention_heads", "kv_heads", "head_dim", "sliding_window",
                 "sliding_window_layers", "mla_kv_dim", "mtp_params_b", "mtp_layers", "precision", "checkpoint_gb", "max_context")


MODEL_NUMBERS = tuple(k for k in MODEL_FIGURES if k != "precision")


def load_models(path: Path, sources: dict) -> dict[str, Model]:
    col = Collector(str(path))
    items, _ = _doc(path, "models", col)
    models: dict[str, Model] = {}
    for line, e, mid in _entries(items, "model", col, models):
        figs = figures_of(e, col, {"id", "name", "aliases", "hf_repo"})
        for k in figs:
            if k not in MODEL_FIGURES:
                col.add(f"unknown field (known: {', '.join(MODEL_FIGURES)})", yamlio.line_of(e, k), f"{mid}.{k}")
        for k in ("params_b", "active_params_b"):
            v = figs.get(k, NONE).value
            if not isinstance(v, (int, float)) or v <= 0:
                col.add("required positive number", yamlio.line_of(e, k, line), f"{mid}.{k}")
        check_non_negative(col, figs, e, MODEL_FIGURES[:-2])
        check_numbers(col, figs, e, mid, MODEL_NUMBERS, positive=("params_b", "active_params_b", "checkpoint_gb"),
                 whole=("experts", "experts_per_token", "moe_layers", "layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
                        "sliding_window", "mla_kv_dim", "max_context"))
        check_model_invariants(col, {k: f.value for k, f in figs.items()}, e, mid)
        check_precision(col, figs.get("precision", NONE).value, yamlio.line_of(e, "precision", line), f"{mid}.precision")
        check_sources(col, figs, e, sources, mid)
        aliases = tuple(e.get("aliases") or ()) + ((e["hf_repo"],) if e.get("hf_repo") else ())
        models[mid] = Model(mid, e.get("name", mid), aliases, figs, str(path), line)
    col.raise_if_any()
    return models


MODEL_SOURCES_FILE = "sources-models.yaml"   # sources of the config-derived models (catalog/build/modelbuild.py)


@loads_for_good
def load(directory: Path = CATALOG_DIR) -> Catalog:
    """Load and validate the whole catalog; all problems of a file are reported together. A catalog
    that passed is kept compiled in the cache, keyed by its folder, its files' bytes and the code that reads them."""
    directory = Path(directory)
    files = ["sources.yaml", MODEL_SOURCES_FILE, "gpus.yaml", "models.yaml", *PRICE_FILES, PURCHASE_FILE, "efficiency.yaml",
             "knowledge.yaml", API_PRICE_FILE, ENGINE_FILE, CAPACITY_FILE, FABRIC_FILE]
    digest = hashlib.sha256()
    for f in files:
        if f in (MODEL_SOURCES_FILE, *PRICE_FILES[1:], PURCHASE_FILE, API_PRICE_FILE, ENGINE_FILE, CAPACITY_FILE, FABRIC_FILE) and not os.path.lexists(directory / f):
            continue                   # optional files (a user's catalog folder may lack them)
        digest.update(f.encode())
        digest.update(read_input(directory / f, yamlio.MAX_BYTES, "catalog file"))   # regular files only, recorded as read
    if cache.cache_dir() is None:
        return _load(directory, digest.hexdigest())
    # the folder as given, since the catalog's entries remember their file by that path
    name = cache.key(COMPILED_VERSION, str(directory), str(directory.resolve()), digest.hexdigest(),
                     cache.source_of(*CODE))
    cat = _compiled_get(name)
    if cat is None:
        cat = _load(directory, digest.hexdigest())
        _compiled_put(name, cat)
    return cat


def _mapping(path: Path, key: str | None = None) -> dict:
    """A catalog file that must be a mapping (and, with `key`, hold a mapping under it)."""
    data = yamlio.load(path) or {}
    if not isinstance(data, dict):
        raise InputError(Problem(f"expected a mapping, not a {yamlio.kind(data)}", str(path), getattr(data, "line", 1)))
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


def _load(directory: Path, digest: str) -> Catalog:
    sources = dict(_mapping(directory / "sources.yaml", "sources"))
    if (directory / MODEL_SOURCES_FILE).is_file():
        sources.update(_mapping(directory / MODEL_SOURCES_FILE, "sources"))
    efficiency = _mapping(directory / "efficiency.yaml")
    check_efficiency(directory / "efficiency.yaml", efficiency)
    sources.update(_mapping(directory / "efficiency.yaml", "sources"))
    knowledge = _mapping(directory / "knowledge.yaml")
    gpus = load_gpus(directory / "gpus.yaml", sources)
    models = load_models(directory / "models.yaml", sources)
    prices = [p for source in prices_mod.shipped(directory) for p in source.rows(gpus)]
    purchase = load_purchase(directory / PURCHASE_FILE, gpus) if (directory / PURCHASE_FILE).is_file() else {}
    api = load_api_prices(directory / API_PRICE_FILE, models) if (directory / API_PRICE_FILE).is_file() else []
    engines = {}
    if (directory / ENGINE_FILE).is_file():
        # a catalog folder without engines.yaml serves every plan with efficiency.yaml's single engine figures
        sources.update(_mapping(directory / ENGINE_FILE, "sources"))
        engines = load_engines(directory / ENGINE_FILE, sources, SOFTWARE)
    capacity = load_capacity(directory / CAPACITY_FILE, gpus) if (directory / CAPACITY_FILE).is_file() else {}
    fabric = load_fabric(directory / FABRIC_FILE) if (directory / FABRIC_FILE).is_file() else []
    free_cycles()                 # parsing YAML left some behind
    return Catalog(gpus, models, prices, efficiency, sources, knowledge, digest, purchase, api, engines, capacity, fabric)


# --- the compiled-catalog cache (plain JSON; see advisor/cache.py) -----------------------------------

COMPILED_VERSION = "catalog-6"
#: the modules whose code decides what a compiled catalog holds: a change to any of them is a new key
CODE = ("inputs.catalog", "inputs.sitefiles", "inputs.modelchecks", "inputs.engines", "inputs.figures", "inputs.names",
        "inputs.prices", "inputs.apiprices", "inputs.capacity", "inputs.fabric", "inputs.skypilotnames", "inputs.parallel",
        "base.yamlio", "base.text")


def _enc_figures(figs: dict[str, Figure]) -> list:
    return [[k, cache.pack(f.value), list(f.sources), f.note, f.unknown, cache.pack(f.extra)] for k, f in figs.items()]


def _dec_figures(raw: list) -> dict[str, Figure]:
    return {k: Figure(v, tuple(src), note, unknown, extra) for k, v, src, note, unknown, extra in raw}


def _compiled_put(name: str, cat: Catalog) -> None:
    data = {
        "gpus": [[g.id, g.name, list(g.aliases), g.vendor, g.generation, g.gpu_class, g.status, _enc_figures(g.figures),
                  g.file, g.line, g.months_shipping] for g in cat.gpus.values()],
        "models": [[m.id, m.name, list(m.aliases), _enc_figures(m.figures), m.file, m.line] for m in cat.models.values()],
        "prices": [[p.gpu, p.gpus_per_instance, p.usd_per_hour, p.provider, p.date, p.source, p.tier, p.file, p.line,
                    p.kind, p.instance, list(p.regions), p.region_count, p.commit, p.usd_per_hour_median, p.note]
                   for p in cat.prices],
        "purchase": cache.pack(cat.purchase),
        "api_prices": [[getattr(a, f.name) for f in fields(ApiPrice)] for a in cat.api_prices],
        "engines": cache.pack(cat.engines),
        "capacity": cache.pack(cat.capacity), "fabric": cache.pack(cat.fabric),
        "efficiency": cache.pack(cat.efficiency), "sources": cache.pack(cat.sources),
        "knowledge": cache.pack(cat.knowledge), "digest": cat.digest,
    }
    cache.write_json("catalog", name, data)


def _compiled_get(name: str) -> Catalog | None:
    data = cache.read_json("catalog", name, packed=True)
    if data is None:
        return None
    try:
        gpus = {g[0]: GPU(g[0], g[1], tuple(g[2]), g[3], g[4], g[5], g[6], _dec_figures(g[7]), g[8], g[9], g[10])
                for g in data["gpus"]}
        models = {m[0]: Model(m[0], m[1], tuple(m[2]), _dec_figures(m[3]), m[4], m[5]) for m in data["models"]}
        prices = [Price(*p[:11], tuple(p[11]), *p[12:]) for p in data["prices"]]
        return Catalog(gpus, models, prices, data["efficiency"], data["sources"], data["knowledge"], data["digest"],
                       data["purchase"], [ApiPrice(*a) for a in data["api_prices"]], data["engines"], data["capacity"], data["fabric"])
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
