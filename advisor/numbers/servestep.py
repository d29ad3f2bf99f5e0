"""One replica's serving step, timed: the decode step (weights and KV read, the GEMMs' and the attention's
own rooflines, the expert GEMMs, the TP group's collectives and the EP all-to-all, the per-layer and
per-sequence overheads, a pipeline's host loop), the prefill of one prompt and its interference with
the batch, and the TTFT and TPOT they make. numbers.speed reads the model's Shape and the workload's
settings and times a plan's replicas with `serving_times`; the fitted factors are the Calibration's."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from advisor.inputs.catalog import GPU
from advisor.inputs.parallel import Layout
from advisor.numbers import comm
from advisor.numbers.calibration import Calibration
from advisor.numbers.terms import TFLOP

ACT_BYTES = 2                      # activations travel between GPUs in 16 bits
FP4_NAMES = ("fp4", "nvfp4", "mxfp4")


@dataclass(frozen=True)
class Shape:
    """Per-token bytes and FLOPs of one model, split into the dense part and the routed experts."""

    dense_bytes: float          # weights every token reads (non-expert parts, active)
    expert_bytes: float         # all routed experts' weights (a batch touches a share of them)
    dense_flops: float          # 2 x active non-expert parameters
    expert_flops: float         # 2 x active expert parameters
    experts: int | None
    k: int | None
    layers: int | None
    hidden: float | None
    attn_dim: float | None      # query heads x head size
    expert_width: float = 0.0   # an expert's intermediate size (its matmuls' narrow dimension)
    moe_layers: int | None = None   # layers with routed experts (DeepSeek-V3: 58 of 61); None: all of them
    expert_precision: str | None = None   # the experts' stored format (gpt-oss: mxfp4)
    # a decode step's attention width per query token and cached token: query heads x head size, or
    # with MLA (absorbed into the latent, as FlashMLA and TensorRT-LLM decode it) query heads x the
    # cached latent: every head's scores and values run over all mla_kv_dim values (576 for DeepSeek-V3)
    decode_attn_dim: float | None = None
    # sliding-window attention (gpt-oss: 18 of 36 layers over the last 128 tokens; Gemma, Mistral 7B):
    # those layers' queries attend to at most `window` tokens, in prefill and decode alike
    window: int = 0
    window_layers: int = 0


def attended_pairs(sh: Shape, tokens: float) -> float:
    """(query, key) pairs causal attention computes over a `tokens`-token prefix, summed over the layers:
    tokens^2 / 2 per full layer, and per sliding-window layer each query sees at most `window` keys
    (window x tokens - window^2 / 2 past the window). Before 2026-12-07 every layer was counted full,
    so gpt-oss's 32k-token prefill carried twice its attention FLOPs."""
    L = sh.layers or 0
    wl = min(sh.window_layers, L) if sh.window else 0
    full = (L - wl) * tokens * tokens / 2
    if not wl:
        return full
    W = float(sh.window)
    return full + wl * (tokens * tokens / 2 if tokens <= W else W * tokens - W * W / 2)


def attended_keys(sh: Shape, ctx: float) -> float:
    """Keys one decode query attends to at context `ctx`, summed over the layers (windowed layers: at most the window)."""
    L = sh.layers or 0
    wl = min(sh.window_layers, L) if sh.window else 0
    return (L - wl) * ctx + wl * min(ctx, float(sh.window or 0))


def mixed_input(precision: str | None, gpu: GPU) -> bool:
    """Weights stored in `precision` run as mixed-input matmuls on `gpu` (dequantised to 16 bits in the
    kernel's main loop): it has no matmul units for that format (MXFP4 on Hopper or Ampere, FP8 on Ampere)."""
    if precision in FP4_NAMES:
        return not ("fp4" in gpu.native_precisions and gpu.tflops("fp4"))
    if precision == "fp8":
        return not ("fp8" in gpu.native_precisions and gpu.tflops("fp8"))
    return False


def experts_touched(n: int, k: int, tokens: float) -> float:
    """Expected distinct experts (of n, k per token) that `tokens` tokens route to, per layer (K01)."""
    if tokens <= 0:
        return 0.0
    return n * (1 - (1 - k / n) ** tokens)


def expert_gemm_s(weight_bytes: float, flops: float, read_cards: int, matmul_cards: int, bw: float, rate: float) -> tuple[float, float]:
    """(weight-read seconds, matmul seconds) of a step's grouped expert GEMMs, the weights read over
    `read_cards` (a TP group) and the matmuls shared by `matmul_cards` (its pipeline stages too): the two
    ADD, not the larger of them. A grouped GEMM gives each touched expert few row tiles (tokens per
    expert, not per batch), so each CTA streams its expert's weight tiles and multiplies them in turn
    with little overlap: AIConfigurator's measured TensorRT-LLM MoE latencies (H100 FP8, Qwen3-30B-A3B's
    shape, 128 experts, top-8) grow as a fixed weight-read time (0.24 ms, ~0.75 of HBM) plus a cost per
    token from 512 to 16,384 tokens, not as max(read, matmul) (AIC_MOE_TABLES). The rest of the layer
    (attention, KV reads, dense weights) is a separate kernel whose own roofline adds to it."""
    return weight_bytes / (read_cards * bw), flops / (matmul_cards * rate)


def decode_rest_s(gemm_mem: float, gemm_cmp: float, att_mem: float, att_cmp: float) -> float:
    """Seconds of a decode step's non-expert work: the dense GEMMs (weights read, matmuls) and the decode
    attention (KV read, its FLOPs) are separate kernels on one stream, each bound by the larger of its
    own reads and matmuls, and their times add. AIConfigurator composes a generation step the same way,
    a sum of per-operation latencies (qkv GEMM, generation attention, projection and FFN GEMMs), each
    from its own measured table (AIC_OP_SUM). At a small batch both are reads and the sum is the
    weights + KV read it was; at a large one the GEMMs are compute-bound and the KV read adds to them
    rather than hiding behind them."""
    return max(gemm_mem, gemm_cmp) + max(att_mem, att_cmp)


def _moe_eff(tokens_per_expert: float, half: float) -> float:
    """Grouped-GEMM efficiency of the experts: falls when each expert gets few tokens."""
    return tokens_per_expert / (tokens_per_expert + half) if half > 0 else 1.0


# --- serving ---------------------------------------------------------------------------------------

@dataclass
class Serving:
    """The pieces of one serving evaluation (times in seconds), kept for speed_explained and tests."""

    batch: int
    ttft: float
    prefill: float
    tpot: float
    step: float
    step_mem: float
    step_cmp: float
    step_comm: float
    interference: float
    tokens_per_s: float


def _touched_bytes(sh: Shape, tokens: float) -> tuple[float, float]:
    """Expert bytes a step of `tokens` tokens reads and the tokens each touched expert gets."""
    if not sh.expert_bytes or not sh.experts:
        return 0.0, tokens
    t = experts_touched(sh.experts, sh.k, tokens)
    return sh.expert_bytes * t / sh.experts, tokens * sh.k / t


def _layer_comm(sh: Shape, att_tokens: float, moe_tokens: float, dispatch_per_gpu: float, lay: Layout, moe: bool,
                link: float, alpha: float, dispatch_bytes: float = ACT_BYTES, split: tuple[int, float] | None = None) -> float:
    """Seconds of one step's collectives in `lay`'s TP group (its EP ranks only when `moe`: experts
    in the model): in every layer attention's all-reduce of its
    rank's `att_tokens` over its tp / attention_dp cards; then with EP, in each MoE layer a dispatch
    (`dispatch_bytes` per value: FP8 with scales under DeepEP) and a BF16 combine all-to-all of each
    card's `dispatch_per_gpu` tokens x top-k hidden vectors (comm.moe_layer_alltoall_s), and in the
    dense-MLP layers (DeepSeek-V3's first 3) the attention rank's all-reduce again: their MLP runs
    like attention, on each rank's own tokens (SGLang's --moe-dense-tp-size 1 with DP attention; held
    whole on each attention rank, as the ledger counts it); without EP an all-reduce of `moe_tokens`
    over the group in every layer. `split`: (NVLink domain, its link) of an EP group wider than the
    domain, whose all-to-all sends the in-domain share over NVLink and the rest over `link`, the network
    (DeepEP; as training's, trainspeed.moe_terms)."""
    L, h = sh.layers or 0, sh.hidden or 0.0
    tp, att, ep = lay.tp, lay.attention_tp, (lay.ep if moe else 1)
    t = L * comm.allreduce_s(att_tokens * h * ACT_BYTES, att, link, alpha)
    if ep > 1:
        moe_L = min(sh.moe_layers or L, L)
        t += moe_L * (comm.moe_layer_alltoall_split_s(dispatch_per_gpu, sh.k, h, ep, split[0], split[1], link, alpha, dispatch_bytes)
                      if split and ep > split[0] else comm.moe_layer_alltoall_s(dispatch_per_gpu, sh.k, h, ep, link, alpha, dispatch_bytes))
        t += (L - moe_L) * comm.allreduce_s(att_tokens * h * ACT_BYTES, att, link, alpha)
    else:
        t += L * comm.allreduce_s(moe_tokens * h * ACT_BYTES, tp, link, alpha)
    return t


def expert_imbalance(tokens: float, k: int | None, ep: int, skew: float = 0.0) -> float:
    """Busiest expert-parallel rank's load over the mean when `tokens` tokens each route to k experts
    spread over `ep` ranks: the mean plus the expected maximum deviation of ep binomial counts,
    sqrt(2 ln ep x variance) (balls into bins), plus the router's own skew towards hot experts
    (`skew` x (ep - 1) / ep: the fitted Calibration.ep_skew; EPLB rebalances most of it away). With
    ep = 1 every card holds a slice of every expert and there is none."""
    if ep <= 1 or not k or tokens <= 0:
        return 1.0
    return 1 + skew * (ep - 1) / ep + math.sqrt(2 * math.log(ep) * (ep - 1) / (tokens * k))


def group_link(gpu: GPU, cal: Calibration, tp: int) -> tuple[float, str]:
    """The link a TP group's collectives run over: the scale-up link inside the NVLink domain, the
    scale-out network per GPU beyond it."""
    if tp > comm.nvlink_domain(gpu):
        return cal.scale_out_gb_s * 1e9, f"{cal.scale_out_gb_s:g} GB/s per GPU over the network (the group spans {tp} GPUs, beyond the {comm.nvlink_domain(gpu)}-GPU NVLink domain)"
    return cal.link_bytes_s(gpu)


def host_staged(gpu: GPU, cal: Calibration, tp: int) -> bool:
    """The TP group's collectives are staged in host memory: cards without peer-to-peer inside a node."""
    return tp <= comm.nvlink_domain(gpu) and cal.host_staged(gpu)


def group_latency_s(gpu: GPU, cal: Calibration, tp: int) -> float:
    """Floor of one collective of a TP group (and of a pipeline stage's send): host-staged between
    cards without peer-to-peer inside a node (Calibration.collective_latency_us), the fitted one otherwise."""
    return (cal.collective_latency_us(gpu, tp) if host_staged(gpu, cal, tp) else cal.allreduce_us) * 1e-6


def pp_return_s(cal: Calibration, pp: int, micro_batch: float) -> float:
    """Seconds a decode cycle of a pp-stage pipeline waits for its sampled tokens to return: TensorRT-LLM
    (PyTorch backend; tensorrt_llm/_torch/pyexecutor/py_executor.py _executor_loop_pp) runs pp micro-batches
    without its overlap scheduler, and a micro-batch's new tokens travel from the last stage to the first
    and on through every stage but the last (send/recv chain pp - 1 -> 0 -> 1 -> ... -> pp - 2, one MPI
    object per hop, each received in the stage's host loop, which then updates, schedules and launches that
    micro-batch): pp - 1 host hops, each `pp_return_us` per sequence of the micro-batch (fitted on the
    pipeline-parallel records; no published per-request host time was found). 0 without a pipeline."""
    return (pp - 1) * cal.pp_return_us * 1e-6 * micro_batch if pp > 1 else 0.0


class _Rates(NamedTuple):
    """What one replica's cards and the model's kernels give every part of serving_times (the decode step
    and the prefill alike), read once at the fitted shares and the GPU's maturity."""

    bw: float                                  # bytes/s of a card's HBM
    R: float                                   # FLOP/s of a card's matmuls
    link: float                                # bytes/s of the tp group's link
    alpha: float                               # s, a collective's latency floor
    split: tuple[int, float] | None            # a DEP group wider than the NVLink domain: (domain, its bytes/s)
    over: float                                # s, launch and scheduling cost of the layers of a step
    mix: float                                 # share of a native kernel the mixed-input experts run at
    wide: float                                # the expert matmuls' efficiency at the expert width
    decode_mix: float                          # share of a BF16 grouped GEMM a decode step's mixed-input expert matmuls reach
    moe: bool                                  # experts over ep ranks: all-to-alls instead of the MoE all-reduce


def _rates(sh: Shape, gpu: GPU, cal: Calibration, rate_tflops: float, lay: Layout) -> _Rates:
    """The replica's rates, apart from serving_times because both its decode step and its prefill read
    them and neither depends on the batch or the prompt."""
    tp, ep = lay.tp, lay.ep
    mat = cal.maturity(gpu)
    bw = gpu.bandwidth_tb_s * 1e12 * cal.bw_share * mat
    R = rate_tflops * TFLOP * cal.compute_share * mat
    link, _ = group_link(gpu, cal, tp)
    alpha = group_latency_s(gpu, cal, tp)
    # a DEP group wider than the NVLink domain: its all-to-all's in-domain share stays on NVLink
    split = (comm.nvlink_domain(gpu), cal.link_bytes_s(gpu)[0]) if tp > comm.nvlink_domain(gpu) else None
    L = sh.layers or 0
    over = cal.layer_us * 1e-6 * (L or 64)          # launch and scheduling cost per layer of a step
    # grouped expert matmuls: each touched expert costs (its tokens + moe_half_tokens) tokens' worth of FLOPs
    wide = _moe_eff(sh.expert_width, cal.moe_half_width) if sh.expert_width else 1.0
    # mixed-input experts (a stored format the card has no matmul units for: MXFP4 on Hopper and Ampere)
    # stream their packed weights at `mix` of a native kernel's read rate, then upcast each weight tile to
    # BF16 in registers inside the main loop and multiply on the BF16 tensor cores (TensorRT-LLM's Hopper
    # W4A16 MXFP4 MoE, Triton or CUTLASS; vLLM's Marlin and triton_kernels matmul_ogs; SGLang's
    # triton_kernels; TRTLLM_GPTOSS_README). The upcast is paid once per weight tile and row tile: a
    # decode step's few tokens per expert run in the narrowest row tiles, where it costs a fixed share of
    # the MMA work (`mixed_input_matmul_share`); a prefill's hundreds of tokens per expert run in the
    # widest ones, over which it is spread, and keep the BF16 rate
    mixed = bool(sh.expert_bytes) and mixed_input(sh.expert_precision, gpu)
    mix = cal.mixed_input_share if mixed else 1.0
    decode_mix = cal.mixed_input_matmul_share if mixed else 1.0
    return _Rates(bw, R, link, alpha, split, over, mix, wide, decode_mix, ep > 1 and bool(sh.expert_bytes))


def _prefill_s(sh: Shape, cal: Calibration, lay: Layout, r: _Rates, prompt: int, cached: float, batch: int,
               dispatch_bytes: float) -> tuple[float, float]:
    """(the prefill of one prompt alone, its share of a running batch's time) in seconds: the TTFT's main
    term and the interference a batch's prompts put on its decode steps; apart from serving_times because
    it reads none of the decode step."""
    tp, pp, ep, adp = lay.tp, lay.pp, lay.ep, lay.attention_dp
    bw, R, link, alpha, split, over, mix, wide, decode_mix, moe = r
    L = sh.layers or 0
    d = sh.attn_dim or 0.0
    att = lay.attention_tp                         # cards of one attention rank
    # prefill of one prompt alone (compute-bound; the whole model's weights read once), on one
    # attention rank: its attention and dense layers on tp / attention_dp cards, its experts on all tp
    # with a prefix cache only the uncached tokens are computed, attending to the whole prompt
    new, past = prefill_tokens(prompt, cached)
    exp_pf, tpe_pf = _touched_bytes(sh, new)
    imb_pf = expert_imbalance(new, sh.k, ep, cal.ep_skew) if moe else 1.0
    f_dense = new * sh.dense_flops + 4 * (attended_pairs(sh, prompt) - attended_pairs(sh, past)) * d
    f_exp = new * sh.expert_flops / (_moe_eff(tpe_pf, cal.moe_half_tokens) * wide)
    f_pf = f_dense + f_exp
    pf_comm = _layer_comm(sh, new, new, new / att, lay, moe, link, alpha, dispatch_bytes, split) + (pp - 1) * alpha
    # the rest of the model at its roofline, then the expert GEMMs' weight reads and matmuls one after the other
    prefill = (max(f_dense / (att * R), sh.dense_bytes / att / bw) + sum(expert_gemm_s(exp_pf / mix, f_exp * imb_pf, tp, tp, bw, R))
               + pf_comm + over)
    # inside a running batch the prompt's compute is shared out over the pipeline, and with attention
    # DP its collectives run beside the other ranks' prompts (each card sends its own tokens); the engine
    # prefills prompts together in chunks of up to prefill_chunk_tokens, so a collective's latency floor
    # is paid once per chunk, not once per prompt (its bytes still grow with every prompt's tokens)
    if tp > 1 and batch > 1:
        pf_floor = _layer_comm(sh, 0.0, 0.0, 0.0, lay, moe, link, alpha, dispatch_bytes, split)
        sharing = min(max(cal.prefill_chunk_tokens / new, 1.0), batch)
        pf_comm_b = pf_comm - pf_floor + pf_floor / sharing
    else:
        pf_comm_b = pf_comm
    pf_batched = f_pf / (tp * pp * R) + pf_comm_b / (pp * adp)

    return prefill, pf_batched


def serving_times(sh: Shape, kv_seq, gpu: GPU, cal: Calibration, rate_tflops: float, lay: Layout,
                  batch: int, prompt: int, output: int, kv_rep: float = 1.0,
                  cached: float = 0.0, spec: tuple[int, float] | None = None, dispatch_bytes: float = ACT_BYTES) -> Serving:
    """TTFT, TPOT and output tokens/s of one replica of `lay` (tp x pp GPUs; its dp is not read) serving
    `batch` sequences; with its attention ranks of tp / attention_dp cards (each its own sequences and KV)
    and the experts over its ep ranks (dispatch and combine all-to-all instead of the MoE all-reduce). `cached`:
    the share of each prompt already in the prefix cache, whose prefill is skipped (prefill_tokens);
    `spec`: speculative decoding's (drafted tokens per step, mean accepted length per step)."""
    tp, pp, ep, adp = lay.tp, lay.pp, lay.ep, lay.attention_dp
    r = _rates(sh, gpu, cal, rate_tflops, lay)
    bw, R, link, alpha, split, over, mix, wide, decode_mix, moe = r
    L = sh.layers or 0
    d = sh.attn_dim or 0.0
    ctx = prompt + output / 2                      # average context of a sequence being decoded

    # decode step: pp micro-batches of batch/pp sequences pass the stages in turn
    mb = max(batch / pp, 1.0)
    # the busiest attention rank sets the pace: sequences are dealt out whole
    b_att = math.ceil(batch / adp) * adp
    kv_read = b_att * kv_seq(ctx) * kv_rep / pp if kv_seq else 0.0
    attn_f = 4 * attended_keys(sh, ctx) * (sh.decode_attn_dim or d)

    def decode_step(q: int):
        """(step, memory, compute, collectives) of a step that runs q tokens of every sequence (1, or
        1 + the drafted tokens a speculative step verifies: the KV is read once for all q)."""
        exp_bytes, tpe = _touched_bytes(sh, mb * q)
        # every attention rank reads the non-expert weights whole over its own cards
        gemm_mem, gemm_cmp = sh.dense_bytes * adp / (tp * bw), b_att * sh.dense_flops * q / (tp * pp * R)
        att_mem, att_cmp = kv_read / (tp * bw), b_att * attn_f * q / (tp * pp * R)
        rest_mem, rest_cmp = gemm_mem + att_mem, gemm_cmp + att_cmp
        imb = expert_imbalance(mb * q, sh.k, ep, cal.ep_skew) if moe else 1.0
        exp_flops = batch * q * sh.expert_flops / (_moe_eff(tpe, cal.moe_half_tokens) * wide * decode_mix) * imb
        exp_mem, exp_cmp = expert_gemm_s(exp_bytes / mix, exp_flops,
                                         tp, tp * pp, bw, R)
        t_comm = _layer_comm(sh, mb * q / adp, mb * q, mb * q / tp, lay, moe, link, alpha, dispatch_bytes, split) + (pp - 1) * alpha
        # + sampling and bookkeeping per sequence: each attention-DP rank schedules its own sequences at once
        # pipeline stages: only the last one samples (TensorRT-LLM's _executor_loop_pp runs _sample_async on
        # the last PP rank alone), so it pays the per-sequence cost of every micro-batch of the cycle; and a
        # micro-batch's next step waits for its tokens to come back through the host loops of the pp - 1
        # other stages (pp_return_s)
        # the dense GEMMs and the decode attention are separate kernels run one after the other, each
        # at its own roofline: the GEMMs' matmuls cannot hide the attention's KV reads (AIC_OP_SUM)
        step = (decode_rest_s(gemm_mem, gemm_cmp, att_mem, att_cmp) + exp_mem + exp_cmp + t_comm + over + cal.seq_us * 1e-6 * batch / adp
                + pp_return_s(cal, pp, mb))
        return step, rest_mem + exp_mem, rest_cmp + exp_cmp, t_comm

    step, t_mem, t_cmp, t_comm = decode_step(1)
    accepted = 1.0
    if spec:
        # speculative decoding (MTP): each drafted token is one pass of the MTP module, a transformer block
        # (1/layers of a one-token step); the step then verifies 1 + drafted tokens per sequence and emits
        # the accepted length on average (catalog/engines.yaml speculative)
        drafted, accepted = spec
        step = decode_step(1 + drafted)[0] + drafted * step / (L or 64)

    prefill, pf_batched = _prefill_s(sh, cal, lay, r, prompt, cached, batch, dispatch_bytes)

    interference = batch * pf_batched / output     # others' prefills, spread over a sequence's steps
    tpot = step / accepted + interference
    rho = min(0.95, batch * pf_batched / (output * tpot))
    ttft = cal.request_ms * 1e-3 + prefill + (step / 2 if batch > 1 else 0.0) + (rho / (2 * (1 - rho)) * pf_batched if batch > 1 else 0.0)
    return Serving(batch, ttft, prefill, tpot, step, t_mem, t_cmp, t_comm, interference, batch / tpot)


def prefill_tokens(prompt: int, cached: float) -> tuple[float, float]:
    """(tokens a prefill computes, tokens it finds in the prefix cache) of a `prompt`-token prompt of
    which the share `cached` is cached: prompt x (1 - cached) computed, at least the last token (its
    logits give the first output token). The cached tokens' KV stays in memory (the ledger keeps
    the whole prompt per sequence) and is read by the attention of the new ones: causal attention
    of tokens past..prompt costs 2 x layers x (prompt^2 - past^2) x heads x dim FLOPs."""
    new = max(prompt * (1 - cached), 1.0) if cached else float(prompt)
    return new, prompt - new
