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
from advisor.numbers.cardmemory import kv_replication
from advisor.numbers.layouts import Layout
# one replica's serving step, timed (read here as speed.serving_times and friends)
from advisor.numbers.servestep import (ACT_BYTES, FP4_NAMES, Serving, Shape, _layer_comm, attended_keys, attended_pairs,  # noqa: F401
                                       decode_rest_s, expert_gemm_s,
                                       expert_imbalance, experts_touched, group_latency_s, group_link, host_staged,
                                       mixed_input, pp_return_s, prefill_tokens, serving_times, _moe_eff, _touched_bytes)
from advisor.numbers.ledger import Ledger, Sized, training_precision
from advisor.numbers.terms import GB, TFLOP, Term, _gb
from advisor.inputs.workload import Workload

CHECKPOINTING_COMPUTE = 1.30       # C06: activation checkpointing costs ~30% more compute


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
    job_hours: float | None = None             # an offline batch job's hours for its whole volume (numbers.batchjob)
    speed_explained: dict = field(default_factory=dict)
    why: dict = field(default_factory=dict)


# --- the model's shape, as the speed model needs it -------------------------------------------------

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
    window = int(m.num("sliding_window") or 0)
    windowed = m.num("sliding_window_layers")
    windowed = int(windowed if windowed is not None else (layers or 0)) if window else 0
    return Shape(dense_b, exp_b, dense_f, exp_f, s.experts, s.experts_per_token,
                 int(layers) if layers else None, hidden, attn, width, int(moe_layers) if moe_layers else None, exp_prec, dec,
                 window, windowed)


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


def _collectives_term(sv: Serving, sh: Shape, gpu: GPU, cal: Calibration, lay, b: int, dispatch: float, src: str) -> dict:
    """The step's collectives as speed_explained words them: all-reduces (or, with EP, the MoE all-to-alls)
    over the link the tp group uses, with its latency floor (the host-staged one on cards without
    peer-to-peer) and the attention-DP and expert groups named; kept apart from inference_speed because
    it is the one term whose words depend on the link and the groups."""
    tp, pp = lay.tp, lay.pp
    ep, adp = lay.ep, lay.attention_dp
    link, link_how = group_link(gpu, cal, tp)
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
    return {"value": sv.step_comm * 1e3, "factor": {**floor, "link": link_how},
            "source": "catalog/efficiency.yaml host_staged (NCCL_TUNING, TINYGRAD_P2P_ISSUE17; link: NCCL_ENV_SHM)" if staged else src,
            "formula": f"{'1 all-reduce + 2 all-to-alls' if moe else '2 all-reduces'} per layer x ({floor_us:g} us + ring bytes / {link / 1e9:,.0f} GB/s) (K14)"
                       + (f"; no peer-to-peer: staged in host memory, {cal.host_base_us:g} us + 2 x ({tp} - 1) hops x "
                          f"{cal.host_exchange_us - cal.host_base_us:g} us, each byte over PCIe twice" if staged else "") + groups}


def _speculative_term(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration, sv: Serving, sh: Shape, b: int) -> dict:
    """Speculative decoding's gain as speed_explained words it: the same plan served without MTP, against
    `sv`; apart because it serves the replica a second time and cites its own sources."""
    _, n, acc, refs = w.speculative
    plain = _serve(replace(w, speculative=None), led, gpu, lay, rate, cal)[0]     # the same plan without MTP
    return {
        "value": plain.tpot / sv.tpot, "factor": {"drafted_tokens": n, "accepted_length": acc}, "source": ", ".join(refs),
        "formula": (f"MTP, {n} drafted token(s) a step: (step verifying {1 + n} tokens per sequence + {n} MTP pass(es) of "
                    f"1/{sh.layers or 64} of a one-token step) / {acc:g} tokens accepted per step (catalog/engines.yaml): "
                    f"{plain.tpot * 1e3:,.2f} -> {sv.tpot * 1e3:,.2f} ms per output token at {b} sequences, "
                    f"x{plain.tpot / sv.tpot:.2f} tokens/s; checked at one sequence (DeepSeek-R1 on 8 x B200, MTP 3: "
                    f"x2.23 against x2.28 in TensorRT-LLM's B200 latency blog), it overstates the gain beyond about 16 "
                    f"sequences (x1.25 measured at 64 on 8 x MI300X in the LMSYS/AMD SGLang MTP blog)")}


def _moe_term(s: Sized, sh: Shape, cal: Calibration, b: int, pp: int, src: str) -> dict:
    """The expert matmuls' efficiency as speed_explained words it (a model with experts only): experts
    touched per layer at a micro-batch's tokens and the fitted half-efficiency tokens and width."""
    return {"value": experts_touched(s.experts, s.experts_per_token, max(b / pp, 1)),
            "factor": {"moe_half_tokens": cal.moe_half_tokens, "moe_half_width": cal.moe_half_width}, "source": src,
            "formula": f"experts touched per layer = {s.experts} x (1 - (1 - {s.experts_per_token}/{s.experts})^tokens); "
                       f"expert matmul efficiency = tokens per expert / (tokens per expert + {cal.moe_half_tokens:g})"
                       f" x width / (width + {cal.moe_half_width:g}), width = {sh.expert_width:,.0f} (an expert's intermediate size); "
                       f"the expert GEMMs' weight reads and matmuls add (grouped GEMMs overlap them little, AIC_MOE_TABLES), "
                       f"after the dense GEMMs' and the attention's own rooflines"}


def inference_speed(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration | None = None,
                    explain: bool = True) -> Speed:
    """TTFT, TPOT and throughput of the colocated layout `lay` (tp, pp, dp, count; a disaggregated one
    is numbers.poolspeed's) at the workload's concurrency (or the largest batch that fits, for `concurrency: max`), each term's factor and
    source in speed_explained (`explain` false: the figures only, for a layout the planner may not keep)."""
    cal = cal or default_calibration()
    sh = _shape_of(w, led)
    tp, pp = lay.tp, lay.pp
    adp = lay.attention_dp
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
    src = "catalog/efficiency.yaml (fitted by bench/fit.py)"
    explained = {
        "weights_and_kv_read_ms": {"value": sv.step_mem * 1e3, "factor": {"hbm_share": cal.bw_share}, "source": src,
                                   "formula": f"(dense weights {_gb(sh.dense_bytes)} + experts touched by {b} sequences + KV of {b} sequences) / "
                                              f"(TP {tp} x {gpu.bandwidth_tb_s:g} TB/s x {cal.bw_share:g}) (K06, K01)"},
        "step_compute_ms": {"value": sv.step_cmp * 1e3, "factor": {"compute_share": cal.compute_share}, "source": src,
                            "formula": f"{b} x (2 x active + attention 4 x layers x context x heads x dim) FLOPs / "
                                       f"(TP {tp} x PP {pp} x {rate.formula} x {cal.compute_share:g}) (K04)"},
        "tp_allreduce_ms": _collectives_term(sv, sh, gpu, cal, lay, b, dispatch, src),
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
        explained["speculative"] = _speculative_term(w, led, gpu, lay, rate, cal, sv, sh, b)
        why["speculative"] = explained["speculative"]["formula"]
    if led.sized.experts and led.sized.experts_per_token:
        explained["moe"] = _moe_term(led.sized, sh, cal, b, pp, src)
    why["prefill_ms"] = (f"{new:,.0f} prompt tokens x ({sh.dense_flops + sh.expert_flops:,.3g} + attention) FLOP / "
                         f"(TP {tp} x {rate.formula} x {cal.compute_share:g} fitted serving share) (K04, K07){cache_words}")
    why["decode_ms_per_token"] = (f"max(weights read, GEMM matmuls) + max(KV read, attention FLOPs), reads at TP {tp} x "
                                  f"{gpu.bandwidth_tb_s:g} TB/s x {cal.bw_share:g} (separate kernels, AIC_OP_SUM) "
                                  f"+ TP all-reduces + {cal.layer_us:g} us per layer and {cal.seq_us:g} us per sequence step overhead + prefill interference, at {b} sequences "
                                  "per replica (K06, K01; factors fitted, docs/accuracy.md)")
    return Speed(**figures, speed_explained=explained, why=why)


# --- training --------------------------------------------------------------------------------------
