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

    gpu-advisor prices import ../shared/reference/prices --skip seeweb --out catalog/prices-skypilot.yaml
"""
from __future__ import annotations

import csv
import datetime
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from advisor.base.errors import InputError, Problem
from advisor.base.files import note_read

SOURCE_REPO = "skypilot-org/skypilot-catalog"

PROVIDERS = {"aws": "AWS", "gcp": "GCP", "azure": "Azure", "lambda": "Lambda", "runpod": "RunPod", "nebius": "Nebius",
             "primeintellect": "Prime Intellect", "shadeform": "Shadeform", "cudo": "Cudo Compute",
             "hyperbolic": "Hyperbolic", "mithril": "Mithril", "seeweb": "Seeweb", "simplepod": "SimplePod",
             "vast": "Vast.ai", "oci": "OCI", "paperspace": "Paperspace", "fluidstack": "Fluidstack",
             "do": "DigitalOcean", "ibm": "IBM", "vultr": "Vultr", "scp": "SCP"}

#: clouds whose Price is an auction bid equal to SpotPrice on every row (the snapshot's README): spot only
AUCTION_CLOUDS = {"mithril"}

#: SkyPilot accelerator name (upper case, '_' read as '-') -> catalog GPU id. Names that need the
#: instance type or the memory to decide (A100, H100) are handled in map_accelerator.
SIMPLE = {
    "H200": "h200-sxm", "H200-SXM": "h200-sxm", "B200": "b200", "B300": "b300",
    "L40S": "l40s", "L40": "l40", "L4": "l4", "A10": "a10", "T4": "t4",
    "RTX4090": "rtx-4090", "RTX5090": "rtx-5090", "RTXPRO6000BLACKWELL": "rtx-pro-6000", "RTXPRO6000": "rtx-pro-6000",
    "MI300X": "mi300x", "MI325X": "mi325x", "MI355X": "mi355x", "GAUDI3": "gaudi-3",
}
#: names known and deliberately not mapped: the catalog has no such GPU (A10G is AWS's own A10 variant
#: with other figures; H100 NVL and GH200 lack a sourced bf16 rate in ../shared/reference/gpus.yaml)
NOT_IN_CATALOG = {"A10G", "H100-NVL", "H200-NVL", "GH200", "GB200", "V100", "V100-32GB", "V100-32G", "P100", "P4", "A40",
                  "A30", "A16", "A800", "A6000", "RTXA6000", "A5000", "RTXA5000", "A4000", "RTXA4000", "RTXA4500",
                  "RTXA2000", "RTX6000", "RTX6000-ADA", "RTX6000ADA", "RTX4000-ADA", "RTX3090", "RTX3080", "RTX3070",
                  "RTX3060", "RTX3060TI", "RTX5070", "RTX5080", "T4G", "RADEON PRO V520", "GAUDI2", "GRAYSKULL-E75",
                  "GRAYSKULL-E150", "TPU-V2-8", "TPU-V3-8", "TPU-V4-8"}
TPU = re.compile(r"^tpu-(v5litepod|v5p|v6e)-(\d+)$", re.I)
TPU_IDS = {"v5litepod": "tpu-v5e", "v5p": "tpu-v5p", "v6e": "tpu-v6e"}


def map_accelerator(name: str, count: int, memory_gib: float | None, instance: str, cloud: str = "") -> tuple[str | None, int]:
    """(catalog GPU id or None, GPUs per instance) for one SkyPilot row. TPU slices are priced whole:
    tpu-v5litepod-N and tpu-v6e-N are N chips, tpu-v5p-N counts TensorCores (two per chip)."""
    name = (name or "").strip()
    m = TPU.match(name)
    if m:
        gen, n = m.group(1).lower(), int(m.group(2))
        chips = n // 2 if gen == "v5p" else n
        return (TPU_IDS[gen], chips) if chips >= 1 else (None, count)
    key = name.upper().replace("_", "-")
    inst = (instance or "").lower()
    pcie = "pcie" in inst
    nvl = re.search(r"nvl(?!ink)", inst) is not None      # H100/H200 NVL cards, not "NVLINK" servers
    if key in SIMPLE:
        if nvl and key.startswith("H200"):
            return None, count
        return SIMPLE[key], count
    if key in ("H100", "H100-SXM", "H100-MEGA", "H100-PCIE"):
        if (memory_gib and memory_gib > 90) or nvl:
            return None, count                     # H100 NVL 94 GB (cudo files it as "H100")
        if key == "H100-PCIE" or pcie or (cloud == "runpod" and key == "H100"):
            return "h100-pcie", count              # runpod: "H100" is its PCIe card, "H100-SXM" the SXM one
        return "h100-sxm", count
    if key in ("A100", "A100-80GB", "A100-80GB-SXM", "A100-80G", "A100-80GB-PCIE", "A100-40GB"):
        if key == "A100":
            if memory_gib:
                size = 80 if memory_gib > 60 else 40
            elif re.search(r"80g", inst):
                size = 80
            elif re.search(r"40g", inst):
                size = 40
            else:
                return None, count                 # shadeform files 40 and 80 GB cards alike as "A100"
        else:
            size = 40 if key == "A100-40GB" else 80
        if key == "A100-80GB-PCIE" or pcie or (cloud == "runpod" and key == "A100-80GB"):
            return f"a100-{size}gb-pcie", count    # runpod: "A100-80GB" is PCIe, "A100-80GB-SXM" the SXM one
        return f"a100-{size}gb-sxm", count
    return None, count


@dataclass
class Offer:
    """One instance type of one cloud, aggregated over its regions."""

    cloud: str
    instance: str
    accelerator: str
    count: int
    memory_gib: float | None
    prices: list[float] = field(default_factory=list)
    spots: list[float] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    region_count: int | None = None
    price_min: float | None = None
    price_median: float | None = None
    spot_min: float | None = None
    spot_median: float | None = None
    commit: str | None = None
    source: str = ""

    def finish(self) -> None:
        if self.prices:
            self.price_min, self.price_median = min(self.prices), round(statistics.median(self.prices), 4)
        if self.spots:
            self.spot_min, self.spot_median = min(self.spots), round(statistics.median(self.spots), 4)
        if self.regions:
            self.region_count = len(set(self.regions))


def _num(text) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v and v > 0 else None


def _gpu_memory(info: str, count: int) -> float | None:
    """GiB per accelerator from SkyPilot's GpuInfo (a Python-literal dict): SizeInMiB of the first GPU."""
    m = re.search(r"'SizeInMiB':\s*([\d.]+)", info or "")
    return float(m.group(1)) / 1024 if m else None


def read_vms_csv(path: Path, cloud: str, commit: str | None) -> list[Offer]:
    """SkyPilot's vms.csv: one row per instance type and region/zone. GCP's accelerator-only rows (no
    InstanceType: the price of the GPUs without the host VM) and host rows without accelerators are
    skipped: neither is the price of a whole GPU machine."""
    offers: dict[tuple, Offer] = {}
    note_read(path, "CSV file")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        need = {"AcceleratorName", "AcceleratorCount", "Price"}
        if not reader.fieldnames or not need <= set(reader.fieldnames):
            raise InputError(Problem(f"not a SkyPilot vms.csv (needs columns {', '.join(sorted(need))})", str(path)))
        for row in reader:
            acc = (row.get("AcceleratorName") or "").strip()
            inst = (row.get("InstanceType") or "").strip()
            if not acc:
                continue
            if not inst:
                if TPU.match(acc):
                    inst = acc              # TPU slices are priced whole on an accelerator row
                else:
                    continue                # GPU-only part of a GCP price: the host VM is extra
            count = int(float(row.get("AcceleratorCount") or 1))
            key = (inst, acc, count)
            o = offers.get(key)
            if o is None:
                o = offers[key] = Offer(cloud, inst, acc, count, _gpu_memory(row.get("GpuInfo", ""), count), commit=commit,
                                        source=f"{SOURCE_REPO} catalogs/v7/{cloud}/vms.csv")
            price, spot = _num(row.get("Price")), _num(row.get("SpotPrice"))
            if TPU.match(acc) and (price or 0) >= 700:   # 700.0: GCP's placeholder TPU rows (the snapshot's README)
                continue
            if price is not None:
                o.prices.append(price)
            if spot is not None:
                o.spots.append(spot)
            region = (row.get("Region") or "").strip()
            if region and (price is not None or spot is not None):
                o.regions.append(region)
    for o in offers.values():
        o.finish()
        o.regions = sorted(set(o.regions))
    return list(offers.values())


def read_snapshot_csv(path: Path, commit: str | None) -> list[Offer]:
    """The reference snapshot's <cloud>.csv (already aggregated per instance type). Rows the snapshot
    marks as partial prices ('[host VM only ...]', 'accel:... [GPU only ...]') are skipped."""
    out = []
    note_read(path, "CSV file")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "price_usd_per_hour_min" not in reader.fieldnames:
            raise InputError(Problem("not a price snapshot CSV (needs price_usd_per_hour_min)", str(path)))
        for row in reader:
            inst = row["instance_type"]
            if "host VM only" in inst or "GPU only" in inst:
                continue
            note = None
            m = re.search(r"\s*\[(.*)\]$", inst)
            if m:
                note, inst = m.group(1), inst[:m.start()]
            o = Offer(row["cloud"], inst, row["accelerator"], int(float(row["accelerator_count"] or 1)),
                      _num(row.get("gpu_memory_gib")), commit=commit,
                      source=f"{SOURCE_REPO} catalogs/v7/{row['cloud']}/vms.csv (via the snapshot in {path.parent.name}/)")
            o.price_min, o.price_median = _num(row["price_usd_per_hour_min"]), _num(row["price_usd_per_hour_median"])
            o.spot_min, o.spot_median = _num(row.get("spot_usd_per_hour_min")), _num(row.get("spot_usd_per_hour_median"))
            o.region_count = int(row["regions_count"]) if (row.get("regions_count") or "").isdigit() else None
            if note:
                o.source += f"; {note}"
            out.append(o)
    return out


def _readme_facts(folder: Path) -> tuple[dict[str, str], str | None]:
    """Commits per cloud and the retrieval date from the snapshot's README table."""
    readme = folder / "README.md"
    if not readme.is_file():
        return {}, None
    note_read(readme, "README")
    text = readme.read_text(encoding="utf-8")
    commits = {m.group(1): m.group(2) for m in re.finditer(r"^\|\s*([a-z]+)\s*\|\s*catalogs/v7/\S+\s*\|\s*`([0-9a-f]{40})`", text, re.M)}
    if not commits:                 # a README naming one commit for every file of the folder
        found = set(re.findall(r"`([0-9a-f]{40})`", text))
        if len(found) == 1:
            commits = {"*": found.pop()}
    m = re.search(r"(?:Retrieved|read) (\d{4}-\d{2}-\d{2})", text)
    return commits, (m.group(1) if m else None)


def _git_commit(folder: Path) -> str | None:
    """HEAD of a git checkout holding `folder` (read from .git, no git needed)."""
    for d in [folder, *folder.parents]:
        git = d / ".git"
        if git.is_dir():
            head = (git / "HEAD").read_text().strip()
            if head.startswith("ref: "):
                ref = git / head[5:]
                if ref.is_file():
                    return ref.read_text().strip()
                packed = git / "packed-refs"
                if packed.is_file():
                    for line in packed.read_text().splitlines():
                        if line.endswith(head[5:]):
                            return line.split()[0]
                return None
            return head
    return None


def collect(path: Path, skip: tuple[str, ...] = (), commit: str | None = None) -> tuple[list[Offer], str | None]:
    """Every offer under PATH: a vms.csv, a folder of cloud folders holding vms.csv, or the snapshot folder.
    Returns the offers and the retrieval date the source states (None: not stated)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(Problem("no such file or folder", str(path)))
    offers: list[Offer] = []
    date = None
    if (path / "catalogs" / "v7").is_dir():      # a skypilot-catalog checkout's root
        path = path / "catalogs" / "v7"
    if path.is_file():
        files = [path]
    else:
        files = sorted(path.glob("*/vms.csv")) or sorted(path.glob("*.csv"))
        if not files:
            raise InputError(Problem("holds no <cloud>/vms.csv (a skypilot-catalog catalogs/v7 folder or ~/.sky/catalogs/v7) "
                                     "and no snapshot <cloud>.csv", str(path)))
    commits, date = _readme_facts(path if path.is_dir() else path.parent)
    for f in files:
        if f.name == "vms.csv":
            cloud = f.parent.name
            if cloud in skip:
                continue
            offers += read_vms_csv(f, cloud, commit or commits.get(cloud) or commits.get("*") or _git_commit(f.parent))
        else:
            cloud = f.stem
            if cloud in skip:
                continue
            offers += read_snapshot_csv(f, commit or commits.get(cloud))
    return offers, date


def price_rows(offers: list[Offer], date: str) -> tuple[list[dict], dict[str, int]]:
    """Catalog price rows (prices.yaml schema) and the accelerator names left unmapped (with row counts)."""
    rows, unmapped = [], {}
    for o in offers:
        gid, n = map_accelerator(o.accelerator, o.count, o.memory_gib, o.instance, o.cloud)
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
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] + ["prices:"]
    for r in rows:
        lines.append("  - {" + ", ".join(f"{k}: {_yaml_scalar(r[k])}" for k in ORDER if r.get(k) is not None) + "}")
    return "\n".join(lines) + "\n"


def import_prices(paths, skip=(), date: str | None = None, commit: str | None = None) -> tuple[str, list[dict], dict[str, int]]:
    """The price file text for every offer under PATHS, its rows and the unmapped accelerator names."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    offers, dates = [], []
    for p in paths:
        found, stated = collect(Path(p), tuple(skip), commit)
        offers += found
        dates += [stated] if stated else []
    stated = max(dates) if dates else None
    path = " ".join(str(p) for p in paths)
    when = date or stated or datetime.date.today().isoformat()
    rows, unmapped = price_rows(offers, when)
    header = (f"Rental prices from SkyPilot's catalog ({SOURCE_REPO}, catalogs/v7), imported by\n"
              f"`gpu-advisor prices import {path}{''.join(' --skip ' + s for s in skip)}` (do not edit by hand: re-run it).\n"
              f"Retrieved {when}; each row names the source file and its commit. usd_per_hour is the cheapest region's\n"
              f"price for the whole instance, usd_per_hour_median the median over regions. kind: on-demand | spot.\n"
              f"{len(rows)} rows; SkyPilot accelerator names not mapped to a catalog GPU: "
              + (", ".join(f"{k} ({v})" for k, v in sorted(unmapped.items())) or "none"))
    return to_yaml(rows, header), rows, unmapped
