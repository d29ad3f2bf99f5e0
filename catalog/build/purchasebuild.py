"""Build catalog/purchase.yaml (purchase prices and data-centre costs) from ../shared/reference/purchase.yaml.

    python catalog/build/purchasebuild.py ../shared/reference/purchase.yaml --out catalog/purchase.yaml

Per GPU: the sources that price one new GPU (list, street, listing, analyst estimates, implied
revenue per unit) are kept with their dates; used-market prices, vendor claims, TCO-model inputs,
figures derived from whole systems (which already include the server) and rows that say they are not
a price are left out. Rows the reference marks `conf: low` are used only when nothing better exists.
`v` is the median of the sources' midpoints and `range` spans every source: the advisor shows both.
SXM and OAM modules are bought in 8-GPU servers (`unit_gpus` = the catalog's gpus_per_node); PCIe
cards one by one. Site figures are the reference's suggested defaults, each with its basis.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

import yaml

#: reference id -> catalog id (only GPUs the reference prices as themselves)
IDS = {"nvidia_h100_sxm": "h100-sxm", "nvidia_h100_pcie": "h100-pcie", "nvidia_h200_sxm": "h200-sxm",
       "nvidia_b200": "b200", "nvidia_a100_40gb_sxm": "a100-40gb-sxm", "nvidia_a100_40gb_pcie": "a100-40gb-pcie",
       "nvidia_a100_80gb_sxm": "a100-80gb-sxm", "nvidia_l40s": "l40s", "nvidia_l40": "l40", "nvidia_l4": "l4",
       "nvidia_t4": "t4", "nvidia_rtx_pro_6000_blackwell": "rtx-pro-6000", "nvidia_rtx_4090": "rtx-4090",
       "nvidia_rtx_5090": "rtx-5090", "amd_mi300x": "mi300x", "amd_mi355x": "mi355x", "intel_gaudi3": "gaudi-3",
       "huawei_ascend_910c": "ascend-910c", "nvidia_rtx_5060_ti_16gb": "rtx-5060-ti-16gb",
       "nvidia_rtx_5070_ti": "rtx-5070-ti", "nvidia_rtx_4060_ti_16gb": "rtx-4060-ti-16gb"}
#: reference rows that price a whole rack -> (catalog id, GPUs in it): NVL72 racks are sold whole, with their
#: Grace CPUs, NVLink Switch trays, power shelves and liquid-cooling manifolds inside the price
RACKS = {"nvidia_gb200_nvl72_rack": ("gb200-nvl72", 72), "nvidia_gb300_nvl72_rack": ("gb300-nvl72", 72)}
#: rows and site defaults the shared reference lacks (16 GB consumer cards, the residential tariff)
EXTRA = Path(__file__).resolve().parent / "purchase-extra.yaml"
KEEP_KINDS = {"list", "street", "listing", "analyst_est", "implied"}
SITE = {  # purchase.yaml suggested_defaults param -> our site figure
    "electricity_usd_per_kwh": "usd_per_kwh", "pue": "pue", "colo_usd_per_kw_month": "hosting_usd_per_kw_month",
    "depreciation_years": "amortisation_years", "server_overhead_on_gpu_price": "server_overhead",
    "opex_excl_power_pct_capex_per_year": "maintenance_share_per_year", "busy_utilisation": "utilisation",
    "residential_usd_per_kwh": "workstation_usd_per_kwh"}


def _usable(src: dict) -> bool:
    what = str(src.get("what", ""))
    return (src.get("kind") in KEEP_KINDS and src.get("value") is not None and not src.get("currency")
            and "NOT a price" not in what and "A10G" not in what and "DGX" not in what)


def _bounds(v) -> tuple[float, float] | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v), float(v)
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return float(v[0]), float(v[1])
    return None


def gpu_entry(row: dict, gpus_per_node: int, form: str, rack: int | None = None) -> dict | None:
    """One GPU's purchase figure; `rack`: the row prices a rack of that many GPUs, bought whole (the
    figure per GPU is the rack's price / rack, and the rack already holds the servers around them)."""
    # a rack row's source with its own `what` prices something else: more than the rack ("all-in incl.
    # external networking") or a part of it ("liquid-cooling components only")
    usable = [s for s in row.get("sources") or [] if _usable(s) and not (rack and s.get("what"))]
    good = [s for s in usable if _bounds(s["value"]) and s.get("conf") != "low"]
    if not good:
        good = [s for s in usable if _bounds(s["value"])]
    if not good:
        return None
    per = rack or 1
    bounds = [tuple(x / per for x in _bounds(s["value"])) for s in good]
    mids = [(a + b) / 2 for a, b in bounds]
    years = sorted({int(y) for s in good for y in re.findall(r"(?:19|20)\d\d", str(s.get("date", "")))})
    date = (f"{years[0]}" if len(years) == 1 else f"{years[0]}-{years[-1]}") if years else "unknown"
    unit = rack or (gpus_per_node if form in ("sxm", "oam") else 1)
    analysts = {s["src"] for s in good if s.get("kind") == "analyst_est"}
    basis = "one analyst's estimate" if len(analysts) == 1 and len(good) == 1 else None
    if rack and len(analysts) == len(good):
        basis = f"analyst estimates of the {rack}-GPU rack's price, / {rack} per GPU (no list price is published)"
    return {"what": row.get("what"), "unit_gpus": unit, **({"basis": basis} if basis else {}),
            **({"includes_server": True} if rack else {}),
            "usd_per_gpu": {"v": round(statistics.median(mids)), "range": [round(min(a for a, _ in bounds)), round(max(b for _, b in bounds))],
                            "date": date, "low_confidence": all(s.get("conf") == "low" for s in good),
                            "sources": [f"{s['src']} ({s.get('kind')}, {s.get('date', 'undated')}: "
                                        f"{'$' + format(s['value'], ',') if not isinstance(s['value'], list) else '$' + format(s['value'][0], ',') + '-' + format(s['value'][1], ',')}"
                                        f"{' per rack' if rack else ''})"
                                        for s in good]}}


def build(reference: Path, gpus_yaml: Path, extra: Path = EXTRA) -> str:
    ref = yaml.safe_load(reference.read_text())
    more = yaml.safe_load(extra.read_text()) if extra.exists() else {}
    rows = {}
    for row in ref["purchase_prices"] + (more.get("purchase_prices") or []):
        if row["gpu"] in rows:
            rows[row["gpu"]] = {**rows[row["gpu"]], "sources": rows[row["gpu"]]["sources"] + row["sources"]}
        else:
            rows[row["gpu"]] = row
    defaults = ref["operating_costs"]["suggested_defaults"] + ((more.get("operating_costs") or {}).get("suggested_defaults") or [])
    cat = {g["id"]: g for g in yaml.safe_load(gpus_yaml.read_text())["gpus"]}
    out_gpus = {}
    for row in rows.values():
        gid, rack = RACKS.get(row["gpu"], (IDS.get(row["gpu"]), None))
        if not gid:
            continue
        g = cat[gid]
        e = gpu_entry(row, int(g["gpus_per_node"]["v"]), g["form_factor"]["v"], rack)
        if e:
            out_gpus[gid] = e
    site = {}
    for d in defaults:
        key = SITE.get(d["param"])
        if not key:
            continue
        rng = d.get("range") or ([min(d["options"].values()), max(d["options"].values())] if d.get("options") else None)
        origin = "catalog/build/purchase-extra.yaml" if d in defaults[len(ref["operating_costs"]["suggested_defaults"]):] else "../shared/reference/purchase.yaml"
        site[key] = {"v": d["value"], "range": rng, "src": f"{origin} suggested_defaults.{d['param']}: {d['basis']}",
                     "date": "2026-12-01 (collected)" if origin.startswith("catalog") else "2026-11-30 (collected)"}
    doc = {"gpus": out_gpus, "site": site}
    head = ("# Purchase prices per GPU and data-centre costs, for rent versus buy (docs/catalog.md).\n"
            f"# Built by `python catalog/build/purchasebuild.py {reference}` (do not edit by hand: re-run it) from\n"
            "# ../shared/reference/purchase.yaml (collected 2026-11-30 from stored copies of public sources) and\n"
            "# catalog/build/purchase-extra.yaml (16 GB consumer cards, residential tariff; collected 2026-12-01).\n"
            "# usd_per_gpu.v = median of the sources' midpoints; range = lowest to highest source. No NVIDIA/AMD\n"
            "# data-centre GPU has a public list price: these are street prices, listings and analyst estimates.\n"
            "# A GPU missing here has no purchase price: on premises its cost is unknown, never guessed.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=200, allow_unicode=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python catalog/build/purchasebuild.py")
    ap.add_argument("reference", type=Path)
    ap.add_argument("--gpus", type=Path, default=Path(__file__).resolve().parents[1] / "gpus.yaml")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    text = build(a.reference, a.gpus)
    if a.out:
        a.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
