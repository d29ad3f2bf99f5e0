"""The catalog files of a site's figures and the estimator's factors, checked for the shape their readers
take: purchase.yaml (what buying a GPU costs, and the data centre's power, cooling and hosting figures:
numbers.cost, numbers.owning) and efficiency.yaml's shares (numbers.calibration). Loaded by catalog.load.
"""
from __future__ import annotations

from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.inputs.figures import is_number

PURCHASE_FILE = "purchase.yaml"


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
             "maintenance_share_per_year", "utilisation",
             "workstation_usd_per_kwh")     # the household tariff a desk machine pays (issue 22)
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


def check_efficiency(path: Path, eff: dict) -> None:
    """The efficiency shares the estimator divides and multiplies by: numbers where it reads them."""
    col = Collector(str(path))
    for k in ("hbm_share", "link_share"):
        f = eff.get(k)
        v = f.get("v") if isinstance(f, dict) else None
        if not is_number(v) or not 0 < v <= 1:
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
                if not is_number(v) or v <= 0 or (group == "default_share" and v > 1):
                    col.add(f"{prec}: must be a figure {{v: NUMBER above 0, src: [...]}}", yamlio.line_of(row, prec, 1),
                            f"matmul.{group}")
    col.raise_if_any()
