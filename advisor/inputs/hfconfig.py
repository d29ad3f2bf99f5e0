"""Any model from its Hugging Face `config.json`: the architecture figures the estimator uses, and the
parameter counts computed from them (`model: path/to/config.json`, a folder holding one, or
`model: hf:ORG/NAME` with the optional extra `gpu-advisor[hub]`).

Parameter counts are the sum of the weight matrices, biases and norms the architecture's Transformers
implementation creates (embeddings, attention, MLP or experts, norms, the LM head unless tied), so
they match the published totals (the safetensors headers) within a fraction of a percent; the tests
pin them for every family below. Active parameters per token count the routed experts a token uses
(`experts_per_token` of `experts`) instead of all of them. A model type the advisor cannot count is
refused with its name, and a missing field is named; nothing is guessed.
"""
from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

from advisor.base.errors import Collector
# the reading is hfread's; ConfigError, MissingConfig, loads and check_repo_id are read here too (workload, tests)
from advisor.inputs.hfread import ConfigError, MissingConfig, _fail, check_repo_id, fetch, loads, plain_text, read  # noqa: F401
from advisor.inputs.schema import MODEL_FIELDS, Spec, check_value, check_model

DENSE = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "falcon"}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "deepseek_v2", "kimi_k2", "gpt_oss"}
WRAPPERS = {"gemma3", "mistral3", "llava", "qwen2_5_vl"}     # multimodal: the language model is text_config
SUPPORTED = sorted(DENSE | MOE | WRAPPERS)
TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3_text", "gemma3", "falcon"}
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}

#: The config fields that are a model figure, and which: each is bounded by the workload schema's own
#: Spec, so `num_key_value_heads: -8` in a config and `model: {kv_heads: -8}` get the same words.
FIGURE_OF = {
    "hidden_size": "hidden_size", "d_model": "hidden_size", "n_embd": "hidden_size",
    "num_hidden_layers": "layers", "n_layer": "layers", "num_layers": "layers",
    "num_attention_heads": "attention_heads", "n_head": "attention_heads",
    "num_key_value_heads": "kv_heads", "num_kv_heads": "kv_heads", "head_dim": "head_dim",
    "num_local_experts": "experts", "num_experts": "experts", "n_routed_experts": "experts",
    "num_experts_per_tok": "experts_per_token", "experts_per_token": "experts_per_token",
    "sliding_window": "sliding_window", "max_position_embeddings": "max_context",
}


def _int(lo: int, hi: int) -> Spec:
    return Spec("int", "", min=lo, max=hi)


#: Every field the counting reads, with its type and bounds ("text", "mapping", "texts", "indices":
#: checked by _check_fields itself).
FIELDS: dict[str, Spec | str] = {
    **{k: MODEL_FIELDS[f] for k, f in FIGURE_OF.items()},
    "vocab_size": _int(1, 10_000_000),
    "intermediate_size": _int(1, 10_000_000), "moe_intermediate_size": _int(1, 10_000_000),
    "ffn_hidden_size": _int(1, 10_000_000), "shared_expert_intermediate_size": _int(0, 10_000_000),
    "n_shared_experts": _int(0, 100_000), "first_k_dense_replace": _int(0, 10_000),
    "moe_layer_freq": _int(1, 10_000), "decoder_sparse_step": _int(1, 10_000), "num_nextn_predict_layers": _int(0, 100),
    "qk_nope_head_dim": _int(1, 100_000), "qk_rope_head_dim": _int(1, 100_000), "v_head_dim": _int(1, 100_000),
    "kv_lora_rank": _int(1, 1_000_000), "q_lora_rank": _int(1, 1_000_000),
    "max_window_layers": _int(0, 10_000), "sliding_window_pattern": _int(1, 10_000),
    "tie_word_embeddings": Spec("bool", ""), "attention_bias": Spec("bool", ""),
    "new_decoder_architecture": Spec("bool", ""), "use_sliding_window": Spec("bool", ""),
    "model_type": "text", "torch_dtype": "text", "dtype": "text", "topk_method": "text", "_name_or_path": "text",
    "text_config": "mapping", "vision_config": "mapping", "quantization_config": "mapping",
    "layer_types": "texts", "mlp_only_layers": "indices",
}
VISION_FIELDS: dict[str, Spec] = {
    "hidden_size": _int(1, 1_000_000), "intermediate_size": _int(1, 10_000_000), "num_hidden_layers": _int(1, 10_000),
    "patch_size": _int(1, 10_000), "image_size": _int(1, 100_000), "num_channels": _int(1, 1_000),
}


def _checked(c: dict, col: Collector, prefix: str = "", table: dict = FIELDS) -> dict:
    """`c` with every field the counting reads type-checked and bounded like a workload field (whole
    numbers, JSON booleans, texts with control characters dropped); problems go to `col`, and a field
    in error is dropped so that nothing downstream reads it."""
    out = dict(c)
    for k, spec in table.items():
        v = c.get(k)
        if v is None:              # JSON null: not set, as Transformers reads it
            out.pop(k, None)
            continue
        name = prefix + k
        if isinstance(spec, Spec):
            v = check_value(spec, v, col, name, None)
        elif spec == "text":
            v = plain_text(v) if isinstance(v, str) else col.add(f"must be a text (got {type(v).__name__})", None, name)
        elif spec == "mapping" and not isinstance(v, dict):
            v = col.add(f"must be a JSON object (got {type(v).__name__})", None, name)
        elif spec == "texts" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            v = col.add("must be a list of texts", None, name)
        elif spec == "indices" and not (isinstance(v, list) and all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 10_000 for x in v)):
            v = col.add("must be a list of layer numbers (whole numbers from 0)", None, name)
        if v is None:
            out.pop(k)
        else:
            out[k] = v
    return out


def _need(c: dict, key: str, where: str, alt: tuple[str, ...] = (), prefix: str = ""):
    """The first of `key` and `alt` the config sets (already checked by _checked)."""
    for k in (key, *alt):
        if c.get(k) is not None:
            return c[k]
    _fail(f"{key} is missing: the architecture cannot be counted without it", where, prefix + key)


def _sliding_layers(c: dict, mt: str, layers: int) -> tuple[int | None, int]:
    """(window, layers that use it) from layer_types, Gemma's patterns or Mistral's all-layer window."""
    window = c.get("sliding_window")
    types = c.get("layer_types")
    if isinstance(types, list) and types:
        n = sum(1 for t in types if t == "sliding_attention")
        return (window, n) if n and window else (None, 0)
    if mt in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        if c.get("use_sliding_window") and window:
            return window, max(0, layers - int(c.get("max_window_layers", layers)))
        return None, 0
    if not window:
        return None, 0
    if mt == "gemma2":
        return window, math.ceil(layers / 2)                    # even layers slide, odd layers see everything
    if mt in ("gemma3_text", "gemma3"):
        pattern = int(c.get("sliding_window_pattern") or 6)     # every 6th layer is global
        return window, layers - layers // pattern
    if mt in ("mistral", "mixtral", "phi3"):
        return window, layers                                   # Mistral 7B v0.1: every layer slides
    return None, 0


def _vision_params(v: dict) -> int:
    """A ViT/SigLIP vision tower: layers x (attention + MLP with biases + 2 layer norms) + patch and
    position embeddings + the final norm."""
    h, i, n = int(v.get("hidden_size", 0)), int(v.get("intermediate_size", 0)), int(v.get("num_hidden_layers", 0))
    if not (h and i and n):
        return 0
    patch, size, ch = int(v.get("patch_size", 14)), int(v.get("image_size", 224)), int(v.get("num_channels", 3))
    per_layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
    return n * per_layer + ch * patch * patch * h + h + (size // patch) ** 2 * h + 2 * h


def derive(cfg: dict, where: str = "config.json") -> dict:
    """The catalog figures of the model a config describes (the estimator's field names), with the
    parameter breakdown under '_parts'."""
    col = Collector(where)
    cfg = _checked(cfg, col)
    col.raise_if_any()
    mt = cfg.get("model_type") or ""
    if not mt:
        _fail(f"model_type is missing (known: {', '.join(SUPPORTED)})", where, "model_type")
    if mt not in SUPPORTED:
        _fail(f"model_type '{mt}' is not one the advisor can count (known: {', '.join(SUPPORTED)}); "
              "give the model as a mapping of params_b, layers, kv_heads, head_dim ... instead", where, "model_type")
    outer = cfg
    c, pre, vision = _language_model(cfg, mt, col, where) if mt in WRAPPERS else (cfg, "", 0)
    mt = c.get("model_type", mt)

    def need(key, *alt):
        return _need(c, key, where, alt, pre)

    V, H, L, nh, nkv, d = _dimensions(c, mt, need, where, pre)
    tied = bool(c.get("tie_word_embeddings", outer.get("tie_word_embeddings", mt in TIED_BY_DEFAULT)))
    norms_per_layer = (4 if mt in ("gemma2", "gemma3_text", "falcon") else 2) * H    # Falcon: 2 LayerNorms with bias
    if mt == "falcon" and not c.get("new_decoder_architecture") and c.get("parallel_attn", True):
        norms_per_layer = 2 * H          # Falcon's first decoder with parallel attention: one LayerNorm per layer
    parts = {"embeddings": V * H, "lm_head": 0 if tied else V * H, "final_norm": 2 * H if mt == "falcon" else H}
    attn, mla = _attention(c, mt, need, H, nh, nkv, d)
    parts["attention"] = attn * L
    parts["norms"] = norms_per_layer * L
    experts = k = None
    expert_total = per_expert = moe_layers = 0      # routed expert weights in all layers, one expert's, layers with experts
    if mt in MOE:
        experts, k, per_expert, moe_layers, dense, router, shared = MOE_COUNTS[mt](c, need, H, L)
        expert_total = experts * per_expert * moe_layers
        parts["experts"] = expert_total
        parts["dense_mlp"] = dense
        parts["router_and_shared"] = (router + shared) * moe_layers
    elif mt == "falcon":   # dense_h_to_4h and dense_4h_to_h, no gate, no biases (bias: false)
        parts["mlp"] = 2 * H * int(c.get("ffn_hidden_size") or 4 * H) * L
    else:
        parts["mlp"] = 3 * H * int(need("intermediate_size")) * L
    parts["vision"] = vision
    total = sum(parts.values())
    active = total - (expert_total - (k * per_expert * moe_layers if experts else 0)) - vision
    window, windowed = _sliding_layers(c, mt, L)
    out = {
        "params_b": total / 1e9, "active_params_b": active / 1e9, "layers": L, "hidden_size": H,
        "attention_heads": nh, "kv_heads": nkv, "head_dim": d, "precision": _precision(c, outer),
        "max_context": int(c.get("max_position_embeddings") or 0) or None,
        "tied_embeddings": tied, "model_type": mt,
    }
    if experts:
        out.update(experts=experts, experts_per_token=k, expert_params_b=expert_total / 1e9, moe_layers=moe_layers)
    nextn = int(c.get("num_nextn_predict_layers") or 0)
    if nextn and experts:
        # DeepSeek-V3's multi-token-prediction module, loaded only to draft tokens (speculative decoding):
        # per predicted token one MoE decoder layer, the projection of [embedding; hidden] (2H x H), two
        # RMS norms, and the checkpoint's own copies of the embedding and output head (V x H each)
        layer = attn + norms_per_layer + experts * per_expert + router + shared
        out.update(mtp_layers=nextn, mtp_params_b=nextn * (layer + 2 * H * H + 3 * H + 2 * V * H) / 1e9)
    if mla:
        out["mla_kv_dim"] = mla
    if window:
        out.update(sliding_window=int(window), sliding_window_layers=int(windowed))
    _check_figures(out, c, col, pre)
    out["_parts"] = parts
    return out


def _language_model(cfg: dict, mt: str, col: Collector, where: str) -> tuple[dict, str, int]:
    """A multimodal config's language model (its text_config, checked, with the model type and tied
    embeddings it inherits), the prefix its fields are named with, and the vision tower's parameters
    (with Gemma 3's projector)."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        _fail("text_config is missing (a multimodal config keeps its language model there)", where, "text_config")
    pre = "text_config."
    c = _checked(text, col, pre)
    vision = _checked(cfg.get("vision_config") or {}, col, "vision_config.", VISION_FIELDS)
    col.raise_if_any()
    if (vision.get("patch_size") or 14) > (vision.get("image_size") or 224):
        _fail("cannot exceed vision_config.image_size", where, "vision_config.patch_size")
    c.setdefault("model_type", {"gemma3": "gemma3_text", "mistral3": "mistral"}.get(mt, "llama"))
    if "tie_word_embeddings" not in c and "tie_word_embeddings" in cfg:
        c["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    extra = _vision_params(vision)
    if extra and mt == "gemma3":     # projector: a matrix into the text width and an RMS norm
        extra += int(vision["hidden_size"]) * int(_need(c, "hidden_size", where, prefix=pre)) + int(vision["hidden_size"])
    if c["model_type"] not in SUPPORTED or c["model_type"] in WRAPPERS:
        _fail(f"text_config.model_type '{c['model_type']}' is not one the advisor can count", where, "text_config.model_type")
    return c, pre, extra


def _dimensions(c: dict, mt: str, need, where: str, pre: str) -> tuple[int, int, int, int, int, int]:
    """(vocabulary, hidden size, layers, heads, KV heads, head dim), and the per-layer fields checked
    against the layer count."""
    V = int(need("vocab_size"))
    H = int(need("hidden_size", "d_model", "n_embd"))
    L = int(need("num_hidden_layers", "n_layer", "num_layers"))
    nh = int(need("num_attention_heads", "n_head"))
    types = c.get("layer_types")
    if types and len(types) != L:
        _fail(f"must name one type per layer ({len(types):,} types for {L:,} layers)", where, pre + "layer_types")
    if any(i >= L for i in c.get("mlp_only_layers") or ()):
        _fail(f"must name layers below num_hidden_layers ({L:,})", where, pre + "mlp_only_layers")
    if (c.get("first_k_dense_replace") or 0) > L:
        _fail(f"cannot exceed num_hidden_layers ({c['first_k_dense_replace']:,} > {L:,})", where, pre + "first_k_dense_replace")
    if mt == "falcon" and not c.get("new_decoder_architecture"):
        # Falcon's first decoder (Falcon 7B): one K and V head with multi_query (FalconConfig's default),
        # else one per query head; num_kv_heads is read only by the new decoder (transformers FalconAttention)
        nkv = 1 if c.get("multi_query", True) else nh
    else:
        nkv = int(c.get("num_key_value_heads") or c.get("num_kv_heads") or nh)
    d = int(c.get("head_dim") or H // nh)
    return V, H, L, nh, nkv, d


def _attention(c: dict, mt: str, need, H: int, nh: int, nkv: int, d: int) -> tuple[int, int | None]:
    """(attention parameters per layer, MLA's KV latent width or None)."""
    if mt in ("deepseek_v3", "deepseek_v2", "kimi_k2"):
        nope, rope = int(need("qk_nope_head_dim")), int(need("qk_rope_head_dim"))
        vd, kvr = int(need("v_head_dim")), int(need("kv_lora_rank"))
        qr = c.get("q_lora_rank")
        q = (H * qr + qr + qr * nh * (nope + rope)) if qr else H * nh * (nope + rope)
        return q + H * (kvr + rope) + kvr + kvr * nh * (nope + vd) + nh * vd * H, kvr + rope
    attn = H * nh * d + 2 * H * nkv * d + nh * d * H
    if c.get("attention_bias") or mt == "gpt_oss":
        attn += nh * d + 2 * nkv * d + H                                   # q, k, v and o biases
    elif mt in ("qwen2", "qwen2_moe"):
        attn += nh * d + 2 * nkv * d                                       # Qwen2: q, k, v biases
    if mt == "gpt_oss":
        attn += nh                                                         # attention sinks
    if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
        attn += 2 * d                                                      # q_norm, k_norm
    return attn, None


# Each MoE family's experts: (experts, experts per token, parameters of one expert, layers with
# experts, dense MLP parameters in all layers, router and shared-expert parameters per MoE layer).

def _mixtral_experts(c: dict, need, H: int, L: int) -> tuple:
    experts, k = int(need("num_local_experts")), int(need("num_experts_per_tok"))
    return experts, k, 3 * H * int(need("intermediate_size")), L, 0, H * experts, 0


def _qwen_experts(c: dict, need, H: int, L: int) -> tuple:
    experts, k = int(need("num_experts")), int(need("num_experts_per_tok"))
    only = set(c.get("mlp_only_layers") or [])
    step = int(c.get("decoder_sparse_step") or 1)
    moe_layers = len([i for i in range(L) if i not in only and (i + 1) % step == 0])
    dense = (L - moe_layers) * 3 * H * int(c.get("intermediate_size") or 0)
    sI = int(c.get("shared_expert_intermediate_size") or 0)
    shared = (3 * H * sI + H) if sI else 0                                 # shared expert and its gate
    return experts, k, 3 * H * int(need("moe_intermediate_size")), moe_layers, dense, H * experts, shared


def _deepseek_experts(c: dict, need, H: int, L: int) -> tuple:
    experts, k = int(need("n_routed_experts")), int(need("num_experts_per_tok"))
    mI, I = int(need("moe_intermediate_size")), int(need("intermediate_size"))
    first_dense = int(c.get("first_k_dense_replace") or 0)
    step = int(c.get("moe_layer_freq") or 1)
    moe_layers = sum(1 for i in range(L) if i >= first_dense and i % step == 0)
    router = H * experts + (experts if c.get("topk_method") == "noaux_tc" else 0)
    shared = int(c.get("n_shared_experts") or 0) * 3 * H * mI
    return experts, k, 3 * H * mI, moe_layers, (L - moe_layers) * 3 * H * I, router, shared


def _gpt_oss_experts(c: dict, need, H: int, L: int) -> tuple:
    """Fused gate/up with biases, down with bias; a router with bias."""
    experts = int(need("num_local_experts"))
    k = int(need("num_experts_per_tok", "experts_per_token"))
    I = int(need("intermediate_size"))
    return experts, k, H * 2 * I + 2 * I + I * H + H, L, 0, H * experts + experts, 0


MOE_COUNTS = {"mixtral": _mixtral_experts, "qwen2_moe": _qwen_experts, "qwen3_moe": _qwen_experts,
              "deepseek_v3": _deepseek_experts, "deepseek_v2": _deepseek_experts, "kimi_k2": _deepseek_experts,
              "gpt_oss": _gpt_oss_experts}


def _precision(c: dict, outer: dict):
    """The shipped precision: the config's dtype, or its quantization method (MXFP4 experts, FP8)."""
    dtype = str(c.get("torch_dtype") or c.get("dtype") or outer.get("torch_dtype") or "bfloat16")
    precision = DTYPES.get(dtype, "bf16")
    q = outer.get("quantization_config") or c.get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower() if isinstance(q, dict) else ""
    if method == "mxfp4":
        return {"experts": "mxfp4", "rest": "bf16"}
    if method == "fp8":
        return "fp8"
    return precision


_OTHER_FIELD = re.compile(r"\b(exceed|divide) ([a-z_]+)")


def _check_figures(out: dict, c: dict, col: Collector, pre: str) -> None:
    """The derived figures through the workload's own model check (bounds, and figures that contradict
    each other: KV heads that do not divide the heads, more experts per token than experts, active
    parameters above the total), each problem named by the config field it came from."""
    names = {}
    for k, figure in FIGURE_OF.items():
        if c.get(k) is not None:
            names.setdefault(figure, pre + k)
    figures = {k: v for k, v in out.items() if k in MODEL_FIELDS and k != "precision" and v is not None}
    if c.get("head_dim") is None:        # derived as hidden_size / heads: the check wants the heads to divide it
        figures.pop("head_dim")
    before = len(col.problems)
    check_model(figures, col, name=lambda k: names.get(k, k))
    col.problems[before:] = [replace(p, message=_OTHER_FIELD.sub(lambda m: f"{m[1]} {names.get(m[2], m[2])}", p.message))
                             for p in col.problems[before:]]
    col.raise_if_any()


def kv_bytes_per_token(fig: dict, kv_bytes: float = 2.0, tokens: int | None = None) -> float:
    """KV-cache bytes per token (K and V in every full layer; MLA: one latent per layer; window layers
    hold at most `window` tokens, averaged over `tokens` when given)."""
    L = fig["layers"]
    per_layer = fig["mla_kv_dim"] if fig.get("mla_kv_dim") else 2 * fig["kv_heads"] * fig["head_dim"]
    w, wl = fig.get("sliding_window"), fig.get("sliding_window_layers", 0)
    if w and tokens:
        return per_layer * kv_bytes * ((L - wl) + wl * min(tokens, w) / tokens)
    return per_layer * kv_bytes * L


def model_from(spec: str, base: Path | None = None):
    """A catalog Model for `model: path` or `model: hf:ORG/NAME` (figures sourced to the config)."""
    from advisor.inputs.catalog import Model
    from advisor.inputs.figures import Figure
    if spec.startswith("hf:"):
        repo = spec[3:].strip()
        path = fetch(repo)
        cfg, where = read(path)
        label = f"hf:{repo}"           # (a checked repository id: plain text)
    else:
        cfg, where = read(spec, base)
        label = where
    fig = derive(cfg, where)
    src = (f"config.json ({label})",)
    note = f"computed from {label} ({fig['model_type']}{', tied embeddings' if fig['tied_embeddings'] else ''})"
    figures = {}
    for key in ("params_b", "active_params_b", "expert_params_b", "experts", "experts_per_token", "moe_layers", "layers", "hidden_size",
                "attention_heads", "kv_heads", "head_dim", "sliding_window", "sliding_window_layers", "mla_kv_dim",
                "precision", "max_context"):
        if fig.get(key) is not None:
            v = fig[key]
            figures[key] = Figure(round(v, 4) if isinstance(v, float) else v, src, note if key == "params_b" else None)
    # (_name_or_path is plain text once read; a folder's name may hold anything a file system allows)
    name = plain_text(str(cfg.get("_name_or_path") or (repo if spec.startswith("hf:") else Path(where).parent.name))) or "model"
    return Model("custom", f"{name} (config.json)", (), figures, where, None)
