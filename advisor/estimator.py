"""The numeric estimator: memory ledger, FLOPs, prefill/decode time, card counts, layout, power, cost.

Pure functions over a Workload and the Catalog; no I/O, and no decisions (rules decide). Every
figure carries how it was computed: a formula with its inputs and the seed IDs or catalog sources
behind it, so that a memo can say "why 65 GB". GB means 10^9 bytes throughout.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.catalog import GPU, Catalog, Model, Price, PRICE_TIERS
from advisor.workload import Workload

GB = 1e9
TFLOP = 1e12

#: bytes per parameter (K16: 2X GB for X B params in bf16, half at 8 bits, a quarter at 4 bits;
#: MXFP4 stores 4.25 bits per parameter including its block scales, LEPHONGPHU_GPTOSS).
BYTES_PER_PARAM = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
                   "mxfp4": 4.25 / 8, "fp4": 0.5, "int4": 0.5}
SIXTEEN_BIT = ("bf16", "fp16")

INFERENCE_OVERHEAD = 0.20          # K16: +20% of the weights (Hugging Face Accelerate)
KV_FALLBACK_SHARE = 0.50           # K05: keep at least 50% of the weights for the KV cache
TRAINING_SAFETY = 1.20             # C06: sum x 1.2 = the minimum memory
CHECKPOINTING_COMPUTE = 1.30       # C06: activation checkpointing costs ~30% more compute
HOST_POWER_FACTOR = 1.25           # C14: 8 x 700 W cards <-> a 6-8 kW node: 7 kW / 5.6 kW
ADAM_BYTES = {"adamw": 8.0, "adamw-8bit": 2.0, "sgd": 4.0}   # C06: Adam 8 B/param (two fp32 moments)
MASTER_BYTES = 4.0                 # C06: + 4 B/param fp32 master copy with 16-bit weights
ALT_BYTES_PER_PARAM = 18.0         # K08: 6 B weights + 8 B Adam + 4 B gradients (Hugging Face)
ACT_BYTES_PER_TOKEN_HIDDEN = 34    # Korthikanti et al. 2022: 34*s*b*h bytes per layer (16-bit, attention scores not stored)
CKPT_BYTES_PER_TOKEN_HIDDEN = 2    # with full recomputation only each layer's 16-bit input is kept
PREFILL_CHUNK_TOKENS = 8192        # assumption: prompt tokens processed at once (chunked prefill)
LORA_TARGET_MATRICES = 4           # assumption: adapters on q, k, v, o (each ~hidden x hidden)
LORA_FALLBACK_SHARE = 0.01         # assumption when the architecture is unknown: adapters = 1% of parameters
MAX_GPUS = 4096                    # the planner's ceiling when the workload sets no max_gpus
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Term:
    """A computed figure and how: `formula` shows the arithmetic, `sources` the IDs behind it."""

    value: float | None
    formula: str
    sources: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"value": _r(self.value), "formula": self.formula, "sources": list(self.sources)}


def _r(x, nd: int = 4):
    if isinstance(x, float):
        if x != x or x in (math.inf, -math.inf):
            return None
        return round(x, nd) if abs(x) >= 1e-3 or x == 0 else float(f"{x:.4g}")
    return x


def _gb(x: float) -> str:
    return f"{x / GB:,.2f} GB" if x < 100 * GB else f"{x / GB:,.0f} GB"


# --- the model in numbers -------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """A share of the model's parameters stored at one precision."""

    name: str
    params: float
    active_params: float
    precision: str

    @property
    def bpp(self) -> float:
        return BYTES_PER_PARAM[self.precision]


@dataclass(frozen=True)
class Sized:
    """The model's parameters split into parts that may differ in precision (K01, K10)."""

    params: float
    active: float
    parts: tuple[Part, ...]
    experts: int | None
    experts_per_token: int | None
    weights_bytes: float
    active_bytes: float
    weights_formula: str
    sources: tuple[str, ...]
    precision_label: str


def training_precision(w: Workload) -> str:
    if w.precision:
        return w.precision
    shipped = w.model.precision
    p = shipped.get("all", "bf16")
    return p if p in ("fp32", "bf16", "fp16", "fp8") else "bf16"


def size_model(w: Workload) -> Sized:
    m = w.model
    params = m.num("params_b") * 1e9
    active = m.num("active_params_b") * 1e9
    n, k = m.num("experts"), m.num("experts_per_token")
    shipped = m.precision
    srcs = tuple(dict.fromkeys(m.fig("params_b").sources + m.fig("active_params_b").sources))
    if w.training:   # QLoRA keeps the frozen base in 4 bits (K10)
        precision = {"all": "int4" if w.method == "qlora" else training_precision(w)}
    else:
        precision = {"all": w.precision} if w.precision else shipped
    expert_params = 0.0
    if n and k and n > k:
        if m.num("expert_params_b") is not None:
            expert_params = m.num("expert_params_b") * 1e9
            srcs += m.fig("expert_params_b").sources
        else:  # total = rest + E and active = rest + E*k/n  =>  E = (total - active) / (1 - k/n)
            expert_params = (params - active) / (1 - k / n)
    if "experts" in precision and expert_params:
        rest = params - expert_params
        active_experts = expert_params * k / n
        parts = (Part("experts", expert_params, active_experts, precision["experts"]),
                 Part("rest", rest, active - active_experts, precision["rest"]))
    else:
        p = precision.get("all") or precision.get("rest") or "bf16"
        if expert_params:
            parts = (Part("experts", expert_params, expert_params * k / n, p),
                     Part("rest", params - expert_params, active - expert_params * k / n, p))
        else:
            parts = (Part("all", params, active, p),)
    weights = sum(pt.params * pt.bpp for pt in parts)
    formula = " + ".join(f"{pt.params / 1e9:,.2f}B x {pt.bpp:g} B ({pt.precision}{', ' + pt.name if pt.name != 'all' else ''})"
                         for pt in parts)
    label = "/".join(dict.fromkeys(pt.precision for pt in parts))
    # a shipped checkpoint whose size is known beats the arithmetic (Kimi K3: 4-bit QAT, W05)
    ckpt = m.num("checkpoint_gb")
    uses_shipped = not w.training and not w.precision
    if uses_shipped and ckpt and len({pt.precision for pt in parts}) == 1:
        weights = ckpt * GB
        formula = f"shipped checkpoint {ckpt:,.0f} GB ({', '.join(m.fig('checkpoint_gb').sources)})"
        srcs += m.fig("checkpoint_gb").sources
        active_bytes = active * weights / params     # the checkpoint's effective bytes per parameter
    else:
        active_bytes = sum(pt.active_params * pt.bpp for pt in parts)
    return Sized(params, active, parts, int(n) if n else None, int(k) if k else None, weights, active_bytes,
                 formula, tuple(dict.fromkeys(srcs + ("K01", "K16"))), label)


# --- KV cache -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KVShape:
    """KV bytes per token for full-attention layers and for sliding-window layers (capped at window)."""

    full_bytes_per_token: float
    window_bytes_per_token: float
    window: int
    kv_heads: int          # heads the cache can be split over under tensor parallelism (1 for MLA)
    formula: str

    def bytes_per_sequence(self, tokens: int) -> float:
        return self.full_bytes_per_token * tokens + self.window_bytes_per_token * min(tokens, self.window)

    def max_tokens(self, budget_bytes: float) -> float:
        """Longest sequence whose cache fits in budget_bytes (inf when every layer is windowed)."""
        if budget_bytes <= 0:
            return 0.0
        windowed = self.window_bytes_per_token * self.window
        if self.full_bytes_per_token == 0:
            return math.inf if budget_bytes >= windowed else budget_bytes / self.window_bytes_per_token
        if budget_bytes <= (self.full_bytes_per_token + self.window_bytes_per_token) * self.window:
            return budget_bytes / (self.full_bytes_per_token + self.window_bytes_per_token)
        return (budget_bytes - windowed) / self.full_bytes_per_token


def kv_shape(model: Model, kv_precision: str) -> KVShape | None:
    """Exact KV bytes per token from the architecture (GQA, MLA, sliding windows); None if unknown."""
    b = BYTES_PER_PARAM[kv_precision]
    layers = model.num("layers")
    if not layers:
        return None
    layers = int(layers)
    mla = model.num("mla_kv_dim")
    if mla:
        per_layer = mla * b
        return KVShape(per_layer * layers, 0.0, 0, 1,
                       f"{layers} layers x {mla:.0f} latent elements (MLA) x {b:g} B")
    kv_heads, head_dim = model.num("kv_heads"), model.num("head_dim")
    if not head_dim and model.num("hidden_size") and model.num("attention_heads"):
        head_dim = model.num("hidden_size") / model.num("attention_heads")
    if not kv_heads or not head_dim:
        return None
    per_layer = 2 * kv_heads * head_dim * b
    window = model.num("sliding_window")
    if window:
        windowed = int(model.num("sliding_window_layers") if model.num("sliding_window_layers") is not None else layers)
        full = layers - windowed
        return KVShape(per_layer * full, per_layer * windowed, int(window), int(kv_heads),
                       f"2 (K,V) x {kv_heads:.0f} KV heads x {head_dim:.0f} dim x {b:g} B x "
                       f"({full} full layers x tokens + {windowed} window layers x min(tokens, {window:.0f}))")
    return KVShape(per_layer * layers, 0.0, 0, int(kv_heads),
                   f"2 (K,V) x {kv_heads:.0f} KV heads x {head_dim:.0f} dim x {b:g} B x {layers} layers")


# --- the ledgers ------------------------------------------------------------------------------------

LEDGER_KEYS = ("weights_gb", "kv_cache_gb", "activations_gb", "gradients_gb", "optimizer_gb", "overhead_gb", "total_gb")


@dataclass(frozen=True, eq=False)
class Ledger:
    """The memory ledger: what one replica needs, term by term, with formulas and sources."""

    terms: dict[str, Term]          # bytes, keyed by LEDGER_KEYS with _gb (values in bytes)
    sized: Sized
    kv: KVShape | None
    kv_fallback: bool
    alt: dict[str, Term]            # the other seed's accounting, shown beside ours
    notes: tuple[str, ...]

    def bytes(self, key: str) -> float:
        t = self.terms.get(key)
        return t.value if t and t.value else 0.0


def inference_ledger(w: Workload) -> Ledger:
    s = size_model(w)
    kv = kv_shape(w.model, w.kv_precision)
    notes = []
    terms = {"weights_gb": Term(s.weights_bytes, s.weights_formula, s.sources)}
    if kv:
        per_seq = kv.bytes_per_sequence(w.context_tokens)
        terms["kv_cache_gb"] = Term(per_seq * w.concurrency,
                                    f"{per_seq / 1e6:,.1f} MB per {w.context_tokens:,}-token sequence "
                                    f"[{kv.formula}] x {w.concurrency} sequences", ("K05", "C02"))
    else:
        terms["kv_cache_gb"] = Term(KV_FALLBACK_SHARE * s.weights_bytes,
                                    f"50% of the weights ({_gb(s.weights_bytes)} x 0.5): architecture unknown", ("K05", "K16"))
        notes.append("KV cache: the model's architecture (layers, KV heads, head size) is unknown, so the cache "
                     "is sized by the 50%-of-weights rule (K05), not from the context and concurrency.")
    hidden = w.model.num("hidden_size")
    if hidden:
        chunk = min(w.context_tokens, PREFILL_CHUNK_TOKENS)
        act = ACT_BYTES_PER_TOKEN_HIDDEN * chunk * hidden
        terms["activations_gb"] = Term(act, f"{ACT_BYTES_PER_TOKEN_HIDDEN} B x {chunk:,} prefill tokens x {hidden:.0f} hidden "
                                            "(one layer's activations live at a time)", ("Korthikanti2022",))
    else:
        terms["activations_gb"] = Term(0.0, "unknown hidden size: workspace covered by the +20% overhead only", ("K16",))
    terms["overhead_gb"] = Term(INFERENCE_OVERHEAD * s.weights_bytes, f"20% of the weights ({_gb(s.weights_bytes)})", ("K16",))
    terms["gradients_gb"] = Term(0.0, "inference keeps no gradients")
    terms["optimizer_gb"] = Term(0.0, "inference keeps no optimizer states")
    total = sum(t.value for t in terms.values())
    terms["total_gb"] = Term(total, "weights + KV cache + activations + overhead", ("K16", "K05"))
    return Ledger(terms, s, kv, kv is None, {}, tuple(notes))


def _activation_bytes(w: Workload) -> Term:
    L, h = w.model.num("layers"), w.model.num("hidden_size")
    s, b = w.context_tokens, w.concurrency
    if not (L and h):
        return Term(0.0, "unknown layers/hidden size: activations not included", ())
    if w.activation_checkpointing:
        v = CKPT_BYTES_PER_TOKEN_HIDDEN * s * b * h * L + ACT_BYTES_PER_TOKEN_HIDDEN * s * b * h
        f = (f"checkpointing: 2 B x {s:,} seq x {b} micro-batch x {h:.0f} hidden x {L:.0f} layers "
             f"+ one layer recomputed (34 B x s x b x h)")
    else:
        v = ACT_BYTES_PER_TOKEN_HIDDEN * s * b * h * L
        f = f"34 B x {s:,} seq x {b} micro-batch x {h:.0f} hidden x {L:.0f} layers"
    return Term(float(v), f, ("C06", "Korthikanti2022"))


def training_ledger(w: Workload) -> Ledger:
    s = size_model(w)
    P = s.params
    p = training_precision(w)
    b = BYTES_PER_PARAM[p]
    master = MASTER_BYTES if (w.master_weights and b < 4) else 0.0
    opt_b = ADAM_BYTES[w.optimizer] + master
    notes = []
    if w.method in ("lora", "qlora"):
        L, h = w.model.num("layers"), w.model.num("hidden_size")
        if L and h:
            adapters = 2 * w.lora_rank * h * LORA_TARGET_MATRICES * L
            af = f"2 x rank {w.lora_rank} x {h:.0f} hidden x {LORA_TARGET_MATRICES} matrices x {L:.0f} layers"
        else:
            adapters = LORA_FALLBACK_SHARE * P
            af = "1% of the parameters (architecture unknown)"
        base = s.weights_bytes
        weights = Term(base + adapters * 2, f"frozen base {s.weights_formula} + adapters {adapters / 1e6:,.1f}M x 2 B [{af}]",
                       s.sources + ("C10",))
        grads = Term(adapters * 2, f"adapters only: {adapters / 1e6:,.1f}M x 2 B", ("C06",))
        opt = Term(adapters * (ADAM_BYTES[w.optimizer] + MASTER_BYTES),
                   f"adapters only: {adapters / 1e6:,.1f}M x {ADAM_BYTES[w.optimizer] + MASTER_BYTES:g} B", ("C06",))
    else:
        weights = Term(P * b, f"{P / 1e9:,.2f}B x {b:g} B ({p})", s.sources + ("C06",))
        grads = Term(P * b, f"same as the weights: {P / 1e9:,.2f}B x {b:g} B", ("C06",))
        opt = Term(P * opt_b, f"{P / 1e9:,.2f}B x ({ADAM_BYTES[w.optimizer]:g} B {w.optimizer} states"
                              + (f" + {master:g} B fp32 master copy" if master else "") + ")", ("C06",))
    act = _activation_bytes(w)
    if not act.value:
        notes.append("Activations: the model's layers and hidden size are unknown, so activations are not in the ledger.")
    if w.task == "rlhf":
        # C09: policy + reference + reward + value models; the reference and reward models are frozen
        weights = Term(weights.value * 4, f"4 models (policy, reference, reward, value) x [{weights.formula}]", weights.sources + ("C09",))
        grads = Term(grads.value * 2, f"2 trained models (policy, value) x [{grads.formula}]", grads.sources + ("C09",))
        opt = Term(opt.value * 2, f"2 trained models x [{opt.formula}]", opt.sources + ("C09",))
        act = Term(act.value * 2, f"2 trained models x [{act.formula}]", act.sources + ("C09",))
        notes.append("RLHF: reward and value models are assumed as large as the policy (C09: 2-3x plain fine-tuning memory).")
    terms = {"weights_gb": weights, "kv_cache_gb": Term(0.0, "training keeps no KV cache"),
             "gradients_gb": grads, "optimizer_gb": opt, "activations_gb": act}
    subtotal = sum(t.value for t in terms.values())
    terms["overhead_gb"] = Term((TRAINING_SAFETY - 1) * subtotal, f"x1.2 safety factor on {_gb(subtotal)}", ("C06",))
    terms["total_gb"] = Term(subtotal * TRAINING_SAFETY, "(weights + gradients + optimizer + activations) x 1.2", ("C06",))
    alt = {}
    if w.method == "full" and w.optimizer == "adamw" and p in SIXTEEN_BIT and w.task != "rlhf":
        ours = b * 2 + opt_b
        alt["model_states_gb"] = Term(P * ALT_BYTES_PER_PARAM,
                                      f"{P / 1e9:,.2f}B x 18 B (K08: 6 B weights + 8 B Adam + 4 B gradients); "
                                      f"this ledger uses {ours:g} B/param (C06)", ("K08",))
        alt["ours_model_states_gb"] = Term(P * ours, f"{P / 1e9:,.2f}B x {ours:g} B (C06)", ("C06",))
    return Ledger(terms, s, None, False, alt, tuple(notes))


# --- per-GPU plans ----------------------------------------------------------------------------------

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


def pick_price(prices: list[Price], count: int, group: int):
    """Cheapest way to rent `count` GPUs with each node's share of a model replica (`group` cards:
    its tensor-parallel and in-node pipeline stages) inside one instance (K13), from the most
    trustworthy tier that has one. Returns (usd_per_hour, price, instances) or None."""
    for tier in PRICE_TIERS:
        offers = [p for p in prices if p.tier == tier and p.gpus_per_instance >= group]
        if offers:
            best = min(offers, key=lambda p: (math.ceil(count / p.gpus_per_instance) * p.usd_per_hour, -p.gpus_per_instance))
            n = math.ceil(count / best.gpus_per_instance)
            return n * best.usd_per_hour, best, n
    return None


@dataclass(eq=False)
class Candidate:
    """One GPU sized for the workload: count, layout, speed, power and cost."""

    gpu: GPU
    fits: bool
    count: int | None = None
    nodes: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    per_card_gb: float | None = None
    headroom_gb: float | None = None
    kv_headroom_gb: float | None = None
    compute_precision: str = "bf16"
    prefill_ms: float | None = None
    decode_ms_per_token: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_per_user: float | None = None
    max_concurrency: float | None = None
    max_context_tokens: float | None = None
    training_hours: float | None = None
    power_kw_per_node: float | None = None
    usd_per_hour: float | None = None
    usd_per_million_tokens: float | None = None
    usd_per_job: float | None = None
    price: dict | None = None
    price_unknown: str | None = None
    reason: str | None = None
    ideal: dict = field(default_factory=dict)
    why: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {"gpu": self.gpu.id}
        for k in ("count", "nodes", "tp", "pp", "dp", "per_card_gb", "headroom_gb", "kv_headroom_gb", "fits",
                  "compute_precision", "prefill_ms", "decode_ms_per_token", "tokens_per_s", "tokens_per_s_per_user",
                  "max_concurrency", "max_context_tokens", "training_hours", "power_kw_per_node", "usd_per_hour",
                  "usd_per_million_tokens", "usd_per_job", "price", "price_unknown", "reason", "ideal", "why"):
            v = getattr(self, k)
            d[k] = _r(v) if not isinstance(v, dict) else {a: (_r(b) if not isinstance(b, dict) else b) for a, b in v.items()}
        d["memory_gb"] = self.gpu.memory_gb
        return d


def _tp_options(gpu: GPU):
    return [t for t in TP_SIZES if t <= gpu.gpus_per_node]


def _k14(tp: int, pp: int, gpn: int) -> bool:
    """K14: tensor parallelism inside a node; a model that spans nodes fills each node with TP and
    runs pipeline stages across nodes."""
    return tp * pp <= gpn or tp == gpn


def _plan_inference(w: Workload, led: Ledger, gpu: GPU, max_gpus: int):
    mem = gpu.memory_gb * GB
    fixed_total = led.bytes("weights_gb") + led.bytes("overhead_gb")
    act = led.bytes("activations_gb")
    kv_total = led.bytes("kv_cache_gb")
    kv_heads = led.kv.kv_heads if led.kv else None
    layers = int(w.model.num("layers") or 64)
    gpn = gpu.gpus_per_node
    best = None
    for tp in _tp_options(gpu):
        rep = max(1.0, tp / kv_heads) if kv_heads else 1.0
        for pp in range(1, layers + 1):
            if best and tp * pp > best[0]:
                break
            fixed = fixed_total / (tp * pp) + act / tp
            if fixed >= mem:
                continue
            kv_card = kv_total * rep / (tp * pp)
            if led.kv_fallback:   # a fixed reservation, not per-sequence: it cannot be spread over replicas
                dp = 1 if fixed + kv_card <= mem else None
            else:
                dp = max(1, math.ceil(kv_card / (mem - fixed) - 1e-9)) if kv_card > 0 else 1
                dp = min(dp, w.concurrency) if fixed + kv_card / min(dp, w.concurrency) <= mem else None
            if dp is None:
                continue
            count = tp * pp * dp
            if count > max_gpus or not _k14(tp, pp, gpn):
                continue
            nodes = math.ceil(count / gpn)
            pref = -tp if w.latency == "interactive" else tp
            key = (count, nodes, pp, pref)
            if best is None or key < best[1]:
                per_card = fixed + kv_card / dp
                best = (count, key, tp, pp, dp, per_card, rep)
    return best


def _plan_training(w: Workload, led: Ledger, gpu: GPU, max_gpus: int):
    mem = gpu.memory_gb * GB / TRAINING_SAFETY
    W, G, O, A = (led.bytes(k) for k in ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb"))
    z = w.zero_stage
    sharded = (W if z >= 3 else 0) + (G if z >= 2 else 0) + (O if z >= 1 else 0)
    unsharded = W + G + O + A - sharded
    layers = int(w.model.num("layers") or 64)
    gpn = gpu.gpus_per_node
    best = None
    for tp in _tp_options(gpu):
        for pp in range(1, layers + 1):
            m = tp * pp
            if best and m > best[0]:
                break
            room = mem - unsharded / m
            if room <= 0:
                continue
            dp = 1 if sharded / m <= room else math.ceil(sharded / m / room - 1e-9)
            count = m * dp
            if count > max_gpus:
                break
            if not _k14(tp, pp, gpn):
                continue
            nodes = math.ceil(count / gpn)
            key = (count, nodes, pp, -tp)
            if best is None or key < best[1]:
                per_card = (unsharded / m + sharded / (m * dp)) * TRAINING_SAFETY
                best = (count, key, tp, pp, dp, per_card, 1.0)
    return best


def plan_candidate(w: Workload, led: Ledger, gpu: GPU, catalog: Catalog) -> Candidate:
    max_gpus = w.constraints.max_gpus or MAX_GPUS
    best = (_plan_training if w.training else _plan_inference)(w, led, gpu, max_gpus)
    s = led.sized
    cp = compute_precision(w, gpu, s)
    spec_rate = gpu.tflops(cp) * TFLOP
    rate = achievable_tflops(catalog, gpu, cp)
    hbm = catalog.efficiency["hbm_share"]["v"]
    bw = gpu.bandwidth_tb_s * 1e12
    c = Candidate(gpu, fits=best is not None, compute_precision=cp)
    # K19's two divisions and K06's single-user ceiling, at spec peaks (ideal)
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
    if best is None:
        need = led.bytes("total_gb")
        c.reason = (f"needs {_gb(need)} and no layout of at most {max_gpus} x {gpu.memory_gb:g} GB "
                    f"(TP <= {gpu.gpus_per_node} per node) holds it")
        return c
    count, _, tp, pp, dp, per_card, rep = best
    if w.training:
        factor = _deadline_factor(w, led, count, rate)
        if factor > 1:
            dp, count = dp * factor, count * factor
            c.why["dp"] = f"x{factor} data-parallel replicas to finish within {w.constraints.deadline_hours:g} h"
    c.count, c.tp, c.pp, c.dp = count, tp, pp, dp
    c.nodes = math.ceil(count / gpu.gpus_per_node)
    c.per_card_gb = per_card / GB
    c.headroom_gb = gpu.memory_gb - c.per_card_gb
    c.why["per_card_gb"] = (f"ledger split over TP {tp} x PP {pp}" + (f" with KV heads replicated x{rep:g}" if rep > 1 else "")
                            + (f", sequences over DP {dp}" if dp > 1 and not w.training else "")
                            + (f", ZeRO-{w.zero_stage} shards over DP {dp}" if w.training and w.zero_stage else ""))
    cards_in_node = min(count, gpu.gpus_per_node)
    tdp = gpu.num("tdp_w")
    if tdp:
        c.power_kw_per_node = cards_in_node * tdp * HOST_POWER_FACTOR / 1000
        c.why["power_kw_per_node"] = f"{cards_in_node} x {tdp:g} W x 1.25 host factor (C14)"
    group = min(tp * pp, gpu.gpus_per_node)
    price = pick_price(catalog.prices_for(gpu.id), count, group)
    if price:
        c.usd_per_hour, p, n = price
        c.price = {"provider": p.provider, "date": p.date, "source": p.source, "tier": p.tier,
                   "instances": n, "gpus_per_instance": p.gpus_per_instance, "usd_per_instance_hour": p.usd_per_hour,
                   "idle_gpus": n * p.gpus_per_instance - count}
        c.why["usd_per_hour"] = (f"{n} x {p.gpus_per_instance}-GPU instance x ${p.usd_per_hour:g}/h ({p.provider}, {p.date})"
                                 + (f"; {n * p.gpus_per_instance - count} of its GPUs idle" if n * p.gpus_per_instance > count else ""))
    else:
        have = sorted({p.gpus_per_instance for p in catalog.prices_for(gpu.id)})
        c.price_unknown = ("no price known for this GPU" if not have else
                           f"no quote for an instance of at least {group} GPUs (quoted sizes: {have})")
    if w.training:
        _training_time(w, led, c, rate)
    else:
        _inference_speed(w, led, c, gpu, rate, hbm, bw)
    return c


def _inference_speed(w, led: Ledger, c: Candidate, gpu: GPU, rate: Term, hbm: float, bw: float):
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


def _train_flops_per_token(w: Workload, led: Ledger) -> tuple[float, int]:
    per_param = 4 if w.method in ("lora", "qlora") else 6   # LoRA: no weight gradients for the frozen base
    flops = per_param * led.sized.active * (CHECKPOINTING_COMPUTE if w.activation_checkpointing else 1)
    return flops * (2 if w.task == "rlhf" else 1), per_param


def _deadline_factor(w: Workload, led: Ledger, count: int, rate: Term) -> int:
    """Data-parallel multiple needed to finish within constraints.deadline_hours (1 when none is set)."""
    deadline = w.constraints.deadline_hours
    if not (deadline and w.training_tokens):
        return 1
    flops, _ = _train_flops_per_token(w, led)
    hours = w.training_tokens * flops / (count * rate.value * TFLOP) / 3600
    factor = max(1, math.ceil(hours / deadline - 1e-9))
    return factor if count * factor <= (w.constraints.max_gpus or MAX_GPUS) else 1


def _training_time(w, led: Ledger, c: Candidate, rate: Term):
    flops_token, per_param = _train_flops_per_token(w, led)
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


def job_cost(hours: float, usd_per_card_hour: float, cards: int, rerun_probability: float = 0.0) -> float:
    """C16: hours x price x cards, plus the expected cost of a rerun."""
    return hours * usd_per_card_hour * cards * (1 + rerun_probability)


# --- the whole estimate -----------------------------------------------------------------------------

@dataclass(eq=False)
class Estimate:
    """The estimator's output for a workload: the ledger, the FLOPs and every candidate."""

    workload: Workload
    ledger: Ledger
    candidates: list[Candidate]
    compute: dict[str, Term]
    kv_bytes_per_token: float | None
    notes: list[str]

    def candidate(self, gpu_id: str) -> Candidate:
        return next(c for c in self.candidates if c.gpu.id == gpu_id)

    def as_dict(self) -> dict:
        led = self.ledger
        return {
            "units": "GB = 10^9 bytes; card capacities are the vendors' labels, read as 10^9 bytes",
            "workload": self.workload.inputs(),
            "ledger": {k: _r(led.terms[k].value / GB) for k in LEDGER_KEYS},
            "ledger_explained": {k: {**led.terms[k].as_dict(), "value": _r(led.terms[k].value / GB)} for k in LEDGER_KEYS},
            "alternative_accounting": {k: {**t.as_dict(), "value": _r(t.value / GB)} for k, t in led.alt.items()},
            "kv_bytes_per_token": _r(self.kv_bytes_per_token),
            "kv_fallback": led.kv_fallback,
            "weights_precision": led.sized.precision_label,
            "active_weight_gb_per_token": _r(led.sized.active_bytes / GB),
            "compute": {k: _r(t.value) for k, t in self.compute.items()},
            "compute_explained": {k: t.as_dict() for k, t in self.compute.items()},
            "candidates": [c.as_dict() for c in self.candidates],
            "notes": list(self.notes),
        }


def candidate_gpus(w: Workload, catalog: Catalog, only: list[str] | None = None) -> list[GPU]:
    ids = only or list(w.constraints.gpus) or list(catalog.gpus)
    return [catalog.gpus[i] for i in ids]


def estimate(w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
    led = training_ledger(w) if w.training else inference_ledger(w)
    s = led.sized
    compute = {
        "forward_flops_per_token": Term(2 * s.active, f"2 x {s.active / 1e9:,.2f}B active parameters", ("K04", "K01")),
        "train_flops_per_token": Term(6 * s.active, f"6 x {s.active / 1e9:,.2f}B active parameters", ("K08", "W04")),
    }
    if w.training:
        flops, per_param = _train_flops_per_token(w, led)
        compute["job_flops_per_token"] = Term(
            flops, f"{per_param} x {s.active / 1e9:,.2f}B active"
            + (" x 1.3 (activation checkpointing, C06)" if w.activation_checkpointing else "")
            + (" x 2 (policy and value models, C09)" if w.task == "rlhf" else "")
            + (" (LoRA: no weight gradients for the frozen base)" if per_param == 4 else ""), ("K08", "C06"))
    kv_per_token = None
    if led.kv:
        kv_per_token = led.kv.bytes_per_sequence(w.context_tokens) / w.context_tokens
    cands = [plan_candidate(w, led, g, catalog) for g in candidate_gpus(w, catalog, only)]
    return Estimate(w, led, cands, compute, kv_per_token, list(led.notes))


#: Heuristics that live in the estimator (arithmetic) rather than in a rule, and where.
KNOWLEDGE = {
    "K01": "size_model: total parameters set the weights' memory, active parameters the FLOPs and bytes per token",
    "K03": "catalog: every TFLOPS figure is dense (sparse/2) and compute uses the rate of one precision",
    "K04": "estimate: forward FLOP/token = 2 x active parameters; ideal figures at spec peaks beside efficiency-scaled ones",
    "K05": "inference_ledger: KV cache falls back to 50% of the weights when the architecture is unknown; kv_headroom_gb",
    "K06": "_inference_speed / ideal: decode time = bytes read per token / bandwidth, max'd with compute",
    "K07": "_inference_speed: prefill is compute-bound (FLOPs / rate), decode bandwidth-bound",
    "K08": "_train_flops_per_token: 6 x active; training_ledger: the 18 B/param accounting shown as the alternative",
    "K13": "pick_price: you rent whole instances; a tensor-parallel group must fit in one instance",
    "K16": "inference_ledger: weights (2X GB bf16, /2 8-bit, /4 4-bit), +20% overhead, +KV; ideal time = weights / bandwidth",
    "K17": "catalog/prices.yaml: A100 80 GB $2.5/h, H200 $5/h, 8x H200 $40/h (HF Inference Endpoints, Sept 2026)",
    "K19": "plan_candidate ideal: weights / VRAM and active weights / bandwidth",
    "K21": "catalog: every figure carries its source and date (docs/catalog.md)",
    "C01": "catalog/gpus.yaml: H200 = H100 compute with 141 GB at 4.8 TB/s, 700 W",
    "C05": "size_model + planner: 70B FP16 = 140 GB, two H200 (examples/llama-70b-fp16-serving.yaml, W10)",
    "C06": "training_ledger: weights, gradients, Adam 8 B + 4 B master, activations (checkpointing ~30% compute), x1.2",
    "C12": "_plan_inference/_plan_training: TP swept over 1, 2, 4, 8 within a node for every GPU",
    "C14": "plan_candidate: power per node = cards x TDP x 1.25 (8 x 700 W <-> 6-8 kW)",
    "C16": "job_cost and usd_per_job: hours x price x cards (+ expected rerun)",
    "T07": "usd_per_million_tokens; decision ranks batch inference by cost per million tokens",
    "A01": "catalog/gpus.yaml: H100 vs A100 figures (FP8, bandwidth, NVLink 4 900 GB/s)",
}
