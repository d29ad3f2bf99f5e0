"""How fast training goes: FLOPs per token (full, LoRA/QLoRA), QLoRA's dequantisation, micro-batches and the pipeline bubble,
the tokens per second per GPU a layout reaches (calibrated shares of the achievable matmul rate, the
collectives of its parallelism), and the hours of a run: step hours and the whole run's wall-clock
over the fitted goodput. Split from numbers.speed (which times serving and keeps `Speed`, the value
both return); like it, these functions evaluate the layout they are given and never choose one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from advisor.inputs.catalog import GPU
from advisor.inputs.workload import Workload
from advisor.numbers import comm
from advisor.numbers.calibration import Calibration, default_calibration
from advisor.numbers.layouts import Layout, expert_split
from advisor.numbers.limits import batch_bound, batch_source
from advisor.numbers.ledger import Ledger
from advisor.numbers.speed import (ACT_BYTES, CHECKPOINTING_COMPUTE, FP4_NAMES, Speed, compute_precision, _moe_eff,
                                   expert_imbalance, _shape_of)
from advisor.numbers.terms import TFLOP, Term


def model_flops_per_token(w: Workload, led: Ledger) -> tuple[float, int]:
    """Model FLOPs of one trained token, without recomputation: 6 x active parameters for full training;
    for LoRA/QLoRA 4 x the frozen base (forward 2N + activation gradients 2N, no weight gradients) plus
    6 x the adapters. MFU is counted on these."""
    if w.method in ("lora", "qlora"):
        return 4 * led.sized.active + 6 * led.adapter_params, 4
    return 6 * led.sized.active, 6


def train_flops_per_token(w: Workload, led: Ledger) -> tuple[float, int]:
    flops, per_param = model_flops_per_token(w, led)
    flops *= CHECKPOINTING_COMPUTE if w.activation_checkpointing else 1
    return flops * (2 if w.task == "rlhf" else 1), per_param


#: passes over the frozen base per micro-batch in which QLoRA dequantises it: the forward and the backward
#: (the activation gradients multiply by each dequantised weight again); a recomputed forward adds one
QLORA_DEQUANT_PASSES = 2
ONE_CARD = Layout(1, 1, 1)


def qlora_dequant_s(w: Workload, led: Ledger, gpu: GPU, cal: Calibration, lay: Layout = ONE_CARD) -> tuple[float, str]:
    """Seconds per micro-batch that QLoRA spends dequantising the card's share of its frozen 4-bit base, with
    the formula; (0, "") for any other method or without a fitted share. The 4-bit kernels of QLoRA
    (bitsandbytes NF4, auto-gptq) keep no 16-bit copy: every pass reads the 4-bit weights and writes a 16-bit
    copy before the matmul, whatever the micro-batch's tokens, so it weighs on short sequences and large
    models. The card holds 1 / (TP x PP) of the layers; FSDP-QLoRA gathers the whole layer to every card,
    so data parallelism divides nothing. Bandwidth: the card's HBM at the fitted share (bench/fit.py, on
    the Q-LoRA records of catalog/measurements.yaml)."""
    if w.method != "qlora" or not cal.qlora_dequant_share or not gpu.bandwidth_tb_s:
        return 0.0, ""
    passes = QLORA_DEQUANT_PASSES + (1 if w.activation_checkpointing else 0)
    tp, pp = lay.tp, lay.pp
    # the ledger's 4-bit base (read) and a 16-bit copy of it (written), on this card
    per_pass = (led.sized.weights_bytes + led.sized.params * ACT_BYTES) / (tp * pp)
    bw = gpu.bandwidth_tb_s * 1e12 * cal.qlora_dequant_share
    secs = passes * per_pass / bw
    how = (f"{passes} passes ({'forward, backward, recomputed forward' if passes == 3 else 'forward, backward'}) x "
           f"({led.sized.weights_bytes / 1e9:,.1f} GB 4-bit read + {led.sized.params * ACT_BYTES / 1e9:,.1f} GB 16-bit written)"
           + (f" / (TP {tp} x PP {pp})" if tp * pp > 1 else "")
           + f" / ({gpu.bandwidth_tb_s:g} TB/s HBM x {cal.qlora_dequant_share:.3f} fitted dequantisation share) = {secs:,.2f} s per micro-batch")
    return secs, how


def planned_micro_batches(pp: int) -> int:
    """The planner's micro-batches per replica per step when the workload states no global batch: 4 per
    pipeline stage (bubble (PP - 1) / (5 PP - 1), under 20%), and 4 of gradient accumulation without a
    pipeline (the gradient all-reduce is paid once per step and hidden behind them)."""
    return max(1, 4 * pp)


def micro_batches(w: Workload, lay: Layout, micro_batch: int | None = None,
                  max_tokens: float = 0.0, explain: bool = True) -> tuple[int, int, str, str]:
    """Micro-batches per replica of `lay` per step and the global batch (sequences) they make, with how (the
    arithmetic) and its basis (the memo's words): the stated global batch, else the planner's choice
    (planned_micro_batches), cut to at most `max_tokens` per step (limits.batch_bound, LLAMA3_BATCH) and
    at least one micro-batch per replica. `explain` false: the figures without their texts (the planner
    times thousands of layouts it does not keep)."""
    mbs = micro_batch or w.micro_batch
    pp, dp = lay.pp, lay.dp
    if w.global_batch:
        m = max(1, round(w.global_batch / (mbs * dp)))
        if not explain:
            return m, w.global_batch, "", ""
        return m, w.global_batch, (f"global_batch {w.global_batch:,} / (micro_batch {mbs} x DP {dp}) = {m:,} micro-batches per replica"
                                   + (" (rounded)" if m * mbs * dp != w.global_batch else "")), "as given"
    m = planned_micro_batches(pp)
    bound = batch_bound(w, max_tokens)
    whose, key = batch_source(w)
    cut = bool(bound) and m * mbs * dp > bound
    if cut:
        m = max(1, bound // (mbs * dp))
    if not explain:
        return m, m * mbs * dp, "", ""
    if not cut:
        how = (f"{m} micro-batches per replica ({'4 x PP' if pp > 1 else 'no pipeline'}"
               + (f"; at most {max_tokens / 1e6:,.1f}M tokens a step, {key}" if bound else "") + ")")
        basis = ("chosen by the planner: 4 micro-batches per pipeline stage" if pp > 1 else
                 "chosen by the planner: 4 micro-batches of gradient accumulation")
    else:
        how = (f"{m} micro-batch{'es' if m > 1 else ''} per replica (4 per stage would exceed the bound of {max_tokens / 1e6:,.1f}M tokens "
               f"per step, {bound:,} sequences of {w.context_tokens:,}: {whose}, {key})")
        # review 17, F6: the memo said "4 micro-batches per pipeline stage" of a plan the bound cut to 2 per replica
        basis = (f"chosen by the planner: {'4 micro-batches per pipeline stage' if pp > 1 else '4 micro-batches'} would exceed "
                 f"{max_tokens / 1e6:,.1f}M tokens a step, {whose} ({key}), so "
                 f"{m} per replica")
    return m, m * mbs * dp, f"planner's choice: {how} x micro_batch {mbs} x DP {dp} = global batch {m * mbs * dp:,} sequences", basis


def attention_train_flops(w: Workload, seq: int) -> float:
    """Causal attention per token, forward and backward: 3 x 2 x 2 x layers x seq/2 x heads x dim."""
    m = w.model
    L = m.num("layers")
    heads, hd = m.num("attention_heads"), m.num("head_dim")
    d = heads * hd if heads and hd else m.num("hidden_size")
    return 6 * L * seq * d if L and d else 0.0


@dataclass
class Training:
    tokens_per_s_per_gpu: float
    mfu: float
    share: float
    bubble: float
    comm_s: float
    compute_s: float
    moe: MoETerms | None = None
    dequant_s: float = 0.0        # QLoRA: seconds of each step spent dequantising the frozen 4-bit base
    stage_imbalance: float = 1.0  # the fullest pipeline stage over the mean (stage_imbalance)


@dataclass(frozen=True)
class MoETerms:
    """The MoE terms of one training step (per micro-batch of one pipeline stage)."""

    expert_flops_share: float     # of the parameter FLOPs, in routed experts
    matmul_efficiency: float      # grouped expert matmuls: the width of each card's expert slice
    imbalance: float              # busiest EP rank's expert load over the mean
    alltoall_bytes: float         # bytes each GPU sends per micro-batch (dispatch + combine, forward + backward)
    alltoall_s: float             # seconds of it per micro-batch, on the critical path
    link: str                     # where the all-to-all runs


#: all-to-all passes per MoE layer and micro-batch: forward, and the backward's gradient dispatch and
#: combine (the transposed all-to-alls); full recomputation runs the forward's once more
ALLTOALL_PASSES = 2


def moe_terms(w: Workload, led: Ledger, gpu: GPU, cal: Calibration, lay: Layout, seq: int, mbs: int,
              precision: str) -> MoETerms | None:
    """The MoE terms of the training layout `lay`, None for a dense model: each MoE layer's dispatch and combine
    all-to-all of each GPU's tokens (mbs x seq / TP with sequence parallelism) x top-k hidden vectors over
    the EP ranks, forward and backward (numbers.comm.moe_layer_alltoall_s: FP8 dispatch with FP8 expert
    matmuls, BF16 combine), over NVLink while the EP group (one card per rank, consecutive cards as
    Megatron-Core places them) stays inside the NVLink domain, else its remote share over the network;
    the busiest EP rank's load (balls into bins over the EP group's tokens: training routers are trained to
    balance, by auxiliary loss or DeepSeek-V3's bias, so serving's fitted routing skew is not applied); and
    the grouped expert matmuls' efficiency by the tokens each expert gets per micro-batch and the width of
    each card's slice of an expert (an expert split over TP without EP is TP times narrower), with the
    training fit's half points (moe_half_tokens, moe_half_width)."""
    sh = _shape_of(w, led)      # once per ledger, as serving reads it: moe_terms runs for every layout timed
    tp, pp, ep = lay.tp, lay.pp, lay.ep
    if not (sh.expert_flops and sh.experts and sh.k and sh.hidden):
        return None
    share = sh.expert_flops / (sh.expert_flops + sh.dense_flops)
    width = sh.expert_width / (tp if ep <= 1 else 1)
    tokens_gpu = mbs * seq / tp
    # tokens each expert's matmul gets per micro-batch: the EP group's tokens x top-k over the experts
    # (without EP a card holds a slice of every expert and sees the whole micro-batch)
    per_expert = (ep * tokens_gpu if ep > 1 else mbs * seq) * sh.k / sh.experts
    eff = (_moe_eff(width, cal.train_moe_half_width) if width else 1.0) * _moe_eff(per_expert, cal.train_moe_half_tokens)
    imb = expert_imbalance(tokens_gpu * ep, sh.k, ep)
    layers = (sh.moe_layers or sh.layers or 0) / pp
    passes = ALLTOALL_PASSES + (1 if w.activation_checkpointing else 0)
    domain = comm.nvlink_domain(gpu)
    nvlink, where = cal.link_bytes_s(gpu)
    latency = cal.allreduce_us * 1e-6
    d = comm.dispatch_bytes(precision)
    per_layer = (comm.moe_alltoall_bytes(tokens_gpu, sh.k, sh.hidden, ep, d)
                 + comm.moe_alltoall_bytes(tokens_gpu, sh.k, sh.hidden, ep, comm.COMBINE_BYTES))
    if ep <= domain:
        secs = comm.moe_layer_alltoall_s(tokens_gpu, sh.k, sh.hidden, ep, nvlink, latency, d)
    else:
        # an EP group over several NVLink domains: the peers on the card's own domain over NVLink, the
        # rest over the network, both at once (DeepEP: NVLink inside a node, RDMA between nodes)
        remote = (ep - domain) / ep
        secs = comm.moe_layer_alltoall_split_s(tokens_gpu, sh.k, sh.hidden, ep, domain, nvlink, cal.scale_out_gb_s * 1e9, latency, d)
        where = (f"the network at {cal.scale_out_gb_s:g} GB/s per GPU for {remote:.0%} of it (EP {ep} spans "
                 f"{math.ceil(ep / domain)} NVLink domains of {domain}), {where} for the rest")
    return MoETerms(share, eff, imb, passes * layers * per_layer, passes * layers * secs, where)


def width_how(cal: Calibration, hidden: float | None) -> str:
    """The width share's factor in the training share's text (", x 0.849 = hidden 8,192 / ..."), or ""
    where the term is 1 (no fitted term, or no width)."""
    share = cal.width_share(hidden)
    if share == 1.0:
        return ""
    at = cal.charged_width(hidden)
    floor = (f" (a {hidden:,.0f}-wide model charged as the fit's narrowest, {at:,.0f})" if at > hidden else "")
    return f", x {share:.3f} = hidden {at:,.0f} / ({at:,.0f} + {cal.train_half_hidden:,.0f} fitted half width){floor}"


def fp4_training_credit(gpu: GPU, cal: Calibration, precision: str) -> float:
    """FP4 training without a fitted FP4 share on this GPU family is credited the FP8 rate, not FP4's
    (published low-precision training gains are tens of percent over BF16, not the 2x of the FP4 peak,
    and no FP4 training run is in catalog/measurements.yaml): the FP8 / FP4 spec ratio, else 1."""
    if precision != "fp4" or cal.fitted_for(gpu, "fp4"):
        return 1.0
    f8, f4 = gpu.tflops("fp8"), gpu.tflops("fp4")
    return f8 / f4 if f8 and f4 else 1.0


#: interleaved chunks per card the planner weighs (Megatron-LM's virtual pipeline stages; NeMo's large
#: recipes and Llama 3 405B run 2-8)
SCHEDULE_CHUNKS = (4, 2)


# stage_imbalance and schedule read only integers: the planner asks the same few thousands of times in
# one search (every replica count of a base has its layers, stages and micro-batches), so each is kept
@lru_cache(maxsize=1024)
def stage_imbalance(layers: int, pp: int, v: int = 1) -> float:
    """How much longer the fullest pipeline stage runs than the mean, the split chosen to balance best:
    the L layers over PP x v chunks, or L + 2 units when the input embedding and the output layer with
    its loss are counted as a layer each (Megatron-Core's account_for_embedding_in_pipeline_split and
    account_for_loss_in_pipeline_split; Llama 3 405B's 126 layers on 16 stages, the first and last one
    layer short). When neither splits evenly the fullest stage paces the pipeline: ceil(n / (PP x v)) x
    PP x v / n, the lesser of n = L and n = L + 2 (1 for an even split)."""
    if pp <= 1 or not layers or pp * v > layers:
        return 1.0
    return min(math.ceil(n / (pp * v)) * pp * v / n for n in (layers, layers + 2))


@lru_cache(maxsize=1024)
def schedule(layers: int, pp: int, m: int, flexible: bool = False) -> int:
    """The chunks per card the planner runs a pipeline of `pp` stages and `m` micro-batches with: of 1
    and SCHEDULE_CHUNKS that fill whole rounds (m divisible by PP, Megatron-LM's assertion; `flexible`:
    any m of at least PP, Llama 3's modified schedule, LLAMA3_BATCH: fewer than PP micro-batches leave
    stages idle in every round), the one with the shortest step, stage imbalance x
    (m v + PP - 1) / (m v) (the first of equals: fewer chunks, fewer transfers)."""
    if pp <= 1 or not layers:
        return 1
    options = [1] + [v for v in sorted(SCHEDULE_CHUNKS) if pp * v <= layers and (m % pp == 0 or flexible and m >= pp)]
    return min(options, key=lambda v: round(stage_imbalance(layers, pp, v) * (m * v + pp - 1) / (m * v), 9))


def training_rate(w: Workload, led: Ledger, gpu: GPU, cal: Calibration, rate: Term, lay: Layout,
                  seq: int | None = None, micro_batch: int | None = None, microbatches: int | None = None,
                  virtual_stages: int = 1, precision: str | None = None, alltoall_overlapped: bool = False) -> Training:
    """Tokens per second per GPU of the training layout `lay` (its tp, pp, dp and ep): model FLOPs at the fitted share of the
    achievable matmul rate, pipeline bubbles, and data-parallel gradient traffic overlapped with compute;
    a MoE model's experts at their grouped-matmul efficiency and the busiest EP rank's load, its
    all-to-all dispatch and combine on the critical path (`moe_terms`), or with `alltoall_overlapped`
    hidden behind compute where it is shorter (DeepSeek-V3's DualPipe: a measurement says so; a plan
    assumes Megatron-Core's default, not overlapped)."""
    seq = seq or w.context_tokens
    mbs = micro_batch or w.micro_batch
    tp, pp, dp = lay.tp, lay.pp, lay.dp
    p = precision or compute_precision(w, gpu, led.sized)
    p = "fp4" if p in FP4_NAMES else p if p == "fp8" else "bf16"   # nvfp4/mxfp4 matmuls run at the FP4 rate
    share, _ = cal.train_share_for(gpu, p)
    share *= cal.width_share(w.model.num("hidden_size"))
    if led.sized.experts and led.sized.experts_per_token:
        share *= cal.train_moe_share
    if w.zero_stage >= 3 and gpu.generation not in cal.train_fsdp_only:
        share *= cal.train_zero3_share
    flops, _ = train_flops_per_token(w, led)
    moe = moe_terms(w, led, gpu, cal, lay, seq, mbs, p)
    if moe:
        # the experts' FLOPs take the busiest rank's time at their matmul efficiency
        flops *= 1 - moe.expert_flops_share + moe.expert_flops_share * moe.imbalance / moe.matmul_efficiency
    attention = attention_train_flops(w, seq)      # per token, read twice below
    flops += attention * (CHECKPOINTING_COMPUTE if w.activation_checkpointing else 1) * (2 if w.task == "rlhf" else 1)
    R = rate.value * TFLOP * share * fp4_training_credit(gpu, cal, p)
    m = microbatches or micro_batches(w, lay, mbs, cal.batch_tokens(w), explain=False)[0]
    # share of a step the pipeline idles: (PP - 1) / (m x v + PP - 1), v interleaved stages per card
    bubble = (pp - 1) / (m * virtual_stages + pp - 1) if pp > 1 else 0.0
    tokens_step = m * mbs * seq                     # per replica per optimizer step
    # the fullest stage paces the pipeline (layers that do not split evenly into PP x v chunks)
    imbalance = stage_imbalance(int(w.model.num("layers") or 0), pp, virtual_stages)
    compute = tokens_step * flops / (tp * pp * R) * imbalance
    if tp > 1:
        # tensor parallelism: two all-reduces of the micro-batch's activations per layer forward and two
        # backward, on the critical path (K14), over the card's own link (NVLink, or PCIe without it)
        L, hid = w.model.num("layers"), w.model.num("hidden_size")
        if L and hid:
            tp_link, _ = cal.link_bytes_s(gpu)
            per_mb = 4 * (L / pp) * comm.allreduce_s(mbs * seq * hid * ACT_BYTES, tp, tp_link, cal.allreduce_us * 1e-6)
            compute += m * per_mb * (CHECKPOINTING_COMPUTE if w.activation_checkpointing else 1)
    if moe:
        compute = max(compute, m * moe.alltoall_s) if alltoall_overlapped else compute + m * moe.alltoall_s
    # QLoRA's dequantisation runs before each matmul it feeds, on the critical path of every micro-batch
    dequant = m * qlora_dequant_s(w, led, gpu, cal, lay)[0]
    compute += dequant
    # data-parallel gradient traffic: all-reduce of the 16-bit gradients (ZeRO-3/FSDP: gathers too); the
    # experts' over their expert-data-parallel ranks (TP x DP / EP of them), each holding its EP share
    trainable = led.bytes("gradients_gb") / 2 * ACT_BYTES if led.bytes("gradients_gb") else led.sized.params * ACT_BYTES
    _, exp_grads, _ = led.training_expert_bytes()
    exp_trainable = trainable * exp_grads / led.bytes("gradients_gb") if exp_grads else 0.0
    if tp * pp * dp <= gpu.gpus_per_node:
        link, _ = cal.link_bytes_s(gpu)
    else:
        link = cal.scale_out_gb_s * 1e9
    passes = 1.5 * m if w.zero_stage >= 3 else 1     # FSDP gathers weights for every micro-batch
    split = expert_split(lay)
    comm_s = passes * (comm.allreduce_bytes((trainable - exp_trainable) / (tp * pp), dp)
                       + comm.allreduce_bytes(exp_trainable / (pp * split), tp * dp // split)) / link
    step = max(compute, comm_s) / (1 - bubble)
    tps = tokens_step / step / (tp * pp)
    # MFU against the peak of the precision the matmuls run at (an FP4 run is not measured against BF16)
    model_flops = model_flops_per_token(w, led)[0] + attention
    spec = gpu.tflops(p) or gpu.tflops("bf16")
    return Training(tps, tps * model_flops / (spec * TFLOP), share, bubble, comm_s, compute, moe, dequant, imbalance)


def _virtual_stages(w: Workload, lay, m: int) -> int:
    """The virtual pipeline stages per card the layout's schedule runs with `m` micro-batches a step (1:
    no interleaving); apart from training_time because it is the choice of a schedule, not a time."""
    layers = int(w.model.num("layers") or 0)
    # the interleaved schedule runs when the micro-batches fill the stages in whole rounds (Megatron-LM
    # requires micro-batches divisible by PP with virtual stages); the planner's own batch, which its
    # bound may cut to fewer micro-batches than that (micro_batches), runs Llama 3's modified schedule,
    # which "allows setting N flexibly" (arXiv 2407.21783 section 3.3.2, LLAMA3_BATCH)
    flexible = not w.global_batch
    v = lay.interleave if lay.interleave is not None else schedule(layers, lay.pp, m, flexible)
    v = v if lay.pp > 1 and (m % lay.pp == 0 or flexible and m >= lay.pp) else 1
    return v


def alltoall_overlapped(w: Workload) -> bool:
    """Whether a plan hides its MoE all-to-all behind compute: as the workload states, else the planner's
    schedule, which overlaps it (DeepSeek-V3's DualPipe; Megatron-Core 0.14's batch-level EP overlap,
    --overlap-moe-expert-parallel-comm, MEGATRON_EP_OVERLAP) unless activation checkpointing recomputes every
    layer, which that overlap rules out. Until issue 45 every plan put it on the critical path: a 2,048-GPU
    DeepSeek-V3-class plan paid its cross-node all-to-all in full, which no lab training such a model does."""
    return w.alltoall_overlap if w.alltoall_overlap is not None else not w.activation_checkpointing


def _moe_term(w: Workload, cal: Calibration, lay, tr, src: str) -> dict:
    """The experts' part of a training step as speed_explained words it: their FLOPs share, busiest-rank
    load and grouped-matmul efficiency, and the EP all-to-all (on or off the critical path)."""
    return {"value": tr.moe.alltoall_s, "factor": {"ep": lay.ep, "alltoall_bytes_per_micro_batch": tr.moe.alltoall_bytes,
                                                 "expert_flops_share": tr.moe.expert_flops_share,
                                                 "expert_matmul_efficiency": tr.moe.matmul_efficiency,
                                                 "expert_imbalance": tr.moe.imbalance, "link": tr.moe.link},
            "source": src,
            "formula": (f"experts {tr.moe.expert_flops_share:.0%} of the parameter FLOPs at x {tr.moe.imbalance:.3f} busiest-rank load "
                        f"(balls into bins over EP {lay.ep}; trained routers balance) / {tr.moe.matmul_efficiency:.2f} grouped-matmul "
                        f"efficiency (tokens per expert / (tokens + {cal.train_moe_half_tokens:g}) x expert width per card / (width + {cal.train_moe_half_width:g})); "
                        + (f"all-to-all per micro-batch: {tr.moe.alltoall_bytes / 1e6:,.1f} MB per GPU (tokens x top-k x hidden x "
                           f"bytes, dispatch + combine, forward + backward, x (EP - 1) / EP) = {tr.moe.alltoall_s * 1e3:,.2f} ms over {tr.moe.link}"
                           + ((", hidden behind compute where shorter (alltoall_overlap, as the workload states)" if w.alltoall_overlap
                               else ", hidden behind compute where shorter (the planner's schedule: Megatron-Core's EP overlap, DualPipe; MEGATRON_EP_OVERLAP)")
                              if alltoall_overlapped(w) else
                              ", on the critical path (" + ("alltoall_overlap: false, as the workload states" if w.alltoall_overlap is False
                                                            else "full activation recompute rules out the EP overlap") + ")")
                           if lay.ep > 1 else "no expert parallelism: experts split over TP, no all-to-all"))}


def _goodput_term(w: Workload, cal: Calibration, count: int, good: float, good_how: str, step_s: float) -> dict:
    """The goodput as speed_explained words it: the workload's stated one, or the fitted whole-run model's
    factors (interruptions, per-step overhead) at `count` GPUs."""
    return ({"value": good, "factor": {"stated": w.goodput}, "source": "the workload's goodput", "formula": good_how}
            if w.goodput is not None else
            {"value": good, "factor": {"goodput_base": cal.goodput_base, "step_s": step_s,
                                       "whole_run_scale": cal.whole_run_scale(count),
                                       "step_overhead_s": cal.step_overhead_s,
                                       "interruptions_per_gpu_hour": cal.interruptions_per_gpu_hour,
                                       "hours_lost_per_interruption": cal.hours_lost_per_interruption},
             "source": "catalog/efficiency.yaml (whole_run: LLAMA3_RELIABILITY; goodput_base and step_overhead_s fitted by bench/fit.py)",
             "formula": good_how})


def _training_explained(w: Workload, led: Ledger, gpu: GPU, cal: Calibration, rate: Term, lay, tr, p: str, batches: tuple,
                        good: float, good_how: str, step_s: float) -> dict:
    """speed_explained of a training plan: each term of the step rate (matmul share, pipeline bubble, DP
    gradients, compute, MFU, experts, QLoRA dequantisation) and the goodput, with its factors and source;
    `batches` is (micro-batches, global batch, virtual stages, the batch's words). Apart from
    training_time, which reads none of it: the planner asks for the figures alone (explain false)."""
    src = "catalog/efficiency.yaml (fitted by bench/fit.py)"
    lora = w.method in ("lora", "qlora")
    share_how = cal.train_share_for(gpu, p)[1]
    count = lay.count
    m, gbs, v, batch_how = batches
    return {
        "matmul_share": {"value": tr.share, "factor": {"share_of_achievable_matmul": tr.share,
                                                       # false: no training record of this GPU family and precision
                                                       "fitted_for_family": cal.fitted_for(gpu, p)},
                         "source": src,
                         "formula": f"{rate.formula} x {tr.share:.3f} ({share_how}"
                                    + (f", x {fp4_training_credit(gpu, cal, p):.2f} FP8 / FP4 peak: no FP4 training measurement, credited the FP8 rate"
                                       if fp4_training_credit(gpu, cal, p) != 1.0 else "")
                                    + width_how(cal, w.model.num("hidden_size"))
                                    + (f", x {cal.train_moe_share:g} MoE" if led.sized.experts else "")
                                    + (f", x {cal.train_zero3_share:g} ZeRO-3/FSDP" if w.zero_stage >= 3 and gpu.generation not in cal.train_fsdp_only
                                       else ", measured on FSDP runs" if gpu.generation in cal.train_fsdp_only else "") + ")"},
        "pipeline_bubble": {"value": tr.bubble, "factor": {"micro_batches": m, "global_batch": gbs}, "source": "formula",
                            "formula": (f"(PP {lay.pp} - 1) / ({m:,} micro-batches"
                                        + (f" x {v} interleaved stages per card" if v > 1 else "")
                                        + f" + PP {lay.pp} - 1) of each step idle; {batch_how}"
                                        + (f"; the fullest stage runs {tr.stage_imbalance:.3f}x the mean (the layers do not split evenly into "
                                           f"{lay.pp} x {v} chunks)" if tr.stage_imbalance > 1 else "")
                                        if lay.pp > 1 else f"no pipeline; {batch_how}")},
        "dp_gradient_s": {"value": tr.comm_s, "factor": {"link": cal.link_bytes_s(gpu)[1] if count <= gpu.gpus_per_node
                                                         else f"{cal.scale_out_gb_s:g} GB/s per GPU between nodes"},
                          "source": src, "formula": "ring all-reduce of 16-bit gradients over DP, overlapped with compute "
                                                    "(ZeRO-3: weight gathers every micro-batch)"},
        "compute_s_per_step": {"value": tr.compute_s, "factor": {}, "source": "formula",
                               "formula": "micro-batches x micro-batch x sequence x FLOPs per token (incl. causal attention) / rate"
                                          + (" + QLoRA's dequantisation of the 4-bit base (qlora_dequant_s)" if tr.dequant_s else "")},
        "mfu": {"value": tr.mfu, "factor": {}, "source": "formula",
                "formula": (f"tokens/s per GPU x ({'4 x frozen base + 6 x adapters' if lora else '6 x active parameters'} + attention) "
                            f"FLOPs / {gpu.tflops(p) or gpu.tflops('bf16'):g} TFLOPS {p if gpu.tflops(p) else 'bf16'} peak (the precision the matmuls run at)")},
        **({"moe": _moe_term(w, cal, lay, tr, src)} if tr.moe else {}),
        **({"qlora_dequant_s": {"value": tr.dequant_s, "factor": {"per_micro_batch_s": tr.dequant_s / m, "micro_batches": m,
                                                                  "dequant_share_of_hbm": cal.qlora_dequant_share},
                                "source": src, "formula": f"{m:,} micro-batches x " + qlora_dequant_s(w, led, gpu, cal, lay)[1]
                                                          + " (in compute_s_per_step)"}}
           if tr.dequant_s else {}),
        "goodput": _goodput_term(w, cal, count, good, good_how, step_s),
    }


def training_time(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration | None = None,
                  explain: bool = True) -> Speed:
    """Expected tokens/s, MFU and hours of the layout `lay`: the step time of the calibrated model and
    the whole run's wall-clock (step time / goodput: interruptions, checkpoints, evaluation), with both
    fits' spread as the uncertainty; without a token budget, the hours per million training tokens.
    `explain` false: the figures without their texts (speed_explained, why), for a layout the planner
    may not keep."""
    cal = cal or default_calibration()
    cp = compute_precision(w, gpu, led.sized)
    m, gbs, batch_how, batch_basis = micro_batches(w, lay, max_tokens=cal.batch_tokens(w), explain=explain)
    v = _virtual_stages(w, lay, m)
    tr = training_rate(w, led, gpu, cal, rate, lay, microbatches=m, precision=cp, virtual_stages=v,
                       alltoall_overlapped=alltoall_overlapped(w))
    count = lay.count
    tokens_per_s = tr.tokens_per_s_per_gpu * count
    flops_token, per_param = train_flops_per_token(w, led)
    at_peak = (w.training_tokens * flops_token / (count * rate.value * TFLOP) / 3600 if w.training_tokens else None)
    p = "fp4" if cp in FP4_NAMES else cp
    # one optimizer step of a replica: its micro-batches' tokens at the step rate (the per-step overhead's
    # base); charged to language models only, the kind of run it was fitted on (an image model's steps
    # have data loading of another kind: a stated choice)
    step_s = m * w.micro_batch * w.context_tokens / (tr.tokens_per_s_per_gpu * lay.tp * lay.pp)
    good, good_how = cal.goodput(count, step_s=step_s if w.task == "llm" else None, stated=w.goodput, explain=explain)
    lora = w.method in ("lora", "qlora")
    explained = {} if not explain else _training_explained(w, led, gpu, cal, rate, lay, tr, p, (m, gbs, v, batch_how),
                                                           good, good_how, step_s)
    step_tps = tokens_per_s
    batch = {"global_batch": gbs, "micro_batch": w.micro_batch, "micro_batches": m, "pipeline_bubble": tr.bubble, "goodput": good,
             "virtual_stages": v if lay.pp > 1 else None}
    if not w.training_tokens:
        # the same plan on one million tokens: what the job costs per million, whatever its size
        return Speed(training_tokens_per_s=step_tps, mfu=tr.mfu, hours_per_million_tokens=1e6 / step_tps / 3600 / good,
                     speed_explained=explained, why={"global_batch": batch_basis} if explain else {}, **batch)
    step_hours = w.training_tokens / step_tps / 3600
    hours = step_hours / good
    sigma = max(cal.train_spread, cal.train_moe_spread) if led.sized.experts else cal.train_spread
    sigma = math.sqrt(sigma ** 2 + cal.goodput_spread ** 2)
    spread = math.exp(sigma) if sigma else 1.0
    why = {} if not explain else {"training_hours": (f"{step_hours:,.1f} h of steps / goodput {good:.2f} = {hours:,.1f} h: "
                              f"{w.training_tokens:.3g} tokens / ({count} GPUs x {tr.tokens_per_s_per_gpu:,.0f} tokens/s per GPU): "
                              f"{flops_token / 1e9:,.1f} GFLOP/token ({per_param} x {'frozen base + 6 x adapters' if lora else 'active'}"
                              f"{', x1.3 checkpointing (C06)' if w.activation_checkpointing else ''}) + attention at "
                              f"{rate.formula} x {tr.share:.2f} training share"
                              + (f", + {tr.dequant_s / m:,.2f} s per micro-batch dequantising the 4-bit base" if tr.dequant_s else "")
                              + f" (MFU {tr.mfu:.0%}); {good_how}; expected within "
                              f"{hours / spread:,.1f}-{hours * spread:,.1f} h (the fits' residual spread); "
                              f"at the peak matmul rate the steps would take {at_peak:,.1f} h (K08)"),
           "step_hours": f"{w.training_tokens:.3g} tokens / {step_tps:,.0f} tokens/s: the calibrated step rate, no stall, restart or checkpoint",
           "global_batch": batch_basis}
    return Speed(training_tokens_per_s=step_tps, mfu=tr.mfu, training_hours=hours, training_hours_range=[hours / spread, hours * spread],
                 step_hours=step_hours, hours_per_million_tokens=hours * 1e6 / w.training_tokens,
                 speed_explained=explained, why=why, **batch)
