"""The workload's `constraints:` (what the site or the budget rules out) and `fleet:` (what the team
already owns or has reserved): their schema, values and reading. Split from advisor.inputs.workload,
which reads the rest of a workload and re-exports these names."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError
from advisor.inputs import links
from advisor.inputs.catalog import Catalog
from advisor.inputs.prices import check_providers
from advisor.inputs.schema import Spec, read_value, _suggest
from advisor.inputs.servicelevels import LATENCY_FIELDS

#: providers or regions a workload may name (each price row is checked against the set of them)
MAX_NAMES = 100
DEPLOYMENTS = ("cloud", "on-prem", "air-gapped", "workstation")
FLEET_FIELDS = {"gpu": "GPU id or alias", "count": "GPUs owned or reserved", "nodes": "nodes they sit in",
                "location": "where they are", "interconnect": "links between them (e.g. NVLink + InfiniBand)",
                "usd_per_gpu_hour": "the team's own negotiated price per GPU-hour (reserved capacity), replacing the running cost"}

CONSTRAINTS: dict[str, Spec] = {
    "import_restricted": Spec("bool", "The team cannot obtain US export-controlled accelerators (T08).", default=False),
    "liquid_cooling": Spec("bool", "The data centre offers liquid cooling (T10).", default=True),
    "power_kw_per_node": Spec("float", "Power available per node (rack position; on a workstation, its power supply), kW (C14).", min=0.1, max=1000, unit="kW"),
    "power_kw_per_rack": Spec("float", "Power available per rack, kW: sets how many nodes share a rack (C14).", min=0.1, max=10_000, unit="kW"),
    "deployment": Spec("enum", "Where the GPUs run (K02): a cloud, the team's data centre, an isolated one, or a desk or lab workstation (wall power, no hosting).", DEPLOYMENTS, default="cloud"),
    "jobs_per_month": Spec("float", "Training on owned hardware: jobs the cluster runs a month; each job carries its share of the month's owning cost.", min=0.01, max=100_000, unit="jobs"),
    "load": Spec("enum", "Steady or irregular load (T11: irregular favours renting).", ("steady", "irregular"), default="steady"),
    "budget_usd_per_hour": Spec("float", "Most the team will pay per hour for the whole deployment.", min=0.01, max=1e7, unit="USD/h"),
    "budget_usd": Spec("float", "Training with a token budget: most the team will pay for the whole job (every hour and any reservation it books).", min=1, max=1e11, unit="USD"),
    "max_gpus": Spec("int", "Most GPUs the team can use.", min=1, max=100_000, unit="GPUs"),
    "deadline_hours": Spec("float", "Training, or an offline batch job (latency: batch with a volume): hours by which the job must finish (adds data-parallel replicas); 48h, 2 days and 90 min are read too.", min=0.01, max=1e6, unit="h"),
    "gpus": Spec("gpus", "Consider only these GPUs (ids or aliases)."),
    "spot": Spec("bool", "Spot (interruptible) instances may be rented; training then needs checkpointing.", default=False),
    "providers": Spec("names", "Rent only from these providers (e.g. AWS, Lambda, RunPod; case-insensitive)."),
    "regions": Spec("names", "Rent only in these regions (offers whose regions are recorded)."),
    "amortisation_years": Spec("float", "On premises: years over which the hardware is written off.", min=0.5, max=20, unit="years"),
    "usd_per_kwh": Spec("float", "On premises: electricity price.", min=0.001, max=10, unit="USD/kWh"),
    "pue": Spec("float", "On premises: power usage effectiveness of the data centre (facility / IT power).", min=1, max=5),
    "hosting_usd_per_kw_month": Spec("float", "On premises: hosting (colocation) per kW of IT load per month, power excluded.", min=0, max=10_000, unit="USD/kW-month"),
    "busy_share": Spec("float", "On premises: share of hours the GPUs are busy (renting them instead is paid for those only; owning costs run on).", min=0.01, max=1, reads="share"),
    "utilisation": Spec("float", "The old name of busy_share (read for one release).", min=0.01, max=1, reads="share"),
}

@dataclass(frozen=True)
class Constraints:
    """What the site or the budget rules out."""

    import_restricted: bool = False
    liquid_cooling: bool = True
    power_kw_per_node: float | None = None
    power_kw_per_rack: float | None = None
    deployment: str = "cloud"
    jobs_per_month: float | None = None
    load: str = "steady"
    budget_usd_per_hour: float | None = None
    budget_usd: float | None = None           # training with a token budget: most paid for the whole job
    max_gpus: int | None = None
    deadline_hours: float | None = None
    gpus: tuple[str, ...] = ()
    spot: bool = False
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    amortisation_years: float | None = None
    usd_per_kwh: float | None = None
    pue: float | None = None
    hosting_usd_per_kw_month: float | None = None
    busy_share: float | None = None           # on premises: share of hours busy (rent versus buy)


@dataclass(frozen=True)
class FleetEntry:
    """GPUs the team owns or has reserved: priced at their running cost, or at the team's own rate."""

    gpu: str
    count: int
    nodes: int | None = None
    location: str | None = None
    interconnect: str | None = None
    usd_per_gpu_hour: float | None = None


def _misplaced(key, workload_fields) -> str:
    """Where a key written under constraints goes: a service level under latency:, a workload field at
    the top level; or ''."""
    if key in LATENCY_FIELDS:
        return f"; a service level goes under latency: (latency: {{{key}: ...}})"
    if key in workload_fields:
        return "; it is a workload field, not a constraint: write it at the top level"
    return ""


def read_constraints(raw: dict, catalog: Catalog, col: Collector, file: str, workload_fields=()) -> Constraints:
    """`constraints:` read field by field; a workload field written here (`workload_fields`) is pointed back
    to the top level."""
    values = {}
    for key, v in raw.items():
        line = yamlio.line_of(raw, key)
        if key not in CONSTRAINTS:
            col.add(f"unknown constraint{_misplaced(key, workload_fields) or _suggest(key, CONSTRAINTS)}", line, f"constraints.{key}")
            continue
        if v is None:
            continue
        spec = CONSTRAINTS[key]
        if spec.kind == "gpus":
            if not isinstance(v, list):
                col.add("must be a list of GPU ids", line, "constraints.gpus")
                continue
            from advisor.inputs.names import select_many      # H100, H100:8 (at most 8 cards), 80GB+
            try:
                ids, count = select_many([str(x) for x in v], catalog, "constraints.gpus", file,
                                         [yamlio.line_of(v, i, line) for i in range(len(v))])
            except InputError as exc:
                col.problems.extend(exc.problems)
                continue
            values["gpus"] = tuple(ids)
            if count is not None:
                values["gpus_count"] = count
            continue
        if spec.kind == "names":
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() and len(x) < 100 for x in v):
                col.add("must be a list of names", line, f"constraints.{key}")
                continue
            if len(v) > MAX_NAMES:
                col.add(f"must be at most {MAX_NAMES} names (got {len(v):,})", line, f"constraints.{key}")
                continue
            values[key] = tuple(dict.fromkeys(x.strip() for x in v))
            if key == "providers":
                check_providers(values[key], v, catalog.prices, col, line)
            continue
        checked = read_value(spec, v, col, f"constraints.{key}", line)
        if checked is not None:
            values[key] = checked
    if "gpus_count" in values:       # GPU:N caps the cards of every plan, as max_gpus does (the lower wins)
        count = values.pop("gpus_count")
        values["max_gpus"] = min(count, values.get("max_gpus") or count)
    if "utilisation" in values:
        # constraints.utilisation named what busy_share names (the top-level `utilisation` is the memo's share
        # of the month): the old name is read for one release
        old = values.pop("utilisation")
        if values.setdefault("busy_share", old) != old:
            col.add("is the old name of busy_share; give busy_share only", yamlio.line_of(raw, "utilisation"), "constraints.utilisation")
    return Constraints(**values)


def parse_fleet(raw, catalog: Catalog, col: Collector, file: str, line: int | None) -> tuple[FleetEntry, ...]:
    """`fleet:` (in a workload or a --fleet file): a list of {gpu, count, ...}; each GPU once."""
    if not isinstance(raw, list) or not raw:
        col.add("must be a list of {gpu, count, nodes, location, interconnect, usd_per_gpu_hour}", line, "fleet")
        return ()
    out: dict[str, FleetEntry] = {}
    for i, e in enumerate(raw):
        at = yamlio.line_of(raw, i, line)
        if not isinstance(e, dict):
            col.add("must be a mapping {gpu: ID, count: N, ...}", at, f"fleet[{i}]")
            continue
        vals: dict = {}
        for k, v in e.items():
            kat = yamlio.line_of(e, k, at)
            if k not in FLEET_FIELDS:
                col.add(f"unknown fleet field{_suggest(k, FLEET_FIELDS)}", kat, f"fleet[{i}].{k}")
            elif k == "gpu":
                try:
                    vals["gpu"] = catalog.gpu(str(v), f"fleet[{i}].gpu", file, kat).id
                except InputError as exc:
                    col.problems.extend(exc.problems)
            elif k in ("count", "nodes"):
                got = read_value(Spec("int", FLEET_FIELDS[k], min=1, max=1_000_000), v, col, f"fleet[{i}].{k}", kat)
                if got is not None:
                    vals[k] = got
            elif k == "usd_per_gpu_hour":
                got = read_value(Spec("float", FLEET_FIELDS[k], min=0, max=10_000, unit="USD/h"), v, col, f"fleet[{i}].{k}", kat)
                if got is not None:
                    vals[k] = got
            elif k == "interconnect" and v is not None:
                try:
                    links.read(str(v))        # a closed vocabulary: "no NVLink" is refused, never read as NVLink
                    vals[k] = str(v)
                except ValueError as exc:
                    col.add(str(exc), kat, f"fleet[{i}].{k}")
            elif v is not None:
                vals[k] = str(v)
        if "gpu" not in e or "count" not in e:
            col.add("needs gpu and count", at, f"fleet[{i}]")
            continue
        if "gpu" in vals and "count" in vals:
            if vals.get("nodes", 1) > vals["count"]:
                col.add(f"{vals['count']} cards cannot fill {vals['nodes']} nodes", yamlio.line_of(e, "nodes", at), f"fleet[{i}].nodes")
                continue
            if vals["gpu"] in out:
                col.add(f"{vals['gpu']} is listed twice: give one entry with the total count", at, f"fleet[{i}].gpu")
                continue
            out[vals["gpu"]] = FleetEntry(**vals)
    return tuple(out.values())


def load_fleet(path: str | Path, catalog: Catalog) -> tuple[FleetEntry, ...]:
    """A --fleet file: `fleet: [...]` (or the bare list)."""
    data = yamlio.load(path)
    col = Collector(str(path))
    raw = data.get("fleet") if isinstance(data, dict) else data
    got = parse_fleet(raw, catalog, col, str(path), yamlio.line_of(data, "fleet", 1) if isinstance(data, dict) else 1)
    col.raise_if_any()
    return got


