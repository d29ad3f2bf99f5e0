"""How close the speed model comes to published measurements.

    python bench/accuracy.py [--markdown FILE]

Evaluates every record of catalog/measurements.yaml with the advisor's own speed functions (the
layout, precision, lengths and concurrency of the record) and prints, per record, the tool's figure,
the measured one and their ratio; then per class (serving throughput, TTFT, TPOT, training tokens/s
per GPU, whole-run GPU-hours with and without the goodput, GPU-to-GPU ratios) the median absolute
error, the worst ratio and the share within 2x and 1.5x, on the records the factors
were fitted on (split: fit) and on those kept out of the fit (split: check). `--markdown` also writes
the tables for docs/accuracy.md. bench/fit.py imports `prepare` and `evaluate` from here.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.inputs import catalog as catalog_mod
from advisor.base import yamlio  # noqa: E402
from advisor.numbers.layouts import Layout  # noqa: E402
from advisor.numbers import queueing, speed, trainspeed  # noqa: E402
from advisor.numbers.ledger import inference_ledger, training_ledger  # noqa: E402
from advisor.inputs.workload import parse  # noqa: E402
import rlaccuracy  # noqa: E402  (bench/rlaccuracy.py: the RL kind's records)

MEASUREMENTS = ROOT / "catalog" / "measurements.yaml"
CLASSES = ("throughput", "ttft", "ttft_load", "ttft_load_p99", "ttft_load_own", "tpot_load", "tpot_load_p99", "tpot", "training", "whole_step", "whole_run", "ratio")
TITLES = {"throughput": "serving throughput", "ttft": "TTFT", "ttft_load": "TTFT under load (MLPerf)", "ttft_load_own": "TTFT under load, own times",
          "ttft_load_p99": "TTFT under load, p99 (MLPerf)", "tpot_load_p99": "TPOT under load, p99 (MLPerf)",
          "tpot_load": "TPOT under load (MLPerf)", "tpot": "TPOT",
          "training": "training tokens/s per GPU", "whole_step": "whole-run GPU-h, step only", "whole_run": "whole-run GPU-hours",
          "ratio": "GPU-to-GPU ratios"}
TRAINING = ("training", "whole_run")          # classes evaluated with the training speed model


@dataclass
class Prepared:
    rec: dict
    w: object
    led: object
    gpu: object
    rate: object


def load_records(path: Path = MEASUREMENTS) -> tuple[list[dict], dict]:
    data = yamlio.load(path)
    return [dict(r) for r in data["records"]], dict(data.get("models") or {})


def prepare(records: list[dict], models: dict, cat) -> list[Prepared]:
    """Build each record's workload, ledger and matmul rate once (fitting re-evaluates them often)."""
    out = []
    for r in records:
        model = r["model"]
        if model in models:
            model = {k: v for k, v in models[model].items() if k != "src"}
        doc = {"model": model, "mode": "training" if r["class"] in TRAINING else "inference"}
        # a Q-LoRA record's precision is its adapters' compute (fp16): its base is 4-bit by the method
        if r.get("precision") and r.get("method") != "qlora":
            doc["precision"] = r["precision"]
        if r["class"] in TRAINING:
            if r.get("method"):
                doc["method"] = r["method"]
            doc.update(context_tokens=r["seq"], concurrency=r.get("micro_batch") or 1, zero_stage=r.get("zero") or 0,
                       activation_checkpointing=bool(r.get("checkpointing")))
        else:
            doc.update(prompt_tokens=r["prompt"], output_tokens=r["output"], context_tokens=r["prompt"] + r["output"],
                       kv_precision={"fp16": "fp16"}.get(r.get("kv_precision"), r.get("kv_precision") or "bf16"),
                       concurrency=r["concurrency"] if r["concurrency"] != "max" else "max")
        w = parse(doc, cat, f"{MEASUREMENTS.name}:{r['id']}")
        led = training_ledger(w) if w.training else inference_ledger(w)
        gpu = cat.gpus[r["gpu"]]
        cp = speed.compute_precision(w, gpu, led.sized)
        out.append(Prepared(r, w, led, gpu, speed.achievable_tflops(cat, gpu, cp)))
    return out


def whole_run_step_s(r: dict, tokens_per_s_per_gpu: float) -> float:
    """One optimizer step of a whole run: the global batch's tokens over the run's GPUs at the step rate."""
    return r["global_batch"] * r["seq"] / r["count"] / tokens_per_s_per_gpu


def evaluate(p: Prepared, cal, step_only: bool = False, own_capacity: bool = False, tpot: bool = False, p99: bool = False) -> float:
    """The tool's figure for a record, in the record's unit (a whole run's GPU-hours: its step time
    over the goodput, or with `step_only` the step time alone; a TTFT under load at the measured Offline
    capacity, or with `own_capacity` at the speed model's own, as a plan the advisor proposes is timed;
    with `tpot` the TPOT of the batch in flight there instead; with `p99` their 99th percentiles)."""
    r = p.rec
    tp, pp = r.get("tp") or 1, r.get("pp") or 1
    if r["class"] == "whole_run":
        tps = evaluate(replace(p, rec={**r, "class": "training"}), cal)
        step = r["tokens"] / tps / 3600
        return step if step_only else step / cal.goodput(r["count"], step_s=whole_run_step_s(r, tps))[0]
    if r["class"] == "training":
        dp = r.get("dp") or max(1, r["count"] // (tp * pp))
        gbs = r.get("global_batch")
        mbs = r.get("micro_batch") or 1
        m = max(1, round(gbs / (dp * mbs))) if gbs else None
        cp = speed.compute_precision(p.w, p.gpu, p.led.sized)
        tr = trainspeed.training_rate(p.w, p.led, p.gpu, cal, p.rate, Layout(tp, pp, dp, ep=r.get("ep") or 1), seq=r["seq"], micro_batch=mbs,
                                 microbatches=m, virtual_stages=r.get("virtual_stages") or 1, precision=cp,
                                 alltoall_overlapped=bool(r.get("alltoall_overlapped")))
        return tr.tokens_per_s_per_gpu
    if r.get("max_batch"):      # the engine's own cap where the source sets it
        # per micro-batch for an engine that schedules each pipeline micro-batch up to its cap
        # (measurements.yaml header: TensorRT-LLM's PyExecutor holds pp x max_batch_size sequences)
        cal = replace(cal, engine_max_batch=int(r["max_batch"]), batch_cap_per_micro_batch=r.get("max_batch_per") == "micro_batch")
    if r.get("kv_fraction"):     # TensorRT-LLM's share of the memory the weights leave (measurements.yaml header)
        cal = replace(cal, memory_utilisation=float(r["kv_fraction"]), kv_share_of_free=True)
    if r.get("decode_attention") == "per_query_head":   # an engine without grouped (XQA) decode attention
        cal = replace(cal, grouped_kv_reads=False)
    if r.get("eplb"):      # the engine rebalanced its experts (EPLB, redundant experts): no routing skew left
        cal = replace(cal, ep_skew=0.0)
    if r.get("kv_window") == "full":     # the engine held every layer's KV at full length (measurements.yaml header)
        cal = replace(cal, kv_window_memory=False)
    if r.get("prefill") == "separate":     # the engine ran waiting prompts in prefill-only steps (engines.yaml prefill)
        cal = replace(cal, prefill_in_step=False)
    if r.get("kv_allocation") == "on_demand":     # KV blocks taken as a sequence grows (engines.yaml kv_allocation)
        cal = replace(cal, kv_on_demand=True)
    if r.get("scheduler_steps"):     # multi-step scheduling (vLLM num_scheduler_steps): new requests join every n steps
        cal = replace(cal, scheduler_steps=int(r["scheduler_steps"]))
    if r.get("front_end") == "offline":                   # timed inside the engine: no request handling
        cal = replace(cal, request_ms=0.0)
    dp = r.get("dp") or max(1, r["count"] // (tp * pp))
    if r["class"] == "ttft_load":     # at the run's offered rate, against its measured Offline capacity
        hb = r.get("harness_batch")      # a harness that batched requests before the engine (measurements.yaml header)
        lay, harness = Layout(tp, pp, dp, 0.0), ((float(hb["window_s"]), int(hb["max"])) if hb else None)
        qps, cap = float(r["qps"]), float(r["capacity_qps"])
        if own_capacity:
            # the run's utilisation of the speed model's own capacity (its throughput at the largest batch)
            own = queueing.serving_at_rate(p.w, p.led, p.gpu, lay, p.rate, qps, cal, harness=harness).capacity_requests_per_s * dp
            load = queueing.serving_at_rate(p.w, p.led, p.gpu, lay, p.rate, qps / cap * own, cal, harness=harness)
        else:
            load = queueing.serving_at_rate(p.w, p.led, p.gpu, lay, p.rate, qps, cal, capacity_requests_per_s=cap, harness=harness)
        if p99:
            return load.tpot_p99_ms if tpot else load.ttft_p99_ms
        return load.tpot_ms if tpot else load.ttft_ms
    # expert parallelism and attention DP inside the TP group: "DEP4" is tp 4, ep 4, attention_dp 4
    lay = Layout(tp, pp, dp, 0.0, ep=r.get("ep") or 1, attention_dp=r.get("attention_dp") or 1)
    if r.get("phase") == "decode":       # a disaggregated decode pool: its prompts were prefilled elsewhere
        return speed.decode_tokens_per_s(p.w, p.led, p.gpu, lay, p.rate, cal)
    c = speed.inference_speed(p.w, p.led, p.gpu, lay, p.rate, cal)
    return {"throughput": c.tokens_per_s, "ttft": c.ttft_ms, "tpot": c.tpot_ms}[r["class"]]


def ratio_pairs(prepared: list[Prepared], figures: list[float]) -> list[dict]:
    """Same source, model, lengths and concurrency on two GPUs: the measured and the modelled ratio per GPU."""
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(prepared):
        r = p.rec
        if r["class"] not in ("throughput", "training"):
            continue
        key = (r["source"], r["class"], r["model"], r.get("prompt"), r.get("output"), str(r.get("concurrency")),
               r.get("seq"), r.get("precision") if r["class"] == "training" else None)
        groups.setdefault(key, []).append(i)
    out = []
    for idx in groups.values():
        gpus = {prepared[i].rec["gpu"] for i in idx}
        if len(gpus) < 2:
            continue
        for a in idx:
            for b in idx:
                ra, rb = prepared[a].rec, prepared[b].rec
                ga, gb = prepared[a].gpu, prepared[b].gpu
                # newer over older: the faster spec (bf16 TFLOPS, then bandwidth) is the numerator
                if (ga.tflops("bf16"), ga.bandwidth_tb_s) <= (gb.tflops("bf16"), gb.bandwidth_tb_s):
                    continue
                per = (lambda r: r["count"]) if ra["class"] == "throughput" else (lambda r: 1)
                measured = (ra["measured"] / per(ra)) / (rb["measured"] / per(rb))
                tool = (figures[a] / per(ra)) / (figures[b] / per(rb))
                split = "fit" if ra["split"] == rb["split"] == "fit" else "check"
                out.append({"id": f"{ra['id']} / {rb['gpu']}", "class": "ratio", "split": split, "tool": tool,
                            "measured": measured, "pair": f"{ra['gpu']}/{rb['gpu']}"})
    return out


def rows(prepared: list[Prepared], cal) -> list[dict]:
    figs = [evaluate(p, cal) for p in prepared]
    out = [{"id": p.rec["id"], "class": p.rec["class"], "split": p.rec["split"], "tool": f, "measured": p.rec["measured"],
            "gpu": p.rec["gpu"], "model": p.rec["model"], "moe": bool(p.w.model.num("experts")),
            "ep": (p.rec.get("ep") or 1) > 1 and p.rec["class"] != "training",
            "method": p.rec.get("method") or "full"} for p, f in zip(prepared, figs)]
    # the same whole runs at the step rate alone: what the goodput adds
    out += [{"id": p.rec["id"], "class": "whole_step", "split": p.rec["split"], "tool": evaluate(p, cal, step_only=True),
             "measured": p.rec["measured"], "gpu": p.rec["gpu"], "model": p.rec["model"]}
            for p in prepared if p.rec["class"] == "whole_run"]
    # TTFT under load end to end: the run's utilisation of the speed model's own capacity, its own times
    out += [{"id": p.rec["id"], "class": "ttft_load_own", "split": p.rec["split"], "tool": evaluate(p, cal, own_capacity=True),
             "measured": p.rec["measured"], "gpu": p.rec["gpu"], "model": p.rec["model"]}
            for p in prepared if p.rec["class"] == "ttft_load"]
    # the step of the batch in flight there against the log's mean TPOT: whether the queue holds as many
    # sequences as the engine did (Little's law), which the TTFT alone cannot tell
    out += [{"id": p.rec["id"], "class": "tpot_load", "split": p.rec["split"], "tool": evaluate(p, cal, tpot=True),
             "measured": p.rec["tpot_ms"], "gpu": p.rec["gpu"], "model": p.rec["model"]}
            for p in prepared if p.rec["class"] == "ttft_load" and p.rec.get("tpot_ms")]
    # the 99th percentiles the same logs give beside their means (the fitted p99 factors over the modelled mean)
    out += [{"id": p.rec["id"], "class": "ttft_load_p99", "split": p.rec["split"], "tool": evaluate(p, cal, p99=True),
             "measured": p.rec["p99_ms"], "gpu": p.rec["gpu"], "model": p.rec["model"]}
            for p in prepared if p.rec["class"] == "ttft_load" and p.rec.get("p99_ms")]
    out += [{"id": p.rec["id"], "class": "tpot_load_p99", "split": p.rec["split"], "tool": evaluate(p, cal, tpot=True, p99=True),
             "measured": p.rec["tpot_p99_ms"], "gpu": p.rec["gpu"], "model": p.rec["model"]}
            for p in prepared if p.rec["class"] == "ttft_load" and p.rec.get("tpot_p99_ms")]
    return out + ratio_pairs(prepared, figs)


#: serving throughput per model class (issue 20's targets: MoE median <= 15% and every row within 1.5x,
#: expert-parallel rows included; dense <= 12%)
MODEL_CLASSES = (("dense", lambda r: not r.get("moe")), ("MoE", lambda r: r.get("moe")),
                 ("MoE, EP/DEP rows", lambda r: r.get("ep")))

#: the data-centre Blackwell parts, reported as a class of their own (issue 46: the newest rows, where
#: the peers are compared); RTX PRO 6000 and RTX 5090 are Blackwell too but workstation cards
BLACKWELL = ("b200", "b300", "gb200-nvl72", "gb300-nvl72")
GPU_CLASSES = (("Blackwell (B200/B300/GB200/GB300)", lambda r: r.get("gpu") in BLACKWELL),
               ("Blackwell, dense", lambda r: r.get("gpu") in BLACKWELL and not r.get("moe")),
               ("Blackwell, MoE", lambda r: r.get("gpu") in BLACKWELL and r.get("moe")),
               ("other GPUs", lambda r: r.get("gpu") not in BLACKWELL))


#: training tokens/s per training method: Q-LoRA pays the dequantisation of its 4-bit base (trainspeed.qlora_dequant_s)
METHOD_CLASSES = (("full", lambda r: r.get("method") == "full"), ("LoRA", lambda r: r.get("method") == "lora"),
                  ("Q-LoRA", lambda r: r.get("method") == "qlora"))


def summary(table: list[dict], classes=None) -> list[dict]:
    out = []
    for cls in classes or CLASSES:
        for split in ("fit", "check"):
            sel = [r for r in table if r["class"] == cls and r["split"] == split]
            if not sel:
                continue
            ratios = [r["tool"] / r["measured"] for r in sel]
            errs = [abs(x - 1) for x in ratios]
            worst = max(ratios, key=lambda x: abs(math.log(x)))
            out.append({"class": cls, "split": split, "n": len(sel), "median_abs_error": statistics.median(errs),
                        "worst_ratio": worst, "within_2x": sum(1 for x in ratios if 0.5 <= x <= 2) / len(ratios),
                        "within_1_5x": sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5) / len(ratios)})
    return out


def by_model(table: list[dict], cls: str, classes=MODEL_CLASSES) -> list[dict]:
    """One class of records per model class: serving throughput (dense, MoE, the MoE rows served with
    expert parallelism) or training tokens/s per GPU (dense, MoE: issue 21's MoE target, <= 25% out of the fit)."""
    return [{**s, "class": name} for name, keep in classes
            for s in summary([r for r in table if r["class"] == cls and keep(r)], (cls,))]


def diffusion_lines() -> list[str]:
    """Image and video generation, each kind's median error and worst ratio per split
    (bench/diffusion_fit.py: catalog/diffusion-measurements.yaml at the shipped fitted figures)."""
    import diffusion_fit
    rows, _, skipped = diffusion_fit.run()
    out = ["", f"{'image and video generation':<28} {'split':<5} {'n':>3} {'median |error|':>15} {'worst ratio':>12} {'within 2x':>10}"]
    for kind in ("image", "video"):
        for split in ("fit", "check"):
            s = diffusion_fit.summary(rows, kind, split)
            if s:
                out.append(f"{kind + ' generation':<28} {split:<5} {s['n']:>3} {s['median_abs_error']:>14.1%} "
                           f"{s['worst_ratio']:>12.2f} {s['within_2x']:>10.0%}")
    out.append(f"({len(skipped)} diffusion records skipped: a model, GPU or layout the advisor does not plan)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", help="also write the tables as Markdown to this file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    cat = catalog_mod.load(ROOT / "catalog")
    cal = speed.calibration(cat)
    records, models = load_records()
    prepared = prepare(records, models, cat)
    table = rows(prepared, cal)
    lines = [f"{'record':<62} {'split':<5} {'tool':>10} {'measured':>10} {'ratio':>6}"]
    for cls in CLASSES:
        lines.append(f"-- {TITLES[cls]}")
        for r in (x for x in table if x["class"] == cls):
            lines.append(f"{r['id'][:62]:<62} {r['split']:<5} {r['tool']:>10,.3g} {r['measured']:>10,.3g} {r['tool'] / r['measured']:>6.2f}")
    lines.append("")
    lines.append(f"{'class':<28} {'split':<5} {'n':>3} {'median |error|':>15} {'worst ratio':>12} {'within 2x':>10} {'within 1.5x':>12}")
    summ = summary(table)
    for s in summ:
        lines.append(f"{TITLES[s['class']]:<28} {s['split']:<5} {s['n']:>3} {s['median_abs_error']:>14.1%} "
                     f"{s['worst_ratio']:>12.2f} {s['within_2x']:>10.0%} {s['within_1_5x']:>12.0%}")
    moe, trained = by_model(table, "throughput") + by_model(table, "throughput", GPU_CLASSES), by_model(table, "training", MODEL_CLASSES[:2])
    methods = by_model(table, "training", METHOD_CLASSES)
    # TTFT, TPOT and TTFT under load on the data-centre Blackwell parts and on the rest
    latency = [{**s, "class": f"{TITLES[cls]}: {s['class']}"} for cls in ("ttft", "tpot", "ttft_load", "tpot_load")
               for s in by_model(table, cls, (GPU_CLASSES[0], GPU_CLASSES[3]))]
    for title, part in (("serving throughput by model", moe), ("serving latency by GPU class", latency),
                        ("training tokens/s by model", trained), ("training tokens/s by method", methods)):
        lines.append("")
        lines.append(f"{title:<50} {'split':<5} {'n':>3} {'median |error|':>15} {'worst ratio':>12} {'within 1.5x':>12}")
        for s in part:
            lines.append(f"{s['class']:<50} {s['split']:<5} {s['n']:>3} {s['median_abs_error']:>14.1%} "
                         f"{s['worst_ratio']:>12.2f} {s['within_1_5x']:>12.0%}")
    pairs = {}
    for r in table:
        if r["class"] == "ratio":
            pairs.setdefault((r["pair"], r["split"]), []).append(abs(r["tool"] / r["measured"] - 1))
    lines.append("")
    lines.append("GPU-to-GPU ratio errors by pair (median |error|, n):")
    for (pair, split), errs in sorted(pairs.items()):
        lines.append(f"  {pair:<28} {split:<5} {statistics.median(errs):>6.1%}  n={len(errs)}")
    # RL post-training steps (catalog/rl-measurements.yaml, advisor/kinds/rl): their own records and model
    rl_table = rlaccuracy.rows(cat)
    rl_summ = rlaccuracy.summary(rl_table)
    lines.append("")
    lines.append(f"{'RL post-training step time':<28} {'split':<5} {'n':>3} {'median |error|':>15} {'worst ratio':>12} {'within 2x':>10}")
    for s in rl_summ:
        lines.append(f"{'RL step (s per step)':<28} {s['split']:<5} {s['n']:>3} {s['median_abs_error']:>14.1%} "
                     f"{s['worst_ratio']:>12.2f} {s['within_2x']:>10.0%}")
    diffusion = diffusion_lines()
    lines += diffusion
    lines.append(f"\n{len(records)} records evaluated in {time.perf_counter() - t0:.2f} s")
    print("\n".join(lines))
    if args.markdown:
        md = ["| class | split | n | median abs. error | worst ratio | within 2x | within 1.5x |", "|---|---|---|---|---|---|---|"]
        for s in summ:
            md.append(f"| {TITLES[s['class']]} | {s['split']} | {s['n']} | {s['median_abs_error']:.1%} | {s['worst_ratio']:.2f} | "
                      f"{s['within_2x']:.0%} | {s['within_1_5x']:.0%} |")
        md += ["", "| serving throughput by model | split | n | median abs. error | worst ratio | within 1.5x |", "|---|---|---|---|---|---|"]
        for s in moe + latency:
            md.append(f"| {s['class']} | {s['split']} | {s['n']} | {s['median_abs_error']:.1%} | {s['worst_ratio']:.2f} | {s['within_1_5x']:.0%} |")
        md += ["", "| training tokens/s by model | split | n | median abs. error | worst ratio | within 1.5x |", "|---|---|---|---|---|---|"]
        for s in trained:
            md.append(f"| {s['class']} | {s['split']} | {s['n']} | {s['median_abs_error']:.1%} | {s['worst_ratio']:.2f} | {s['within_1_5x']:.0%} |")
        md += ["", "| training tokens/s by method | split | n | median abs. error | worst ratio | within 1.5x |", "|---|---|---|---|---|---|"]
        for s in methods:
            md.append(f"| {s['class']} | {s['split']} | {s['n']} | {s['median_abs_error']:.1%} | {s['worst_ratio']:.2f} | {s['within_1_5x']:.0%} |")
        md += ["", "| GPU pair | split | median abs. error | n |", "|---|---|---|---|"]
        for (pair, split), errs in sorted(pairs.items()):
            md.append(f"| {pair} | {split} | {statistics.median(errs):.1%} | {len(errs)} |")
        md += ["", "| RL post-training step time | split | n | median abs. error | worst ratio | within 2x |", "|---|---|---|---|---|---|"]
        for s in rl_summ:
            md.append(f"| RL step (s per step) | {s['split']} | {s['n']} | {s['median_abs_error']:.1%} | {s['worst_ratio']:.2f} | {s['within_2x']:.0%} |")
        md += ["", "| RL record | split | tool s | measured s | ratio | rollout share |", "|---|---|---|---|---|---|"]
        for t in rl_table:
            md.append(f"| {t['id']} | {t['split']} | {t['tool']:,.0f} | {t['measured']:,.0f} | {t['tool'] / t['measured']:.2f} | {t['step'].rollout_share:.0%} |")
        md += ["", "| image and video generation | split | n | median abs. error | worst ratio | within 2x |", "|---|---|---|---|---|---|"]
        md += [f"| {' '.join(x.split()[:2])} | {' '.join(x.split()[2:3])} | {x.split()[3]} | {x.split()[4]} | {x.split()[5]} | {x.split()[6]} |"
               for x in diffusion[2:-1]]
        md += ["", "| record | class | split | tool | measured | ratio |", "|---|---|---|---|---|---|"]
        for r in table:
            md.append(f"| {r['id']} | {r['class']} | {r['split']} | {r['tool']:,.4g} | {r['measured']:,.4g} | {r['tool'] / r['measured']:.2f} |")
        Path(args.markdown).write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
