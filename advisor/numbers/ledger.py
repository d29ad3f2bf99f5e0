"""How much memory: the model's weights per part and precision, the KV cache from the architecture,
and the inference and training ledgers, term by term with formulas and sources."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from advisor.inputs.catalog import Model
from advisor.numbers.terms import GB, Term, _gb
from advisor.inputs.workload import Workload

#: bytes per parameter (K16: 2X GB for X B params in bf16, half at 8 bits, a quarter at 4 bits;
#: MXFP4 stores 4.25 bits per parameter including its block scales, LEPHONGPHU_GPTOSS; NVFP4 4.5 bits:
#: an FP8 scale per 16 values, NVIDIA_NVFP4).
BYTES_PER_PARAM = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
                   "mxfp4": 4.25 / 8, "nvfp4": 4.5 / 8, "fp4": 0.5, "int4": 0.5}
SIXTEEN_BIT = ("bf16", "fp16")

INFERENCE_OVERHEAD = 0.20          # K16: +20% of the weights (Hugging Face Accelerate)
KV_FALLBACK_SHARE = 0.50           # K05: keep at least 50% of the weights for the KV cache
TRAINING_SAFETY = 1.20             # C06: sum x 1.2 = the minimum memory
# The memory a training engine needs free beyond the ledger's peak (issue 45 item 5): the C06 x1.2 is
# the estimate's own margin, not room for what no ledger counts: the CUDA context and library
# workspaces of each process (~0.5-1 GB), NCCL's communication buffers (NCCL_BUFFSIZE 4 MiB per channel
# and peer, NCCL environment variables guide), and the caching allocator's fragmentation (PyTorch CUDA
# semantics: "expandable_segments" exists to cut it). A plan keeps the larger of a share of the card and
# a floor free; serving engines keep 10% (vLLM gpu_memory_utilization 0.9, VLLM_ENGINE_ARGS), training
# frameworks reserve no fixed share, so the share is the point below which the rule
# risk-training-memory-near-capacity calls a plan at risk (5%), the floor the per-process figures above.
TRAINING_HEADROOM_SHARE = 0.05
TRAINING_HEADROOM_FLOOR_GB = 2.0
HEADROOM_SOURCE = ("the larger of 5% of the card and 2 GB (numbers/ledger.py TRAINING_HEADROOM_*: CUDA context and "
                   "workspaces, NCCL buffers, allocator fragmentation; vLLM keeps 10%, gpu_memory_utilization 0.9)")
ADAM_BYTES = {"adamw": 8.0, "adamw-8bit": 2.0, "sgd": 4.0}   # C06: Adam 8 B/param (two fp32 moments)
MASTER_BYTES = 4.0                 # C06: + 4 B/param fp32 master copy with 16-bit weights
ALT_BYTES_PER_PARAM = 18.0         # K08: 6 B weights + 8 B Adam + 4 B gradients (Hugging Face)
ACT_BYTES_PER_TOKEN_HIDDEN = 34    # Korthikanti et al. 2022: 34*s*b*h bytes per layer (16-bit, attention scores not stored)
CKPT_BYTES_PER_TOKEN_HIDDEN = 2    # with full recomputation only each layer's 16-bit input is kept
PREFILL_CHUNK_TOKENS = 8192        # assumption: prompt tokens processed at once (chunked prefill)
LORA_TARGET_MATRICES = 4           # assumption: adapters on q, k, v, o (each ~hidden x hidden)
LORA_FALLBACK_SHARE = 0.01         # assumption when the architecture is unknown: adapters = 1% of parameters


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

def training_headroom_gb(memory_gb: float) -> float:
    """GB a training plan keeps free on a card of `memory_gb` (TRAINING_HEADROOM_SHARE, _FLOOR_GB)."""
    return max(TRAINING_HEADROOM_SHARE * memory_gb, TRAINING_HEADROOM_FLOOR_GB)


def training_usable_bytes(memory_gb: float) -> float:
    """Bytes of a card a training plan may fill: its memory less the headroom it keeps free."""
    return (memory_gb - training_headroom_gb(memory_gb)) * GB


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
    adapter_params: float = 0.0     # LoRA/QLoRA: the trained adapters' parameters (the base is frozen)

    def bytes(self, key: str) -> float:
        t = self.terms.get(key)
        return t.value if t and t.value else 0.0

    @cached_property
    def expert_share(self) -> float:
        """Share of the weights in routed experts: they are sharded over every card of a TP group,
        whether each expert is split (TP) or the set of them is (EP). Read for every layout the planner
        times, and fixed by the (frozen) sized model: computed once per ledger."""
        raw = sum(pt.params * pt.bpp for pt in self.sized.parts)
        exp = sum(pt.params * pt.bpp for pt in self.sized.parts if pt.name == "experts")
        return exp / raw if raw else 0.0

    def training_expert_bytes(self) -> tuple[float, float, float]:
        """(weights, gradients, optimizer states) bytes of the routed experts in a training ledger: what
        expert parallelism shards over its ranks (Megatron-Core, DeepSpeed-MoE: each EP rank keeps the
        states of its own experts only). LoRA/QLoRA trains adapters on attention only (q, k, v, o), so
        its experts are frozen weights with no gradients or optimizer states."""
        e = self.expert_share
        if not e:
            return 0.0, 0.0, 0.0
        adapters = 2 * self.adapter_params      # 16-bit adapters sit in weights_gb beside the base
        if self.adapter_params:
            return e * (self.bytes("weights_gb") - adapters), 0.0, 0.0
        return e * self.bytes("weights_gb"), e * self.bytes("gradients_gb"), e * self.bytes("optimizer_gb")

    def weight_copies(self, attention_dp: int) -> float:
        """How many times one TP group holds the model's weights with `attention_dp` attention ranks:
        the experts once, the rest (attention, dense layers, embeddings) once per attention rank."""
        if attention_dp == 1:
            return 1.0
        e = self.expert_share
        return e + (1 - e) * attention_dp


def inference_ledger(w: Workload) -> Ledger:
    s = size_model(w)
    kv = kv_shape(w.model, w.kv_precision)
    notes = []
    terms = {"weights_gb": Term(s.weights_bytes, s.weights_formula, s.sources)}
    mtp = w.model.num("mtp_params_b")
    if w.speculative and mtp:
        # speculative decoding loads the model's multi-token-prediction module beside it, at the checkpoint's
        # bytes per parameter (its one attention layer's KV cache, 1/62 of DeepSeek-V3's, is not counted)
        bpp = s.weights_bytes / s.params
        terms["weights_gb"] = Term(s.weights_bytes + mtp * 1e9 * bpp,
                                   f"{s.weights_formula} + MTP module {mtp:,.2f}B x {bpp:.3g} B",
                                   tuple(dict.fromkeys(s.sources + tuple(w.model.fig("mtp_params_b").sources))))
    if kv:
        per_seq = kv.bytes_per_sequence(w.kv_tokens)
        what = (f"{w.kv_tokens:,}-token request (prompt {w.prompt_tokens:,} + output {w.output_tokens:,}; "
                f"context up to {w.context_tokens:,})" if w.kv_tokens < w.context_tokens else f"{w.kv_tokens:,}-token sequence")
        terms["kv_cache_gb"] = Term(per_seq * w.concurrency, f"{per_seq / 1e6:,.1f} MB per {what} "
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
    s, b = w.context_tokens, w.micro_batch if w.training else w.concurrency
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
    adapters = 0.0
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
    return Ledger(terms, s, None, False, alt, tuple(notes), adapters)

