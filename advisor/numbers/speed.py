"""How fast: the matmul rate a GPU reaches, prefill and decode time for serving, hours for training."""
from __future__ import annotations

import math

from advisor.catalog import GPU, Catalog
from advisor.numbers.ledger import Ledger, Sized, training_precision
from advisor.numbers.plan import MAX_GPUS
from advisor.numbers.terms import GB, TFLOP, Term, _gb
from advisor.workload import Workload

CHECKPOINTING_COMPUTE = 1.30       # C06: activation checkpointing costs ~30% more compute


def compute_precision(w: Workload, gpu: GPU, sized: Sized) -> str:
    """The precision matmuls run in: native low precision where the GPU has it, else bf16 (K10)."""
    want = training_precision(w) if w.training else sized.parts[0].precision
    native = gpu.native_precisions
    if want == "fp8" and "fp8" in native and gpu.tflops("fp8"):
        return "fp8"
    if want in ("fp4", "mxfp4") and "fp4" in native and gpu.tflops("fp4"):
        return "fp4"
    return "bf16"


def achievable_tflops(catalog: Catalog, gpu: GPU, precision: str) -> Term:
    eff = catalog.efficiency.get("matmul", {})
    measured = (eff.get("measured_tflops", {}).get(gpu.id) or {}).get(precision)
    if measured:
        return Term(float(measured["v"]), f"measured MAMF {measured['v']:g} TFLOPS {precision}", tuple(measured.get("src", ())))
    share = eff["default_share"][precision]
    spec = gpu.tflops(precision)
    return Term(spec * share["v"], f"{spec:g} TFLOPS spec x {share['v']:g} typical achievable share",
                tuple(gpu.fig(f"{precision}_tflops").sources) + tuple(share.get("src", ())))


def ideal_figures(c, s: Sized, gpu: GPU, cp: str) -> None:
    """K19's two divisions and K06's single-user ceiling, at spec peaks (ideal)."""
    spec_rate = gpu.tflops(cp) * TFLOP
    bw = gpu.bandwidth_tb_s * 1e12
    c.ideal = {
        "weights_over_vram": s.weights_bytes / (gpu.memory_gb * GB),
        "decode_ms_per_token": s.active_bytes / bw * 1e3,
        "compute_ms_per_token": 2 * s.active / spec_rate * 1e3,
        "tokens_per_s_single_user": bw / s.active_bytes,
        "prefill_ms_1k_tokens": 1000 * 2 * s.active / spec_rate * 1e3,
    }
    c.ideal["load_to_compute_ratio"] = c.ideal["decode_ms_per_token"] / c.ideal["compute_ms_per_token"]
    c.why["ideal"] = (f"active weights {_gb(s.active_bytes)} / {gpu.bandwidth_tb_s:g} TB/s; "
                      f"2 x {s.active / 1e9:,.2f}B active / {gpu.tflops(cp):g} TFLOPS {cp} (K06, K19, K04)")


def inference_speed(w: Workload, led: Ledger, c, gpu: GPU, rate: Term, hbm: float) -> None:
    """Prefill (compute-bound) and decode (bandwidth-bound, max'd with compute) for the plan in `c`."""
    bw = gpu.bandwidth_tb_s * 1e12
    s = led.sized
    m = w.model
    flops_token = 2 * s.active
    c.prefill_ms = w.prompt_tokens * flops_token / (c.tp * rate.value * TFLOP) * 1e3
    c.why["prefill_ms"] = (f"{w.prompt_tokens:,} prompt tokens x {flops_token / 1e9:,.1f} GFLOP / "
                           f"(TP {c.tp} x {rate.formula}) (K04, K07)")
    batch = math.ceil(w.concurrency / c.dp)
    weight_bytes = 0.0
    for pt in s.parts:
        if pt.name == "experts" and s.experts and s.experts_per_token:
            touched = 1 - (1 - s.experts_per_token / s.experts) ** batch
            weight_bytes += pt.params * pt.bpp * touched
        else:
            weight_bytes += pt.active_params * pt.bpp
    if len(s.parts) == 1 and s.active_bytes != s.parts[0].active_params * s.parts[0].bpp:
        weight_bytes = s.active_bytes   # checkpoint-sized model: effective bytes per parameter
    avg_tokens = min(w.context_tokens, w.prompt_tokens + w.output_tokens / 2)
    kv_read = batch * led.kv.bytes_per_sequence(int(avg_tokens)) if led.kv else 0.0
    t_mem = (weight_bytes + kv_read) / (c.tp * bw * hbm)
    t_cmp = batch * flops_token / (c.tp * rate.value * TFLOP)
    c.decode_ms_per_token = max(t_mem, t_cmp) * 1e3
    c.why["decode_ms_per_token"] = (f"max(({_gb(weight_bytes)} weights read + {_gb(kv_read)} KV read for {batch} sequences) / "
                                    f"(TP {c.tp} x {gpu.bandwidth_tb_s:g} TB/s x {hbm:g}), "
                                    f"{batch} x {flops_token / 1e9:,.1f} GFLOP / (TP {c.tp} x {rate.value:,.0f} TFLOPS)) (K06, K01)")
    c.tokens_per_s_per_user = 1e3 / c.decode_ms_per_token
    c.tokens_per_s = c.tokens_per_s_per_user * w.concurrency
    if c.usd_per_hour:
        c.usd_per_million_tokens = c.usd_per_hour / (c.tokens_per_s * 3600) * 1e6
        c.why["usd_per_million_tokens"] = f"${c.usd_per_hour:,.2f}/h / ({c.tokens_per_s:,.0f} tokens/s x 3600) x 10^6 (T07)"
    replica = c.tp * c.pp * gpu.memory_gb * GB
    c.kv_headroom_gb = (replica - s.weights_bytes) / GB
    c.why["kv_headroom_gb"] = f"TP {c.tp} x PP {c.pp} x {gpu.memory_gb:g} GB - weights {_gb(s.weights_bytes)} (K05, W06)"
    if led.kv and not led.kv_fallback:
        rep = max(1.0, c.tp / led.kv.kv_heads)
        fixed = (led.bytes("weights_gb") + led.bytes("overhead_gb")) + led.bytes("activations_gb") * c.pp
        free = c.count * gpu.memory_gb * GB - fixed * c.dp
        per_seq = led.kv.bytes_per_sequence(w.context_tokens) * rep
        c.max_concurrency = max(0.0, math.floor(free / per_seq)) if per_seq else None
        longest = led.kv.max_tokens(free / w.concurrency / rep)
        limit = m.num("max_context")
        c.max_context_tokens = min(longest, limit) if limit else (None if math.isinf(longest) else math.floor(longest))


def train_flops_per_token(w: Workload, led: Ledger) -> tuple[float, int]:
    per_param = 4 if w.method in ("lora", "qlora") else 6   # LoRA: no weight gradients for the frozen base
    flops = per_param * led.sized.active * (CHECKPOINTING_COMPUTE if w.activation_checkpointing else 1)
    return flops * (2 if w.task == "rlhf" else 1), per_param


def deadline_factor(w: Workload, led: Ledger, count: int, rate: Term) -> int:
    """Data-parallel multiple needed to finish within constraints.deadline_hours (1 when none is set)."""
    deadline = w.constraints.deadline_hours
    if not (deadline and w.training_tokens):
        return 1
    flops, _ = train_flops_per_token(w, led)
    hours = w.training_tokens * flops / (count * rate.value * TFLOP) / 3600
    factor = max(1, math.ceil(hours / deadline - 1e-9))
    return factor if count * factor <= (w.constraints.max_gpus or MAX_GPUS) else 1


def training_time(w: Workload, led: Ledger, c, rate: Term) -> None:
    flops_token, per_param = train_flops_per_token(w, led)
    if not w.training_tokens:
        return
    hours = w.training_tokens * flops_token / (c.count * rate.value * TFLOP) / 3600
    c.training_hours = hours
    c.why["training_hours"] = (f"{w.training_tokens:.3g} tokens x {flops_token / 1e9:,.1f} GFLOP/token "
                               f"({per_param} x active{', x1.3 checkpointing (C06)' if w.activation_checkpointing else ''}) / "
                               f"({c.count} GPUs x {rate.formula}) (K08): a lower bound, every card at the measured "
                               "peak matmul rate with no pipeline bubbles or communication stalls")
    if c.usd_per_hour:
        c.usd_per_job = hours * c.usd_per_hour
        c.why["usd_per_job"] = f"{hours:,.1f} h x ${c.usd_per_hour:,.2f}/h (C16)"

