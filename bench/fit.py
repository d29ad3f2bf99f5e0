"""Fit the speed model's efficiency factors on the `fit` split of catalog/measurements.yaml.

    python bench/fit.py [--dry-run] [--training-only]

Serving: eight factors shared by every GPU and model (HBM bandwidth share reached by a decode step,
matmul share reached by serving kernels, launch overhead per layer, sampling and bookkeeping per
sequence, all-reduce latency floor, MoE tokens per expert and expert width at half efficiency, the
share a maturing software stack reaches, and the pipeline token return's host time per sequence and stage,
pp_return_us, learnt on the pipeline-parallel rows), fitted together by minimising the squared log ratio
tool/measured, each class (throughput, TTFT, TPOT) weighted equally. Training: the share of the
achievable matmul rate per GPU generation and precision (a group of its own only with at least three
fitted records; a generation without one takes the lowest measured share) fitted together with one
ZeRO-3 factor (learnt where both FSDP and other runs were measured) and, around them, the model width at
which a step reaches half its share (half_hidden: x hidden / (hidden + half_hidden), golden-section search
with the shares refitted at each width), then two MoE factors beside the computed MoE terms (expert half width and moe_share),
then the share of HBM bandwidth at which QLoRA dequantises its 4-bit base (on the Q-LoRA records alone, which the matmul shares leave out). Whole runs:
goodput_base, the geometric mean of step GPU-hours x the sourced interruption term / published
GPU-hours over the fitted `whole_run` records (capped at 1), with the per-step overhead (step_overhead_s,
searched on a 10 ms grid) that leaves the smallest spread of their log ratios. `--training-only` keeps the serving
factors of the file and refits the training ones. The factors, the records they were fitted on and
the fit's residuals are written between the markers of catalog/efficiency.yaml; `--dry-run` prints
them only. Check-split records never enter the fit: bench/accuracy.py reports both splits.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import Counter
from dataclasses import replace
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy  # noqa: E402

from advisor.inputs import catalog as catalog_mod  # noqa: E402
from advisor.numbers import speed  # noqa: E402

EFFICIENCY = accuracy.ROOT / "catalog" / "efficiency.yaml"
BEGIN, END = "# --- fitted by bench/fit.py: begin ---", "# --- fitted by bench/fit.py: end ---"
SERVING = {  # factor: (lower, upper) bounds of a physically meaningful value
    # a decode step cannot read HBM faster than a streaming copy does (efficiency.yaml hbm_stream_share, 0.92)
    "bw_share": (0.3, 0.92), "compute_share": (0.2, 1.0), "layer_us": (0.0, 300.0), "seq_us": (0.0, 200.0),
    # per-layer overhead and the all-reduce floor are both paid per layer: with few TP > 1 latency
    # records they trade off, so the floor is kept at or above 5 us (a small-message NCCL all-reduce
    # over NVLink is several microseconds; an assumption, not a measurement of ours)
    "allreduce_us": (5.0, 100.0), "moe_half_tokens": (0.0, 512.0), "maturing_share": (0.3, 1.0),
    "moe_half_width": (0.0, 4096.0), "request_ms": (0.0, 100.0),
    # the busiest EP rank's extra share of the mean expert load (0: the balls-into-bins floor alone; 1: twice the mean)
    "ep_skew": (0.0, 1.0),
    # what a mixed-input expert kernel (weights dequantised in its main loop) reaches of a native one
    "mixed_input_share": (0.2, 1.0),
    # host time per sequence of a micro-batch per pipeline stage its returning tokens pass (speed.pp_return_s):
    # none to a few hundred microseconds of Python per request
    "pp_return_us": (0.0, 300.0),
}


#: bounds of the training fit's expert half width: none (0) to the widest expert of the catalog's MoE models
MOE_HALF_WIDTH = (0.0, 4096.0)
#: and of its tokens per expert per micro-batch (a grouped GEMM of a few thousand rows is near its peak)
MOE_HALF_TOKENS = (0.0, 8192.0)


def _log_err(p, cal) -> float:
    f = accuracy.evaluate(p, cal)
    return math.log(f / p.rec["measured"]) if f and f > 0 else 5.0


def serving_loss(prepared, cal) -> float:
    per_class: dict[str, list[float]] = {}
    for p in prepared:
        per_class.setdefault(p.rec["class"], []).append(_log_err(p, cal) ** 2)
    return sum(statistics.fmean(v) for v in per_class.values())


def golden(f, lo: float, hi: float, iters: int = 28) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


# fixed starting points (never the factors already in the file), so that a refit on the same records
# writes the same factors
BASE = {"compute_share": 0.6, "seq_us": 0.0, "moe_half_tokens": 0.0, "maturing_share": 1.0, "moe_half_width": 0.0, "request_ms": 0.0,
        "ep_skew": 0.0, "mixed_input_share": 1.0, "mixed_input_matmul_share": 1.0,
        "pp_return_us": 0.0}
STARTS = ({**BASE, "bw_share": 0.7, "layer_us": 50.0, "allreduce_us": 10.0},
          {**BASE, "bw_share": 0.6, "layer_us": 20.0, "allreduce_us": 20.0},
          {**BASE, "bw_share": 0.85, "layer_us": 100.0, "allreduce_us": 6.0})


def serving_records(prepared):
    # TTFT under load is fitted on its own (fit_queueing), after the factors of the closed-loop model
    return [p for p in prepared if p.rec["class"] not in accuracy.TRAINING + ("ttft_load",) and p.rec["split"] == "fit"]


#: decode steps of the batch in flight before a new request's first token (queueing.serving_at_rate): at
#: least the step that runs its prefill minus the half step to its boundary, at most a few steps
FIRST_TOKEN_STEPS = (0.5, 4.0)


#: the fixed part of a step at an arrival rate as a share of the replica's weight read (queueing.with_floor):
#: none (the closed-loop overlap holds) to twice the read
RATE_READ_SHARE = (0.0, 2.0)


def fit_queueing(prepared, cal):
    """first_token_steps and rate_read_share on the fit split of the MLPerf Server/Interactive records (class
    ttft_load), by turns (golden-section search, three sweeps), minimising the mean absolute log ratio of
    the TTFT plus that of the TPOT where the log gives it, with every other factor held: near saturation a
    few percent of capacity move the slot wait by a factor, and a squared loss would let those few rows set
    the figure for all. The steps apply to an engine that runs a new prompt inside a decode step
    (queueing.serving_at_rate); the records of an engine with prefill-only steps do not move with them but
    do with the floor."""
    load = [p for p in prepared if p.rec["class"] == "ttft_load" and p.rec["split"] == "fit"]
    if not load:
        return cal, load
    timed = [p for p in load if p.rec.get("tpot_ms")]

    def loss(c):
        def err(p, tpot):
            f = accuracy.evaluate(p, c, tpot=tpot)
            return abs(math.log(f / p.rec["tpot_ms" if tpot else "measured"])) if f and math.isfinite(f) and f > 0 else 5.0
        return statistics.fmean(err(p, False) for p in load) + (statistics.fmean(err(p, True) for p in timed) if timed else 0.0)
    for _ in range(3):
        cal = replace(cal, rate_read_share=golden(lambda x: loss(replace(cal, rate_read_share=x)), *RATE_READ_SHARE, iters=20))
        cal = replace(cal, first_token_steps=golden(lambda x: loss(replace(cal, first_token_steps=x)), *FIRST_TOKEN_STEPS, iters=20))
    return fit_p99(load, cal), load


def fit_p99(load, cal):
    """The p99 factors: the median over the fitted logs of their p99 over the modelled mean (TTFT, and
    TPOT where the log gives it), so that the modelled p99 is the mean x the factor; the median, as for
    first_token_steps, so that a few rows near saturation do not set it for all."""
    def factor(sel, measured, tpot):
        logs = [math.log(p.rec[measured] / accuracy.evaluate(p, cal, tpot=tpot)) for p in sel
                if p.rec.get(measured) and math.isfinite(accuracy.evaluate(p, cal, tpot=tpot))]
        return math.exp(statistics.median(logs)) if logs else 1.0
    return replace(cal, ttft_p99_factor=factor(load, "p99_ms", False), tpot_p99_factor=factor(load, "tpot_p99_ms", True))


#: bounds of the matmul share of a mixed-input expert kernel: a fifth of a BF16 grouped GEMM to all of it
MIXED_MATMUL = (0.2, 1.0)


def fit_mixed_matmul(prepared, cal):
    """mixed_input_matmul_share on its own records, after the shared factors: the fit-split throughput
    records of plans whose experts run as mixed-input kernels (MXFP4 on Hopper and Ampere), the only
    records whose figure it moves through the expert matmuls. In the shared fit it sat at its bound,
    1.0: the few such TTFT records (GPUStack's gpt-oss at 4 users, their prefill a few hundred tokens)
    outweighed the eight throughput rows in the per-class loss, and TensorRT-LLM's H100 DEP4 rows stayed
    1.4-1.5x above the published figure."""
    from advisor.numbers.servestep import mixed_input
    sel = [p for p in prepared if p.rec["class"] == "throughput" and p.rec["split"] == "fit"
           and mixed_input(speed._shape_of(p.w, p.led).expert_precision, p.gpu) and speed._shape_of(p.w, p.led).expert_bytes]
    if not sel:
        return cal, sel
    def loss(x):
        c = replace(cal, mixed_input_matmul_share=x)
        return statistics.fmean(_log_err(p, c) ** 2 for p in sel)
    return replace(cal, mixed_input_matmul_share=golden(loss, *MIXED_MATMUL)), sel


def fit_serving(prepared, cal):
    cal = replace(cal, engine_max_batch=256)      # the sourced cap written below (VLLM_ENGINE_ARGS)
    serving = serving_records(prepared)
    best_cal, best_loss = None, math.inf
    for start in STARTS:   # coordinate descent from a few starting points; the lowest loss wins
        c = replace(cal, **start)
        for _ in range(6):     # each factor by golden-section search, a few sweeps
            for name, (lo, hi) in SERVING.items():
                v = golden(lambda x: serving_loss(serving, replace(c, **{name: x})), lo, hi)
                c = replace(c, **{name: v})
        loss = serving_loss(serving, c)
        if loss < best_loss:
            best_cal, best_loss = c, loss
    return best_cal, serving


#: bounds of the model width at which a training step reaches half the fitted matmul share: none (0) to
#: 8,192 (that large, the term would halve the share of a Llama 3.1 70B-wide model: a stated bound)
HALF_HIDDEN = (0.0, 8192.0)


def _backfit(cal, dense, groups, sharded, prec):
    """The dense training shares by backfitting of a model additive in logs (precision + GPU generation +
    ZeRO-3): each factor in turn is the geometric mean of measured / tool over its records with the others
    held; the rate is proportional to the share except where communication binds, hence the iterations.
    Returns `cal` with the shares, the pooled defaults (a GPU family without three records of its own takes
    the lowest measured share) and the ZeRO-3 factor."""
    share: dict = {}                               # fixed start, as for serving
    default = {"bf16": 0.5, "fp8": 0.5}
    zero3 = 1.0

    def gain(sel, shares) -> float:
        """Geometric mean of measured / tool over `sel` with the factors as they stand."""
        c = replace(cal, train_share=shares, train_default=default, train_moe_share=1.0, train_zero3_share=zero3)
        return math.exp(statistics.fmean(-_log_err(p, c) for p in sel))

    for _ in range(40):       # converged: the shares move by less than 0.1% over the last passes
        for pr in ("bf16", "fp8"):
            # the pooled share, for a GPU generation without three records of its own, from GPU records
            # only (a TPU's compiler and memory system are not a GPU's)
            sel = [p for p in dense if prec(p) == pr and p.gpu.generation != "tpu"]
            if sel:
                default[pr] = default.get(pr, 0.5) * gain(sel, {})
        for (gen, pr), sel in groups.items():
            if len(sel) < 3:
                continue
            share.setdefault(gen, {}).setdefault(pr, default[pr])
            share[gen][pr] *= gain(sel, share)
        if len(sharded) >= 3 and len(sharded) < len(dense):
            zero3 *= gain(sharded, share)
    # a GPU family without training records of its own (L40S, MI300X, Gaudi ...) takes the lowest share
    # measured on a GPU family in that precision, not the pool: an unmeasured card is never assumed to
    # train better than every measured one (the pool is kept where no family has three records)
    for pr in ("bf16", "fp8"):
        measured = [fam[pr] for gen, fam in share.items() if pr in fam and gen != "tpu"]
        if measured:
            default[pr] = min(measured)
    default["fp4"] = default["fp8"]    # no FP4 training record: FP4 training takes the FP8 share (said in the YAML)
    return replace(cal, train_share=share, train_default=default, train_moe_share=1.0, train_zero3_share=zero3)


def fit_training(prepared, cal):
    train = [p for p in prepared if p.rec["class"] == "training" and p.rec["split"] == "fit"]
    # a Q-LoRA record's step is partly dequantisation of its 4-bit base, which no matmul share explains:
    # those records fit the dequantisation share alone (fit_qlora), after the shares
    qlora = [p for p in train if p.w.method == "qlora"]
    # the LoRA records of a source that measured Q-LoRA too are its baseline, shown beside it by
    # bench/accuracy.py, and fit nothing: one stack on one card (QWEN1_FINETUNE_PROFILE: HF Trainer, batch 1),
    # whose gap to the fitted shares is that stack's, and as Ampere's only runs without ZeRO-3 they would
    # re-learn the ZeRO-3 factor from a difference of stacks (0.69 -> 0.87, whole runs 13% -> 20% off)
    paired = {p.rec["source"] for p in qlora}
    dense = [p for p in train if not p.led.sized.experts and p.w.method != "qlora"
             and not (p.w.method == "lora" and p.rec["source"] in paired)]
    moe = [p for p in train if p.led.sized.experts]

    def prec(p):
        return speed.compute_precision(p.w, p.gpu, p.led.sized)

    groups: dict[tuple, list] = {}
    for p in dense:
        groups.setdefault((p.gpu.generation, prec(p)), []).append(p)
    # a generation measured on ZeRO-3 runs only cannot tell its share from the ZeRO-3 factor: its share
    # is fitted as an FSDP share (the factor is not applied to it), and the factor is learnt from the
    # generations that have both kinds of run. "Both" means at least three runs without ZeRO-3, as a
    # group needs three records for a factor of its own (2026-12-07: BLOOM, Ampere's one ZeRO-1 run, made
    # Ampere's FSDP records re-learn its share through the Hopper-fitted factor: LoRA 24% -> 43% off)
    fsdp_only = {gen for gen in {p.gpu.generation for p in dense}
                 if any(p.w.zero_stage >= 3 for p in dense if p.gpu.generation == gen)
                 and sum(p.w.zero_stage < 3 for p in dense if p.gpu.generation == gen) < 3}
    cal = replace(cal, train_fsdp_only=frozenset(fsdp_only))
    sharded = [p for p in dense if p.w.zero_stage >= 3 and p.gpu.generation not in fsdp_only]

    def shares_at(half: float):
        """The shares, the pooled defaults and the ZeRO-3 factor fitted with the width term at `half`."""
        return _backfit(replace(cal, train_half_hidden=half), dense, groups, sharded, prec)

    def dense_loss(half: float) -> float:
        c = shares_at(half)
        return statistics.fmean(_log_err(p, c) ** 2 for p in dense)

    # the narrowest fitted model's width: a narrower one is charged as it (calibration.width_share)
    cal = replace(cal, train_width_min=min(p.w.model.num("hidden_size") or math.inf for p in dense))
    # the width at half share (golden-section search over the dense records' squared log ratios), the
    # shares refitted at each width tried
    cal = replace(shares_at(golden(dense_loss, *HALF_HIDDEN)), train_moe_half_width=0.0)
    if len(moe) >= 2:
        # the MoE mechanism (all-to-all, busiest EP rank, grouped-matmul width) is computed; two factors
        # are fitted on the MoE records: the expert width at half efficiency (golden-section search) and,
        # for each width, moe_share as the geometric mean of measured / tool (the rest of what MoE costs)
        def with_share(c):
            # a share, at most 1: what the computed terms leave unexplained never makes MoE faster than dense
            return replace(c, train_moe_share=min(1.0, math.exp(statistics.fmean(-_log_err(p, c) for p in moe))))

        def moe_loss(c):
            c = with_share(c)
            return statistics.fmean(_log_err(p, c) ** 2 for p in moe)

        c = replace(cal, train_moe_half_width=0.0, train_moe_half_tokens=0.0)
        for _ in range(4):      # coordinate descent from none of either, a few sweeps
            c = replace(c, train_moe_half_tokens=golden(lambda x: moe_loss(replace(c, train_moe_half_tokens=x)), *MOE_HALF_TOKENS))
            c = replace(c, train_moe_half_width=golden(lambda x: moe_loss(replace(c, train_moe_half_width=x)), *MOE_HALF_WIDTH))
        cal = with_share(c)
    cal = fit_qlora(qlora, cal)
    # the stated range of every dense job, QLoRA's too, stays that of the records the shares were fitted on
    dense_errs = [_log_err(p, cal) for p in dense]
    moe_errs = [_log_err(p, cal) for p in moe]
    # the spread of a MoE estimate is that of its own records (root mean square: their mean is ~0 by the fit)
    moe_rms = math.sqrt(statistics.fmean(e * e for e in moe_errs)) if moe_errs else 0.0
    cal = replace(cal, train_spread=statistics.pstdev(dense_errs), train_moe_spread=moe_rms)
    cal, whole = fit_goodput(prepared, cal)
    return cal, train, groups, moe, sharded, whole, qlora


#: bounds of the dequantisation share of HBM bandwidth: a twentieth to all of it
QLORA_DEQUANT_SHARE = (0.02, 1.0)


def fit_qlora(qlora, cal):
    """qlora_dequant_share on the fitted Q-LoRA records, every other factor held: the share of the card's
    HBM bandwidth at which a micro-batch's dequantisation of the 4-bit base runs (trainspeed.qlora_dequant_s),
    minimising the squared log ratio; without such records the term stays off (0)."""
    if not qlora:
        return replace(cal, qlora_dequant_share=0.0)
    def loss(x):
        c = replace(cal, qlora_dequant_share=x)
        return statistics.fmean(_log_err(p, c) ** 2 for p in qlora)
    return replace(cal, qlora_dequant_share=golden(loss, *QLORA_DEQUANT_SHARE))


#: per-step overheads tried (seconds, every 10 ms): from none to ten times the shortest fitted step
STEP_OVERHEAD_GRID = [i / 100 for i in range(0, 201)]


def fit_goodput(prepared, cal):
    """goodput_base and step_overhead_s on the fitted whole runs: for each per-step overhead of the grid,
    the base is the geometric mean of step GPU-hours x the sourced interruption term x the overhead's
    share / published GPU-hours, capped at 1 (no run advances faster than its steps); the overhead kept
    is the one that leaves the smallest spread of log ratios (none when it does not narrow it), and the
    spread is the standard deviation of the log ratios left."""
    whole = [p for p in prepared if p.rec["class"] == "whole_run" and p.rec["split"] == "fit"]
    if not whole:
        return cal, whole

    def at(t0: float):
        c = replace(cal, goodput_base=1.0, step_overhead_s=t0)
        logs = [math.log(accuracy.evaluate(p, c) / p.rec["measured"]) for p in whole]
        c = replace(c, goodput_base=min(1.0, math.exp(statistics.fmean(logs))))
        resid = [math.log(accuracy.evaluate(p, c) / p.rec["measured"]) for p in whole]
        return (statistics.pstdev(resid) if len(resid) > 1 else 0.0), c

    # steps shorter than the fitted runs' shortest are charged as it (the overhead is not extrapolated)
    shortest = min(accuracy.whole_run_step_s(p.rec, accuracy.evaluate(replace(p, rec={**p.rec, "class": "training"}), cal))
                   for p in whole)
    # the smallest fitted run's GPUs: the scale from which a job pays the whole-run factors whole
    cal = replace(cal, step_overhead_min_step_s=shortest, goodput_full_scale_gpus=min(p.rec["count"] for p in whole))
    spread, cal = min((at(t0) for t0 in STEP_OVERHEAD_GRID), key=lambda got: got[0])
    return replace(cal, goodput_spread=spread), whole


def _resid(prepared, cal) -> str:
    errs = [abs(math.exp(_log_err(p, cal)) - 1) for p in prepared]
    return f"median |error| {statistics.median(errs):.1%} over {len(errs)} fit records"


def render(cal, serving, train, groups, moe, sharded, whole=(), load=(), qlora=()) -> str:
    today = date.today().isoformat()
    ids = lambda ps: ", ".join(p.rec["id"] for p in ps)  # noqa: E731
    srv_res = _resid(serving, cal)
    lines = [BEGIN,
             f"# Fitted {today} on {len(serving)} serving and {len(train)} training records (split: fit). Serving factors "
             f"are shared by all GPUs and models; {srv_res}.",
             f'hbm_share: {{v: {cal.bw_share:.3f}, src: [CALIBRATION], fit: "{srv_res}", note: "HBM bandwidth a decode step reaches (weights + KV reads); the ideal figures (K06) use the spec bandwidth"}}',
             "serving:",
             f'  compute_share: {{v: {cal.compute_share:.3f}, src: [CALIBRATION], note: "share of the achievable (MAMF) matmul rate that prefill and batched decode reach, attention included"}}',
             f'  layer_overhead_us: {{v: {cal.layer_us:.2f}, src: [CALIBRATION], note: "launch and scheduling time per layer of a decode step"}}',
             f'  sequence_overhead_us: {{v: {cal.seq_us:.2f}, src: [CALIBRATION], note: "sampling and bookkeeping time per sequence of a decode step"}}',
             f'  allreduce_latency_us: {{v: {cal.allreduce_us:.2f}, src: [CALIBRATION], note: "fixed cost of one tensor-parallel all-reduce (2 per layer per step), on top of ring bytes / link"}}',
             f'  moe_half_tokens: {{v: {cal.moe_half_tokens:.1f}, src: [CALIBRATION], note: "tokens per expert at which grouped expert matmuls run at half efficiency"}}',
             f'  moe_half_width: {{v: {cal.moe_half_width:.0f}, src: [CALIBRATION], note: "expert intermediate size at which the grouped expert matmuls run at half the serving matmul rate (narrow experts: Qwen3-30B-A3B 768); they are timed after the experts\' weight reads, not overlapped with them (speed.expert_gemm_s, AIC_MOE_TABLES)"}}',
             f'  ep_skew: {{v: {cal.ep_skew:.3f}, src: [CALIBRATION], note: "routing skew under expert parallelism: the busiest EP rank carries 1 + this x (EP - 1) / EP times the mean expert load, beyond the balls-into-bins spread (records run with EPLB: none)"}}',
             f'  mixed_input_share: {{v: {cal.mixed_input_share:.3f}, src: [CALIBRATION, TRTLLM_GPTOSS_BLOG], note: "experts stored in a format the GPU has no matmul units for (MXFP4 on Hopper/Ampere, FP8 on Ampere) run as mixed-input kernels that dequantise in the main loop (TensorRT-LLM W4A16_MXFP4 on Hopper): their weight reads and matmuls reach this share of a native kernel; AIConfigurator\'s measured H200 W4A16 MoE table reads gpt-oss-120b\'s experts at 2.7 TB/s (0.57 of 4.8 TB/s) at 32-256 tokens"}}',
             f'  mixed_input_matmul_share: {{v: {cal.mixed_input_matmul_share:.3f}, src: [CALIBRATION, TRTLLM_GPTOSS_README], note: "the matmuls of such mixed-input experts: on a card without FP4 tensor cores (Hopper, Ampere) TensorRT-LLM, vLLM and SGLang run MXFP4 experts as W4A16, BF16 activations against the packed 4-bit weights, each weight tile upcast to BF16 in registers in the kernel main loop before the BF16 MMA (TensorRT-LLM Triton/CUTLASS MoE backends on Hopper, vLLM Marlin and triton_kernels matmul_ogs, SGLang triton_kernels): a decode step\'s few tokens per expert run in the narrowest row tiles and its expert matmuls reach this share of a BF16 grouped GEMM; a prefill\'s wide row tiles spread the upcast and keep the BF16 rate. Fitted alone on the fit-split throughput records of such plans (bench/fit.py fit_mixed_matmul)"}}',
             f'  request_overhead_ms: {{v: {cal.request_ms:.2f}, src: [CALIBRATION], note: "time a request spends in the server before its prefill (receiving, tokenising, scheduling): added to time to first token"}}',
             f'  pp_return_us: {{v: {cal.pp_return_us:.2f}, src: [CALIBRATION, TRTLLM_PP_LOOP], note: "pipeline-parallel serving: host time per sequence of a micro-batch for each of the pp - 1 stages its sampled tokens pass on their way back to the first stage before its next step (TensorRT-LLM _executor_loop_pp, no overlap scheduler)"}}',
             f'  maturing_software_share: {{v: {cal.maturing_share:.3f}, src: [CALIBRATION, K12, K18], note: "bandwidth and matmul shares are scaled by this on GPUs whose software the catalog calls maturing, limited or new (B200, MI300X, Gaudi ...)"}}',
             '  engine_max_batch: {v: 256, src: [VLLM_ENGINE_ARGS], note: "concurrency: max is capped at this many sequences per replica (vLLM\'s documented max_num_seqs default)"}',
             '  memory_utilisation: {v: 0.9, src: [VLLM_ENGINE_ARGS], note: "share of card memory an engine gives weights + KV cache (vLLM gpu_memory_utilization default)"}',
             f'  fitted_on: "{ids(serving)}"']
    if load:
        lines += [f'  first_token_steps: {{v: {cal.first_token_steps:.3f}, src: [CALIBRATION], fit: "{_resid(load, cal)}", '
                  'note: "at an arrival rate (requests_per_s), decode steps of the batch in flight before a new request\'s first token: '
                  'the wait for the step boundary and the step that runs its prefill (theory 1.5), fitted on MLPerf Inference v4.1 and v5.1 Server and Interactive logs"}',
                  f'  first_token_steps_fitted_on: "{ids(load)}"',
                  f'  rate_read_share: {{v: {cal.rate_read_share:.3f}, src: [CALIBRATION], note: "at an arrival rate, the fixed part of each engine step as a share of the replica\'s own weight read (its one-sequence step\'s memory time), paid beside the batch\'s work: it sets how many sequences a rate near capacity keeps in flight (queueing.with_floor), fitted with first_token_steps on the MLPerf Server/Interactive logs\' mean TTFT and TPOT"}}',
                  f'  ttft_p99_factor: {{v: {cal.ttft_p99_factor:.3f}, src: [CALIBRATION], note: "the 99th-percentile TTFT at an arrival rate over the modelled mean: '
                  'the median over the fitted MLPerf Server/Interactive logs of their p99 TTFT / the modelled mean (prompt lengths and Poisson bursts the mean model does not carry)"}',
                  f'  tpot_p99_factor: {{v: {cal.tpot_p99_factor:.3f}, src: [CALIBRATION], note: "the same for the TPOT: the median of the logs\' p99 TPOT / the modelled TPOT of the batch in flight"}}']
    lines += ["training:",
             "  share_of_matmul:   # share of the achievable (MAMF) matmul rate reached by model FLOPs, per GPU generation and precision"]
    lines.append("    default: {" + ", ".join(f"{p}: {{v: {v:.3f}, src: [CALIBRATION]"
                                         + (', note: "no FP4 training record: the FP8 figure"' if p == "fp4" else "") + "}"
                                         for p, v in sorted(cal.train_default.items())) + "}")
    for gen, fam in sorted(cal.train_share.items()):
        parts = []
        for p, v in sorted(fam.items()):
            sel = groups.get((gen, p), [])
            parts.append(f'{p}: {{v: {v:.3f}, src: [CALIBRATION], fit: "{_resid(sel, cal)}"}}')
        if gen in cal.train_fsdp_only:
            parts.append('measured_on: "zero3"')
        lines.append(f"    {gen}: {{" + ", ".join(parts) + "}")
    lines.append(f'  zero3_share: {{v: {cal.train_zero3_share:.3f}, src: [CALIBRATION], fit: "{_resid(sharded, cal)}", '
                 'note: "runs that shard weights with ZeRO-3/FSDP reach this share of ZeRO-0/1 runs of the same GPU and precision: '
                 'weight gathers every micro-batch are not all hidden, and the FSDP stacks of the records fuse fewer kernels than Megatron"}')
    lines.append(f'  half_hidden: {{v: {cal.train_half_hidden:.0f}, src: [CALIBRATION], fit: "{_resid([p for sel in groups.values() for p in sel], cal)}", '
                 'note: "model width at which a training step reaches half the fitted share of the matmul rate: per token and layer '
                 'the matmul FLOPs grow with hidden^2 and the norms, activations, residuals and optimizer element-wise work with hidden, '
                 'so share x hidden / (hidden + this); fitted with the shares on the dense records (bench/fit.py)"}')
    lines.append(f'  half_hidden_min_width: {{v: {cal.train_width_min:.0f}, src: [CALIBRATION], note: "the narrowest model of the records '
                 'half_hidden was fitted on: a narrower one is charged as this width (the term is not extrapolated)"}')
    lines.append(f'  moe_share: {{v: {cal.train_moe_share:.3f}, src: [CALIBRATION], fit: "{_resid(moe, cal) if moe else "no MoE record"}", '
                 'note: "MoE training reaches this share of a dense model beyond the computed MoE terms (the all-to-all, the busiest EP rank, '
                 'the grouped matmuls at moe_half_width): router, permutation and expert-load kernels"}')
    lines.append(f'  moe_half_tokens: {{v: {cal.train_moe_half_tokens:.0f}, src: [CALIBRATION], '
                 'note: "tokens per expert per micro-batch (EP ranks x tokens per rank x top-k / experts) at which the grouped '
                 'expert matmuls of a training step run at half efficiency: small micro-batches feed each expert few rows"}')
    lines.append(f'  moe_half_width: {{v: {cal.train_moe_half_width:.0f}, src: [CALIBRATION], '
                 'note: "expert intermediate size per card at which the grouped expert matmuls of a training step run at half efficiency '
                 '(an expert split over TP without EP is TP times narrower)"}')
    lines.append(f'  residual_spread: {{v: {cal.train_spread:.3f}, src: [CALIBRATION], note: "standard deviation of ln(tool / measured) over the '
                 'fitted dense training records: training hours are stated as x exp(-+ this)"}')
    lines.append(f'  moe_residual_spread: {{v: {cal.train_moe_spread:.3f}, src: [CALIBRATION], note: "root mean square of ln(tool / measured) over the '
                 'fitted MoE training records: the stated range of a MoE job"}')
    if qlora:
        formats = ", ".join(f"{n} {f}" for f, n in sorted(Counter(p.rec.get("base_format") or "format not stated" for p in qlora).items()))
        srcs = ", ".join(["CALIBRATION"] + sorted({p.rec["source"] for p in qlora}))
        lines.append(f'  qlora_dequant_share: {{v: {cal.qlora_dequant_share:.3f}, src: [{srcs}], fit: "{_resid(qlora, cal)}", '
                     'note: "QLoRA dequantises its frozen 4-bit base before every matmul, each pass of every micro-batch (forward, backward, '
                     'and the recomputed forward with checkpointing): 4-bit weights read and 16-bit copies written at this share of the card\'s '
                     f'HBM bandwidth (numbers.trainspeed.qlora_dequant_s); one share for every 4-bit format, fitted on {len(qlora)} Q-LoRA records ({formats})"}}')
        lines.append(f'  qlora_fitted_on: "{ids(qlora)}"')
    if whole:
        lines.append(f'  goodput_base: {{v: {cal.goodput_base:.3f}, src: [CALIBRATION], fit: "{_resid(whole, cal)}", '
                     'note: "share of a whole run\'s wall-clock that advances training before interruptions (checkpoints, evaluation, '
                     'data stalls, and what the step model misses on whole runs): training_hours = step hours / goodput"}')
        lines.append(f'  step_overhead_s: {{v: {cal.step_overhead_s:.2f}, src: [CALIBRATION], note: "wall-clock per optimizer step of a whole '
                     'pre-training run beyond the step model (gradient norm and optimizer update, data loading, logging): goodput x step / '
                     '(step + this); fitted with goodput_base, it weighs on the short steps of small models on fast cards"}')
        lines.append(f'  step_overhead_min_step_s: {{v: {cal.step_overhead_min_step_s:.3f}, src: [CALIBRATION], note: "the shortest optimizer step '
                     'of the fitted whole runs: a shorter step is charged the overhead as this one (not extrapolated), so the overhead '
                     'does not rank cards outside the steps it was fitted on"}')
        lines.append(f'  goodput_full_scale_gpus: {{v: {cal.goodput_full_scale_gpus:g}, src: [CALIBRATION], note: "the fewest GPUs of the fitted '
                     'whole runs: a job at least this large pays goodput_base and step_overhead_s whole, a smaller one a share growing with '
                     'the log of its nodes, none on one node (calibration.whole_run_scale, a stated form: no smaller whole run is fitted)"}')
        lines.append(f'  goodput_spread: {{v: {cal.goodput_spread:.3f}, src: [CALIBRATION], note: "standard deviation of ln(tool / published) '
                     'over the fitted whole runs: added in quadrature to the step spread in the stated range of training_hours"}')
        lines.append(f'  goodput_fitted_on: "{ids(whole)}"')
    lines.append(f'  fitted_on: "{ids(train)}"')
    lines.append(END)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--training-only", action="store_true",
                    help="refit the training factors only, keeping the serving factors of catalog/efficiency.yaml")
    args = ap.parse_args(argv)
    cat = catalog_mod.load(accuracy.ROOT / "catalog")
    cal = speed.calibration(cat)
    records, models = accuracy.load_records()
    prepared = accuracy.prepare(records, models, cat)
    if args.training_only:
        serving = serving_records(prepared)
    else:
        cal, serving = fit_serving(prepared, cal)
        cal, _ = fit_mixed_matmul(prepared, cal)
    cal, load = fit_queueing(prepared, cal)
    cal, train, groups, moe, sharded, whole, qlora = fit_training(prepared, cal)
    block = render(cal, serving, train, groups, moe, sharded, whole, load, qlora)
    print(block)
    if not args.dry_run:
        text = EFFICIENCY.read_text()
        a, b = text.index(BEGIN), text.index(END) + len(END)
        EFFICIENCY.write_text(text[:a] + block + text[b:])
        print(f"\nwrote {EFFICIENCY.relative_to(accuracy.ROOT)}; run bench/accuracy.py for the error per class and split")
    return 0


if __name__ == "__main__":
    sys.exit(main())
