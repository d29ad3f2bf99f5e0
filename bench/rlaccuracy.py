"""How close the RL step model (advisor/kinds/rl) comes to published RL step times.

    python bench/rlaccuracy.py [--fit]

Evaluates every record of catalog/rl-measurements.yaml on its own layout (trainer cards, rollout engine
TP x replicas, colocated or separate, offload) with the step model and prints the tool's seconds per step
beside the measured ones, then the median absolute error and worst ratio per split. `--fit` prints the
two factors of advisor/kinds/rl/step.py as the records of split: fit give them (the geometric mean of
measured over modelled rollout and update phases, at factors of 1). bench/accuracy.py prints the summary.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.base import yamlio  # noqa: E402
from advisor.inputs import catalog as catalog_mod  # noqa: E402
from advisor.inputs.workload import parse  # noqa: E402
from advisor.kinds.rl import models, step as steps  # noqa: E402
from advisor.numbers.ledger import training_ledger  # noqa: E402

MEASUREMENTS = ROOT / "catalog" / "rl-measurements.yaml"


def workload(r: dict, model_figures: dict, cat):
    model = dict(model_figures[r["model"]]) if r["model"] in model_figures else r["model"]
    doc = {"mode": "fine-tuning", "model": model, "method": r["method"], "prompts_per_step": r["prompts"],
           "prompt_tokens": r["prompt_tokens"], "output_tokens": r["output_tokens"], "precision": "bf16"}
    if r["method"] != "dpo":
        doc["samples_per_prompt"] = r["samples"]
    return parse(doc, cat, r["id"])


def evaluate(r: dict, model_figures: dict, cat) -> steps.Step:
    w = workload(r, model_figures, cat)
    gpu = cat.gpus[r["gpu"]]
    ro = steps.Rollout(r["engine_tp"], r["engine_replicas"], r["colocated"]) if models.rollouts(w) else None
    rollout = None
    if ro is not None:
        wr, led = steps.rollout_ledger(w)
        cal, name = steps.engine_calibration(cat, gpu, w)
        rollout = (wr, led, cal, name)
    resident = models.states(w).total / r["trainer"] if r["colocated"] else 0.0
    s = steps.step_time(w, gpu, cat, r["trainer"], ro, resident, r["offload"], training_ledger(w), rollout,
                        r.get("engine_memory_share", steps.ENGINE_MEMORY_SHARE), r.get("rollout_batch"),
                        r.get("group"))
    if s is None:
        raise SystemExit(f"{r['id']}: the layout holds no rollout batch in the model")
    return s


def rows(cat=None) -> list[dict]:
    cat = cat or catalog_mod.load(ROOT / "catalog")
    data = yamlio.load(MEASUREMENTS)
    figs = dict(data.get("models") or {})
    out = []
    for r in data["records"]:
        s = evaluate(dict(r), figs, cat)
        out.append({"id": r["id"], "split": r["split"], "tool": s.total_s, "measured": float(r["step_s"]), "step": s, "rec": r})
    return out


def summary(table: list[dict]) -> list[dict]:
    out = []
    for split in ("fit", "check"):
        sel = [t for t in table if t["split"] == split]
        if not sel:
            continue
        ratios = [t["tool"] / t["measured"] for t in sel]
        out.append({"class": "rl_step", "split": split, "n": len(sel),
                    "median_abs_error": statistics.median(abs(x - 1) for x in ratios),
                    "worst_ratio": max(ratios, key=lambda x: abs(math.log(x))),
                    "within_2x": sum(1 for x in ratios if 0.5 <= x <= 2) / len(ratios),
                    "within_1_5x": sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5) / len(ratios)})
    return out


def fit(table: list[dict]) -> tuple[float, float]:
    """(RL_TRAIN_SHARE, OFFLOADED_SWITCH_S) from the fit split at the factors now in use: the training
    share from the published update phases (logits, rewards and training), the geometric mean of the
    modelled at a share of 1 over the measured; the switch from the colocated steps with offload, the mean of the
    measured less the modelled phases at that share."""
    fit_rows = [t for t in table if t["split"] == "fit"]
    upd = [math.log((t["step"].forward_s + t["step"].train_s) * steps.RL_TRAIN_SHARE / t["rec"]["update_s"])
           for t in fit_rows if t["rec"].get("update_s")]
    share = math.exp(statistics.mean(upd))
    rest = []
    for t in (t for t in fit_rows if t["rec"]["colocated"] and t["rec"]["offload"]):
        s = t["step"]
        update = (s.forward_s + s.train_s) * steps.RL_TRAIN_SHARE / share
        rest.append(t["measured"] - update - s.rollout_s - s.sync_s - s.offload_s)
    return share, statistics.mean(rest)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="print the factors the fit split gives")
    args = ap.parse_args(argv)
    table = rows()
    print(f"{'record':<44} {'split':<5} {'tool s':>8} {'measured':>9} {'ratio':>6} {'rollout share':>14}")
    for t in table:
        print(f"{t['id']:<44} {t['split']:<5} {t['tool']:>8,.0f} {t['measured']:>9,.0f} {t['tool'] / t['measured']:>6.2f} "
              f"{t['step'].rollout_share:>14.0%}")
    for s in summary(table):
        print(f"RL step time {s['split']:<5} n={s['n']} median |error| {s['median_abs_error']:.1%}, worst ratio {s['worst_ratio']:.2f}, "
              f"within 2x {s['within_2x']:.0%}")
    if args.fit:
        share, switch = fit(table)
        print(f"fit: RL_TRAIN_SHARE = {share:.3f}, OFFLOADED_SWITCH_S = {switch:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
