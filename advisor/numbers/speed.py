"""How fast: the matmul rate a GPU reaches, time to first token, time per output token and
throughput for serving, tokens per second and hours for training.

Two kinds of figures: the seed's ideal ones (spec peaks, one user; `ideal_figures`, K06/K19) and the
expected ones, from a small model whose efficiency factors were fitted on published measurements
(catalog/efficiency.yaml, fitted by bench/fit.py on catalog/measurements.yaml; its error is printed
by bench/accuracy.py and kept in docs/accuracy.md). The functions evaluate the layout they are given
(tp, pp, dp, count) and return a frozen Speed; they never choose a layout and never price one
(numbers.cost does). The calibration is built once per catalog and the per-GPU figures once per GPU
(no file is read on the way), so a planner may call them for every layout it tries.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from advisor.inputs.catalog import GPU, Catalog
from advisor.numbers import comm
from advisor.numbers.calibration import Calibration, calibration, default_calibration  # noqa: F401  (speed.calibration)
from advisor.numbers.layouts import Layout, kv_replication
from advisor.numbers.ledger import Ledger, Sized, training_precision
from advisor.numbers.terms import GB, TFLOP, Term, _gb
from advisor.inputs.workload import Workload

CHECKPOINTING_COMPUTE = 1.30       # C06: activation checkpointing costs ~30% more compute
ACT_BYTES = 2                      # activations travel between GPUs in 16 bits
FP4_NAMES = ("fp4", "nvfp4", "mxfp4")


def compute_precision(w: Workload, gpu: GPU, sized: Sized) -> str:
    """The precision matmuls run in: native low precision where the GPU has it, else bf16 (K10)."""
    want = training_precision(w) if w.training else sized.parts[0].precision
    native = gpu.native_precisions
    if want == "mxfp4" and not w.training and "fp4" in native:
        # MXFP4 checkpoints (gpt-oss) are served as W4A8: MXFP8 activations against the MXFP4 weights
        # (TensorRT-LLM's default W4A8_MXFP4_MXFP8 on Blackwell, TRTLLM_GPTOSS_BLOG): the mixed FP8 x FP4
        # MMA runs at the FP8 rate, not the FP4 one
        want = "fp8"
    if want == "fp8" and "fp8" in native and gpu.tflops("fp8"):
        return "fp8"
    if want in FP4_NAMES and "fp4" in native and gpu.tflops("fp4"):
        return "fp4"
    return "bf16"


def achievable_tflops(catalog: Catalog, gpu: GPU, precision: str) -> Term:
    eff = catalog.efficiency.get("matmul", {})
    measured = (eff.get("measured_tflops", {}).get(gpu.id) or {}).get(precision)
    if measured:
        return Term(float(measured["v"]), f"measured MAMF {measured['v']:g} TFLOPS {precision}", tuple(measured.get("src", ())))
    spec = gpu.tflops(precision)
    for other, m in (eff.get("measured_tflops", {}).get(gpu.id) or {}).items():
        if gpu.tflops(other):    # the GPU's own measured share in another precision beats the median of others
            sh = float(m["v"]) / gpu.tflops(other)
            return Term(spec * sh, f"{spec:g} TFLOPS spec x {sh:.3f} (this GPU's measured {other} MAMF share)",
                        tuple(gpu.fig(f"{precision}_tflops").sources) + tuple(m.get("src", ())))
    share = eff["default_share"][precision]
    return Term(spec * share["v"], f"{spec:g} TFLOPS spec x {share['v']:g} typical achievable share",
                tuple(gpu.fig(f"{precision}_tflops").sources) + tuple(share.get("src", ())))


def ideal_figures(s: Sized, gpu: GPU, cp: str) -> tuple[dict, str]:
    """K19's two divisions and K06's single-user ceiling, at spec peaks (ideal), and how they were had."""
    spec_rate = gpu.tflops(cp) * TFLOP
    bw = gpu.bandwidth_tb_s * 1e12
    ideal = {
        "weights_over_vram": s.weights_bytes / (gpu.memory_gb * GB),
        "decode_ms_per_token": s.active_bytes / bw * 1e3,
        "compute_ms_per_token": 2 * s.active / spec_rate * 1e3,
        "tokens_per_s_single_user": bw / s.active_bytes,
        "prefill_ms_1k_tokens": 1000 * 2 * s.active / spec_rate * 1e3,
    }
    ideal["load_to_compute_ratio"] = ideal["decode_ms_per_token"] / ideal["compute_ms_per_token"]
    return ideal, (f"active weights {_gb(s.active_bytes)} / {gpu.bandwidth_tb_s:g} TB/s; "
                   f"2 x {s.active / 1e9:,.2f}B active / {gpu.tflops(cp):g} TFLOPS {cp} (K06, K19, K04)")


@dataclass(frozen=True)
class Speed:
    """How fast one plan runs: serving (TTFT, TPOT, throughput at the sequences it serves) or training
    (tokens/s, MFU, hours), each term explained (`explained`, `why`). Unset figures do not apply."""

    concurrency: int | None = None             # sequences served at once (resolved when `max`)
    prefill_ms: float | None = None
    ttft_ms: float | None = None
    # at the workload's arrival rate (requests_per_s): the requests per second the plan's replicas hold
    # (queueing.serving_at_rate); kept out of the record's flat figures (speed_explained has it)
    capacity_requests_per_s: float | None = field(default=None, metadata={"record": False})
    tpot_ms: float | None = None
    decode_ms_per_token: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_per_user: float | None = None
    tokens_per_s_per_gpu: float | None = None
    training_tokens_per_s: float | None = None
    mfu: float | None = None
    training_hours: float | None = None        # expected wall-clock of the whole run: step_hours / goodput
    training_hours_range: list | None = None   # the fits' residual spread around training_hours
    step_hours: float | None = None            # the same tokens at the calibrated step rate, no stall or restart
    goodput: float | None = None               # share of the wall-clock that advances training (calibration.goodput)
    global_batch: int | None = None            # sequences per optimizer step (the workload's, or the planner's choice)
    micro_batch: int | None = None             # sequences per GPU per micro-batch
    micro_batches: int | None = None           # per replica per step: global_batch / (micro_batch x DP)
    pipeline_bubble: float | None = None       # share of a step the pipeline idles: (PP - 1) / (m x v + PP - 1)
    virtual_stages: int | None = None          # v: model chunks per card of the interleaved schedule that ran
    hours_per_million_tokens: float | None = None  # hours per million tokens (trained or generated)
    speed_explained: dict = field(default_factory=dict)
    why: dict = field(default_factory=dict)


# --- the model's shape, as the speed model needs it -------------------------------------------------

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


_LAST_SHAPE: list = [None, None]     # (ledger, its Shape): the planner times every layout of one ledger


def _shape_of(w: Workload, led: Ledger) -> Shape:
    """`shape`, computed once per ledger (a ledger is the sized model of one workload)."""
    if _LAST_SHAPE[0] is not led:
        _LAST_SHAPE[:] = [led, shape(w, led)]
    return _LAST_SHAPE[1]


def shape(w: Workload, led: Ledger) -> Shape:
    s = led.sized
    m = w.model
    raw = sum(pt.params * pt.bpp for pt in s.parts)
    scale = s.weights_bytes / raw if raw else 1.0      # a shipped checkpoint's own size (Kimi K3)
    dense_b = exp_b = dense_f = exp_f = 0.0
    exp_prec = None
    for pt in s.parts:
        if pt.name == "experts" and s.experts and s.experts_per_token:
            exp_b += pt.params * pt.bpp * scale
            exp_f += 2 * pt.active_params
            exp_prec = pt.precision
        else:
            dense_b += pt.active_params * pt.bpp * scale
            dense_f += 2 * pt.active_params
    heads, hd, hidden = m.num("attention_heads"), m.num("head_dim"), m.num("hidden_size")
    attn = heads * hd if heads and hd else hidden
    layers = m.num("layers")
    moe_layers = m.num("moe_layers") or layers       # the config's first_k_dense_replace layers have no experts
    width = (exp_f / 2 / s.experts_per_token / moe_layers / 3 / hidden
             if exp_f and s.experts_per_token and moe_layers and hidden else 0.0)
    # MLA decode: QK over the 576-value latent and PV over its 512 (kv_lora_rank), counted here at 576
    # both (the rope part is not in the catalog: +6% on the attention FLOPs): 10.3 x heads x head_dim
    # for DeepSeek-V3's 128 heads of 56
    mla = m.num("mla_kv_dim")
    dec = heads * mla if mla and heads else attn
    return Shape(dense_b, exp_b, dense_f, exp_f, s.experts, s.experts_per_token,
                 int(layers) if layers else None, hidden, attn, width, int(moe_layers) if moe_layers else None, exp_prec, dec)


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


def serving_times(sh: Shape, kv_seq, gpu: GPU, cal: Calibration, rate_tflops: float, lay: Layout,
                  batch: int, prompt: int, output: int, kv_rep: float = 1.0,
                  cached: float = 0.0, spec: tuple[int, float] | None = None, dispatch_bytes: float = ACT_BYTES) -> Serving:
    """TTFT, TPOT and output tokens/s of one replica of `lay` (tp x pp GPUs; its dp is not read) serving
    `batch` sequences; with its attention ranks of tp / attention_dp cards (each its own sequences and KV)
    and the experts over its ep ranks (dispatch and combine all-to-all instead of the MoE all-reduce). `cached`:
    the share of each prompt already in the prefix cache, whose prefill is skipped (prefill_tokens);
    `spec`: speculative decoding's (drafted tokens per step, mean accepted length per step)."""
    tp, pp, ep, adp = lay.tp, lay.pp, lay.ep, lay.attention_dp
    mat = cal.maturity(gpu)
    bw = gpu.bandwidth_tb_s * 1e12 * cal.bw_share * mat
    R = rate_tflops * TFLOP * cal.compute_share * mat
    link, _ = group_link(gpu, cal, tp)
    alpha = group_latency_s(gpu, cal, tp)
    # a DEP group wider than the NVLink domain: its all-to-all's in-domain share stays on NVLink
    split = (comm.nvlink_domain(gpu), cal.link_bytes_s(gpu)[0]) if tp > comm.nvlink_domain(gpu) else None
    L = sh.layers or 0
    over = cal.layer_us * 1e-6 * (L or 64)          # launch and scheduling cost per layer of a step
    d = sh.attn_dim or 0.0
    ctx = prompt + output / 2                      # average context of a sequence being decoded
    att = lay.attention_tp                         # cards of one attention rank
    moe = ep > 1 and bool(sh.expert_bytes)

    # decode step: pp micro-batches of batch/pp sequences pass the stages in turn
    mb = max(batch / pp, 1.0)
    # the busiest attention rank sets the pace: sequences are dealt out whole
    b_att = math.ceil(batch / adp) * adp
    kv_read = b_att * kv_seq(ctx) * kv_rep / pp if kv_seq else 0.0
    attn_f = 4 * L * ctx * (sh.decode_attn_dim or d)
    # grouped expert matmuls: each touched expert costs (its tokens + moe_half_tokens) tokens' worth of FLOPs
    wide = _moe_eff(sh.expert_width, cal.moe_half_width) if sh.expert_width else 1.0
    # mixed-input experts (dequantised in the kernel) read their weights and multiply at a share of a native kernel
    mix = cal.mixed_input_share if sh.expert_bytes and mixed_input(sh.expert_precision, gpu) else 1.0
    wide *= mix

    def decode_step(q: int):
        """(step, memory, compute, collectives) of a step that runs q tokens of every sequence (1, or
        1 + the drafted tokens a speculative step verifies: the KV is read once for all q)."""
        exp_bytes, tpe = _touched_bytes(sh, mb * q)
        # every attention rank reads the non-expert weights whole over its own cards
        gemm_mem, gemm_cmp = sh.dense_bytes * adp / (tp * bw), b_att * sh.dense_flops * q / (tp * pp * R)
        att_mem, att_cmp = kv_read / (tp * bw), b_att * attn_f * q / (tp * pp * R)
        rest_mem, rest_cmp = gemm_mem + att_mem, gemm_cmp + att_cmp
        imb = expert_imbalance(mb * q, sh.k, ep, cal.ep_skew) if moe else 1.0
        exp_mem, exp_cmp = expert_gemm_s(exp_bytes / mix, batch * q * sh.expert_flops / (_moe_eff(tpe, cal.moe_half_tokens) * wide) * imb,
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

    # prefill of one prompt alone (compute-bound; the whole model's weights read once), on one
    # attention rank: its attention and dense layers on tp / attention_dp cards, its experts on all tp
    # with a prefix cache only the uncached tokens are computed, attending to the whole prompt
    new, past = prefill_tokens(prompt, cached)
    exp_pf, tpe_pf = _touched_bytes(sh, new)
    imb_pf = expert_imbalance(new, sh.k, ep, cal.ep_skew) if moe else 1.0
    f_dense = new * sh.dense_flops + 2 * L * (prompt ** 2 - past ** 2) * d
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


def max_batch(w: Workload, led: Ledger, gpu: GPU, cal: Calibration, lay: Layout, prompt: int, output: int,
              kv_rep: float) -> tuple[int, str]:
    """Largest batch of one replica of `lay` whose KV cache fits (each sequence holds prompt + output
    tokens), capped by the engine's batch limit; with attention DP the non-expert weights are held once
    per attention rank."""
    tp, pp, attention_dp = lay.tp, lay.pp, lay.attention_dp
    fixed = led.bytes("weights_gb") * led.weight_copies(attention_dp) + led.bytes("activations_gb") * attention_dp
    share = cal.kv_share(tp)
    budget = ((tp * pp * gpu.memory_gb * GB - fixed) * share if cal.kv_share_of_free
              else tp * pp * gpu.memory_gb * GB * share - fixed)
    per_seq = led.kv.bytes_per_sequence(prompt + output) * kv_rep if led.kv else 0.0
    if led.kv and not cal.kv_window_memory:      # windowed layers held at full length too
        per_seq = (led.kv.full_bytes_per_token + led.kv.window_bytes_per_token) * (prompt + output) * kv_rep
    # an engine that caps each pipeline micro-batch holds pp of them (TensorRT-LLM: TRTLLM_PP_LOOP)
    cap = cal.engine_max_batch * (pp if cal.batch_cap_per_micro_batch else 1)
    limit = (f"engine batch limit {cal.engine_max_batch} per micro-batch x PP {pp}" if cap != cal.engine_max_batch
             else f"engine batch limit {cap}")
    if per_seq <= 0 or led.kv_fallback:
        return cap, f"{limit} (KV size unknown)"
    fit = max(1, int(budget // per_seq)) if budget > 0 else 1
    if fit >= cap:
        return cap, f"{limit} (KV room for {fit:,})"
    room = (f"({tp * pp} x {gpu.memory_gb:g} GB - weights - activations) x {share:g}" if cal.kv_share_of_free
            else f"({tp * pp} x {gpu.memory_gb:g} GB x {share:g} - weights - activations)")
    return fit, f"{room} / {per_seq / 1e6:,.1f} MB KV per {prompt + output:,}-token sequence"


def replica_times(w: Workload, led: Ledger, gpu: GPU, cal: Calibration, rate: Term, lay: Layout, rep: float):
    """(batch -> Serving of one replica of `lay`, dispatch bytes per value) with the workload's own settings:
    the KV read once per KV head (or once per query head on an engine without grouped reads), the
    MoE dispatch precision, the prefix cache, speculative decoding. The one place the plan's
    serving, its disaggregated pools and its queue at an arrival rate are timed from."""
    sh = _shape_of(w, led)
    read_rep = rep
    if not cal.grouped_kv_reads and led.kv and w.model.num("attention_heads"):
        read_rep = max(rep, w.model.num("attention_heads") / led.kv.kv_heads)   # every query head reads its KV head
    kv_seq = led.kv.bytes_per_sequence if led.kv else None
    dispatch = comm.dispatch_bytes(compute_precision(w, gpu, led.sized))
    spec = (w.speculative[1], w.speculative[2]) if w.speculative else None

    def at(b: int) -> Serving:
        return serving_times(sh, kv_seq, gpu, cal, rate.value, lay, b, w.prompt_tokens, w.output_tokens, read_rep,
                             dispatch_bytes=dispatch, cached=w.prefix_cache_hit, spec=spec)
    return at, dispatch


def _serve(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration):
    """(Serving pieces, sequences per replica, sequences in all, dispatch bytes per value, why) of `lay`
    at the workload's concurrency (or the largest batch that fits, for `concurrency: max`)."""
    dp = lay.dp
    # the KV heads are split over one attention rank's cards (MLA's single latent head is copied
    # onto each of them); attention DP ranks each keep their own sequences' cache
    rep = kv_replication(led, lay)
    why = {}
    if w.concurrency_max:
        b, how = max_batch(w, led, gpu, cal, lay, w.prompt_tokens, w.output_tokens, rep)
        total = b * dp
        why["concurrency"] = f"concurrency: max = {b:,} sequences per replica x DP {dp}: {how}"
    else:
        total = w.concurrency
        b = math.ceil(total / dp)
    at, dispatch = replica_times(w, led, gpu, cal, rate, lay, rep)
    return at(b), b, total, dispatch, why


def decode_tokens_per_s(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration | None = None) -> float:
    """Output tokens/s of `lay` as a decode-only pool (prefill disaggregated to other GPUs: no prompt
    shares its steps), all replicas: sequences / decode step."""
    sv, b, total, _, _ = _serve(w, led, gpu, lay, rate, cal or default_calibration())
    return total / sv.step


def inference_speed(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration | None = None,
                    explain: bool = True) -> Speed:
    """TTFT, TPOT and throughput of the colocated layout `lay` (tp, pp, dp, count; a disaggregated one
    is numbers.poolspeed's) at the workload's concurrency (or the largest batch that fits, for `concurrency: max`), each term's factor and
    source in speed_explained (`explain` false: the figures only, for a layout the planner may not keep)."""
    cal = cal or default_calibration()
    sh = _shape_of(w, led)
    tp, pp = lay.tp, lay.pp
    ep, adp = lay.ep, lay.attention_dp
    sv, b, total, dispatch, why = _serve(w, led, gpu, lay, rate, cal)
    tpot_ms = sv.tpot * 1e3
    tokens_per_s = total / sv.tpot
    figures = dict(concurrency=total, prefill_ms=sv.prefill * 1e3, ttft_ms=sv.ttft * 1e3, tpot_ms=tpot_ms, decode_ms_per_token=tpot_ms,
                   tokens_per_s=tokens_per_s, tokens_per_s_per_user=1e3 / tpot_ms, tokens_per_s_per_gpu=tokens_per_s / lay.count,
                   hours_per_million_tokens=1e6 / (tokens_per_s * 3600) if tokens_per_s else None)
    if not explain:
        return Speed(**figures)
    new, past = prefill_tokens(w.prompt_tokens, w.prefix_cache_hit)
    cache_words = (f" ({past:,.0f} of the {w.prompt_tokens:,} prompt tokens read from the prefix cache, prefix_cache_hit "
                   f"{w.prefix_cache_hit:g}: {new:,.0f} computed, attending to all {w.prompt_tokens:,})" if past else "")
    link, link_how = group_link(gpu, cal, tp)
    src = "catalog/efficiency.yaml (fitted by bench/fit.py)"
    # cards without peer-to-peer: the floor is the measured host-staged one, not the fitted one
    staged = host_staged(gpu, cal, tp)
    floor_us = group_latency_s(gpu, cal, tp) * 1e6
    floor = ({"host_staged_latency_us": round(floor_us, 4), "host_base_us": cal.host_base_us, "host_exchange_us": cal.host_exchange_us}
             if staged else {"allreduce_latency_us": cal.allreduce_us})
    moe = ep > 1 and bool(sh.expert_bytes)
    groups = (f" (attention: {adp} data-parallel ranks of TP {tp // adp}, each its own sequences and KV cache)" if adp > 1 else "") + \
             (f" (experts over EP {ep}: in {sh.moe_layers or sh.layers} MoE layers of {sh.layers}, a dispatch ({dispatch:g} B per value: "
              f"{'FP8 with a float32 scale per 128, DeepEP' if dispatch < 2 else 'BF16'}) and a combine (2 B, BF16) all-to-all of each card's "
              f"tokens x top-{sh.k} x {sh.hidden or 0:.0f} hidden, "
              f"x (EP - 1) / EP off the card, each with the {floor_us:g} us floor; the busiest EP rank's expert load "
              f"x {expert_imbalance(max(b / pp, 1.0), sh.k, ep, cal.ep_skew):.3f}: balls-into-bins and the fitted routing skew {cal.ep_skew:g})" if moe else "")
    explained = {
        "weights_and_kv_read_ms": {"value": sv.step_mem * 1e3, "factor": {"hbm_share": cal.bw_share}, "source": src,
                                   "formula": f"(dense weights {_gb(sh.dense_bytes)} + experts touched by {b} sequences + KV of {b} sequences) / "
                                              f"(TP {tp} x {gpu.bandwidth_tb_s:g} TB/s x {cal.bw_share:g}) (K06, K01)"},
        "step_compute_ms": {"value": sv.step_cmp * 1e3, "factor": {"compute_share": cal.compute_share}, "source": src,
                            "formula": f"{b} x (2 x active + attention 4 x layers x context x heads x dim) FLOPs / "
                                       f"(TP {tp} x PP {pp} x {rate.formula} x {cal.compute_share:g}) (K04)"},
        "tp_allreduce_ms": {"value": sv.step_comm * 1e3, "factor": {**floor, "link": link_how},
                            "source": "catalog/efficiency.yaml host_staged (NCCL_TUNING, TINYGRAD_P2P_ISSUE17; link: NCCL_ENV_SHM)" if staged else src,
                            "formula": f"{'1 all-reduce + 2 all-to-alls' if moe else '2 all-reduces'} per layer x ({floor_us:g} us + ring bytes / {link / 1e9:,.0f} GB/s) (K14)"
                                       + (f"; no peer-to-peer: staged in host memory, {cal.host_base_us:g} us + 2 x ({tp} - 1) hops x "
                                          f"{cal.host_exchange_us - cal.host_base_us:g} us, each byte over PCIe twice" if staged else "") + groups},
        "step_overhead_ms": {"value": (cal.layer_us * (sh.layers or 64) + cal.seq_us * b / adp) / 1e3,
                             "factor": {"layer_overhead_us": cal.layer_us, "sequence_overhead_us": cal.seq_us}, "source": src,
                             "formula": f"{cal.layer_us:g} us launch and scheduling cost x {sh.layers or 64} layers + "
                                        f"{cal.seq_us:g} us sampling and bookkeeping x {b / adp:g} sequences per decode step"
                                        + (f" (each of the {adp} attention ranks its own)" if adp > 1 else "")
                                        + (f" (the last of the {pp} pipeline stages samples every micro-batch)" if pp > 1 else "")},
        **({"pipeline_return_ms": {"value": pp_return_s(cal, pp, max(b / pp, 1.0)) * 1e3, "factor": {"pp_return_us": cal.pp_return_us},
                                    "source": f"{src}; TRTLLM_PP_LOOP",
                                    "formula": f"(PP {pp} - 1) stages' host loops x {cal.pp_return_us:g} us x {max(b / pp, 1.0):g} sequences "
                                               f"per micro-batch: each micro-batch's sampled tokens go back from the last stage through the "
                                               f"other stages' hosts before its next step"}} if pp > 1 else {}),
        "prefill_interference_ms": {"value": sv.interference * 1e3, "factor": {}, "source": "formula",
                                    "formula": f"{b} prompts' prefill compute spread over {w.output_tokens:,} output tokens (continuous batching)"},
        "ttft_ms": {"value": sv.ttft * 1e3, "factor": {"compute_share": cal.compute_share,
                                                       "request_overhead_ms": cal.request_ms}, "source": src,
                    "formula": f"{cal.request_ms:g} ms request handling + prefill {sv.prefill * 1e3:,.1f} ms ({new:,.0f} tokens x "
                               f"FLOPs incl. attention / (TP {tp} x rate)){cache_words} + half a decode step + queueing behind other prompts (M/D/1)"},
    }
    if w.speculative:
        _, n, acc, refs = w.speculative
        plain = _serve(replace(w, speculative=None), led, gpu, lay, rate, cal)[0]     # the same plan without MTP
        explained["speculative"] = {
            "value": plain.tpot / sv.tpot, "factor": {"drafted_tokens": n, "accepted_length": acc}, "source": ", ".join(refs),
            "formula": (f"MTP, {n} drafted token(s) a step: (step verifying {1 + n} tokens per sequence + {n} MTP pass(es) of "
                        f"1/{sh.layers or 64} of a one-token step) / {acc:g} tokens accepted per step (catalog/engines.yaml): "
                        f"{plain.tpot * 1e3:,.2f} -> {sv.tpot * 1e3:,.2f} ms per output token at {b} sequences, "
                        f"x{plain.tpot / sv.tpot:.2f} tokens/s; checked at one sequence (DeepSeek-R1 on 8 x B200, MTP 3: "
                        f"x2.23 against x2.28 in TensorRT-LLM's B200 latency blog), it overstates the gain beyond about 16 "
                        f"sequences (x1.25 measured at 64 on 8 x MI300X in the LMSYS/AMD SGLang MTP blog)")}
        why["speculative"] = explained["speculative"]["formula"]
    s = led.sized
    if s.experts and s.experts_per_token:
        explained["moe"] = {"value": experts_touched(s.experts, s.experts_per_token, max(b / pp, 1)),
                            "factor": {"moe_half_tokens": cal.moe_half_tokens, "moe_half_width": cal.moe_half_width}, "source": src,
                            "formula": f"experts touched per layer = {s.experts} x (1 - (1 - {s.experts_per_token}/{s.experts})^tokens); "
                                       f"expert matmul efficiency = tokens per expert / (tokens per expert + {cal.moe_half_tokens:g})"
                                       f" x width / (width + {cal.moe_half_width:g}), width = {sh.expert_width:,.0f} (an expert's intermediate size); "
                                       f"the expert GEMMs' weight reads and matmuls add (grouped GEMMs overlap them little, AIC_MOE_TABLES), "
                                       f"after the dense GEMMs' and the attention's own rooflines"}
    why["prefill_ms"] = (f"{new:,.0f} prompt tokens x ({sh.dense_flops + sh.expert_flops:,.3g} + attention) FLOP / "
                         f"(TP {tp} x {rate.formula} x {cal.compute_share:g} fitted serving share) (K04, K07){cache_words}")
    why["decode_ms_per_token"] = (f"max(weights read, GEMM matmuls) + max(KV read, attention FLOPs), reads at TP {tp} x "
                                  f"{gpu.bandwidth_tb_s:g} TB/s x {cal.bw_share:g} (separate kernels, AIC_OP_SUM) "
                                  f"+ TP all-reduces + {cal.layer_us:g} us per layer and {cal.seq_us:g} us per sequence step overhead + prefill interference, at {b} sequences "
                                  "per replica (K06, K01; factors fitted, docs/accuracy.md)")
    return Speed(**figures, speed_explained=explained, why=why)


# --- training --------------------------------------------------------------------------------------
