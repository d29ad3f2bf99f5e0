"""Fit and check the image and video generation speed model on published measurements.

    python bench/diffusion_fit.py            # the fitted shares, then every record's ratio and the check split

Each record of catalog/diffusion-measurements.yaml (MLPerf Inference SDXL, FLUX / SD3.5 / video latency
tables, xDiT multi-GPU runs) is read as a workload of the advisor's (its model, resolution, frames,
steps, guidance, precision) on its GPU and layout (replicas, or Ulysses / ring sequence parallelism),
and its seconds per image or clip on one replica compared with the advisor's
(advisor/kinds/diffusion/speed.py). The fitted figure is the share of the card's achievable matmul rate
(catalog/efficiency.yaml MAMF) a pipeline reaches: one share per denoiser architecture (UNet, MMDiT,
video DiT), the median over the `fit` split of (seconds at the full rate / measured seconds); the `check`
split is kept out and reported (median |error|, worst ratio). Records whose model or GPU the catalogs
lack, and layouts the advisor does not plan (PipeFusion, tensor parallelism), are skipped and counted.
"""
from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.base import yamlio  # noqa: E402
from advisor.base.errors import InputError  # noqa: E402
from advisor.inputs import catalog as catalog_mod, diffusionmodels  # noqa: E402
from advisor.inputs.workload import parse  # noqa: E402
from advisor.kinds.diffusion.shape import shape  # noqa: E402
from advisor.kinds.diffusion.speed import Terms, combine, fit_class, replica_terms  # noqa: E402

MEASUREMENTS = ROOT / "catalog" / "diffusion-measurements.yaml"
SEQUENCE_PARALLEL = ("ulysses", "ring", "usp")
#: the classes fitted apart: image denoisers by architecture, video denoisers together
CLASSES = ("unet", "mmdit", "video")


@dataclass
class Row:
    id: str
    gpu: str
    kind: str            # image | video
    cls: str             # CLASSES
    split: str
    measured_s: float    # seconds per image (clip) on one replica
    terms: Terms         # the advisor's raw terms (speed.replica_terms)
    tool_s: float = 0.0  # the advisor's at the fitted figures


def measured_seconds(r: dict) -> float | None:
    """Seconds per image or clip on one replica, from the record's published figure."""
    m, d = r["measured"], r.get("derived") or {}
    if m["metric"] in ("seconds_per_image", "seconds_per_clip"):
        return float(m["value"])
    if d.get("metric") == "seconds_per_image":
        return float(d["value"])
    if m["metric"] in ("images_per_s", "queries_per_s"):
        per_card = float(m["value"]) / r["cards"] if m.get("per", "system") == "system" else float(m["value"])
        return 1 / per_card
    return None


def workload_text(r: dict, model_id: str) -> str:
    task = "video-generation" if r["kind"] == "video" else "image-generation"
    lines = [f"mode: inference", f"task: {task}", f"model: {model_id}", f"resolution: {r['resolution']}",
             f"steps: {r['steps']}", f"guidance: {5 if r['guidance'] else 1}"]
    if r.get("frames"):
        lines.append(f"frames: {r['frames']}")
    if str(r.get("precision") or "").startswith("fp8"):
        lines.append("precision: fp8")
    return "\n".join(lines) + "\n"


def prepare(records: list[dict], cat) -> tuple[list[Row], list[str]]:
    rows, skipped = [], []
    for r in records:
        method, degree = r["parallel"]["method"], int(r["parallel"].get("degree") or 1)
        if r.get("gpu") not in cat.gpus or not diffusionmodels.knows(r["model"]) or method not in ("none", "replicas") + SEQUENCE_PARALLEL:
            skipped.append(r["id"])
            continue
        seconds = measured_seconds(r)
        try:
            w = parse(yamlio.loads(workload_text(r, r["model"]), r["id"]), cat, r["id"])
        except InputError:
            skipped.append(r["id"])
            continue
        if seconds is None:
            skipped.append(r["id"])
            continue
        sp = degree if method in SEQUENCE_PARALLEL else 1
        terms = replica_terms(w, shape(w), cat.gpus[r["gpu"]], cat, (1, sp))
        rows.append(Row(r["id"], r["gpu"], r["kind"], fit_class(w), r["split"], seconds, terms))
    return rows, skipped


#: the grids the two shared figures are searched over (the shares are then each class's median)
ALLTOALL_US = tuple(range(0, 401, 20))
PASS_MS = tuple(range(0, 151, 10))


def shares_for(rows: list[Row], us: float, ms: float) -> dict[str, float]:
    """Per class, the median over the fit split of the share that makes the compute part match: (compute
    at the full rate) / (measured - the parts the share does not scale), floored at a tenth of it."""
    out = {}
    for cls in CLASSES:
        got = []
        for x in rows:
            if x.cls == cls and x.split == "fit":
                _, parts = combine(x.terms, 1.0, us, ms)
                rest = parts["communication_s"] + parts["overhead_s"]
                got.append(x.terms.compute_s / max(x.measured_s - rest, 0.1 * x.measured_s))
        if got:
            out[cls] = statistics.median(got)
    return out


def apply(rows: list[Row], shares: dict, us: float, ms: float, per_gpu: dict | None = None) -> None:
    for x in rows:
        x.tool_s = combine(x.terms, shares[x.cls] * (per_gpu or {}).get(x.gpu, 1.0), us, ms)[0]


#: a GPU's own factor on the class shares needs this many fit records of it
MIN_GPU_RECORDS = 3


def gpu_factors(rows: list[Row]) -> dict[str, float]:
    """Per GPU with enough fit records, the median of (tool / measured) at the class shares: how much
    more (or less) of its achievable rate a pipeline reaches on it than the class's median card (the
    H20, whose matmul rate is cut and whose memory is not, reaches more)."""
    out = {}
    for g in sorted({x.gpu for x in rows}):
        q = [x.tool_s / x.measured_s for x in rows if x.gpu == g and x.split == "fit"]
        if len(q) >= MIN_GPU_RECORDS and abs(statistics.median(q) - 1) > 0.15:
            out[g] = statistics.median(q)
    return out


def fit(rows: list[Row]) -> tuple[dict, float, float]:
    """The shares, the all-to-all latency and the fixed overhead per pass that give the
    lowest median |error| on the fit split (the check split is never read here)."""
    best = None
    for us in ALLTOALL_US:
        for ms in PASS_MS:
            shares = shares_for(rows, us, ms)
            apply(rows, shares, us, ms)
            per_gpu = gpu_factors(rows)
            apply(rows, shares, us, ms, per_gpu)
            q = [x.tool_s / x.measured_s for x in rows if x.split == "fit"]
            # the fewest rows outside 2x, then the smallest mean |log ratio| (which weighs the far rows, where the
            # median would not: eager and compiled multi-GPU runs pull the all-to-all latency apart)
            score = (sum(not 0.5 <= r <= 2 for r in q), statistics.fmean(abs(math.log(r)) for r in q))
            if best is None or score < best[0]:
                best = (score, shares, us, ms, per_gpu)
    _, shares, us, ms, per_gpu = best
    apply(rows, shares, us, ms, per_gpu)
    return shares, us, ms, per_gpu


def summary(rows: list[Row], kind: str, split: str = "check") -> dict | None:
    sel = [x for x in rows if x.kind == kind and x.split == split]
    if not sel:
        return None
    ratios = [x.tool_s / x.measured_s for x in sel]
    return {"kind": kind, "split": split, "n": len(sel), "median_abs_error": statistics.median(abs(q - 1) for q in ratios),
            "worst_ratio": max(ratios, key=lambda q: max(q, 1 / q)), "within_2x": sum(0.5 <= q <= 2 for q in ratios) / len(sel)}


def run() -> tuple[list[Row], dict, list[str]]:
    """The records prepared, the figures fitted on the fit split, each row at them."""
    cat = catalog_mod.default()
    records = (yamlio.load(MEASUREMENTS) or {}).get("records") or []
    rows, skipped = prepare(records, cat)
    shares, us, ms, per_gpu = fit(rows)
    return rows, {"shares": shares, "sp_alltoall_us": us, "pass_overhead_ms": ms, "per_gpu": per_gpu}, skipped


def main() -> int:
    rows, fitted, skipped = run()
    print("fitted shares of the achievable matmul rate: " + ", ".join(f"{k} {v:.3f}" for k, v in fitted["shares"].items())
          + f"; all-to-all {fitted['sp_alltoall_us']:g} us; fixed overhead {fitted['pass_overhead_ms']:g} ms per pass"
          + "; per GPU: " + (", ".join(f"{g} x{v:.3f}" for g, v in fitted["per_gpu"].items()) or "none"))
    print(f"{'record':<64} {'split':<5} {'tool s':>9} {'measured':>9} {'ratio':>6}")
    for x in rows:
        print(f"{x.id[:64]:<64} {x.split:<5} {x.tool_s:>9,.3g} {x.measured_s:>9,.3g} {x.tool_s / x.measured_s:>6.2f}")
    for kind in ("image", "video"):
        for split in ("fit", "check"):
            s = summary(rows, kind, split)
            if s:
                print(f"{kind:<6} {split:<5} n={s['n']:>3} median |error| {s['median_abs_error']:.1%}, worst ratio "
                      f"{s['worst_ratio']:.2f}, within 2x {s['within_2x']:.0%}")
    print(f"{len(skipped)} records skipped (model, GPU or layout the advisor does not plan)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
