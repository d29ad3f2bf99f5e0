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

import json
import math
from pathlib import Path

from advisor.base.errors import InputError, Problem
from advisor.base.files import note_read

DENSE = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "falcon"}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "deepseek_v2", "kimi_k2", "gpt_oss"}
WRAPPERS = {"gemma3", "mistral3", "llava", "qwen2_5_vl"}     # multimodal: the language model is text_config
SUPPORTED = sorted(DENSE | MOE | WRAPPERS)
TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3_text", "gemma3", "falcon"}
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}


class ConfigError(InputError):
    pass


def _fail(msg: str, where: str, field: str | None = None):
    raise ConfigError(Problem(msg, where, None, field))


def read(path: str | Path, base: Path | None = None) -> tuple[dict, str]:
    """The parsed config.json at `path` (a file, or a folder holding config.json), relative to `base`."""
    p = Path(path).expanduser()
    if not p.is_absolute() and base is not None and not p.exists():
        p = base / p
    if p.is_dir():
        p = p / "config.json"
    note_read(p, "config.json")
    if not p.is_file():
        _fail("no such config.json (give a file or a folder holding config.json)", str(path), "model")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        _fail("not a UTF-8 text file", str(p), "model")
    except json.JSONDecodeError as exc:
        raise ConfigError(Problem(f"JSON syntax error: {exc.msg} (column {exc.colno})", str(p), exc.lineno, "model"))
    if not isinstance(data, dict):
        _fail("config.json must be a JSON object", str(p), "model")
    return data, str(p)


def fetch(repo: str) -> Path:
    """config.json of a Hugging Face repository (cached by huggingface_hub under HF_HOME). Needs the
    optional extra `gpu-advisor[hub]`; offline, gated, missing repositories are clear one-line errors."""
    where = f"hf:{repo}"
    if not repo or repo.count("/") != 1 or any(not part for part in repo.split("/")):
        _fail("expected hf:ORG/NAME", where, "model")
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError:
        _fail("reading a model from the Hugging Face Hub needs the optional extra: pip install 'gpu-advisor[hub]'",
              where, "model")
    try:
        return Path(huggingface_hub.hf_hub_download(repo_id=repo, filename="config.json"))
    except errors.GatedRepoError:           # (a RepositoryNotFoundError: caught first)
        _fail("the repository is gated: accept its licence on the Hub and log in (huggingface-cli login or HF_TOKEN)",
              where, "model")
    except errors.RepositoryNotFoundError:
        _fail("no such repository on the Hub (or it is private: log in)", where, "model")
    except (errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled) as exc:   # (an EntryNotFoundError)
        _fail("cannot reach the Hugging Face Hub and its config.json is not in the local cache "
              f"(offline? {type(exc).__name__})", where, "model")
    except errors.EntryNotFoundError:
        _fail("the repository has no config.json", where, "model")
    except errors.HfHubHTTPError as exc:
        _fail(f"the Hub refused the request ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})", where, "model")
    except OSError as exc:                    # no network at all
        _fail(f"cannot reach the Hugging Face Hub ({type(exc).__name__})", where, "model")


def _need(c: dict, key: str, where: str, alt: tuple[str, ...] = ()):
    for k in (key, *alt):
        v = c.get(k)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                _fail(f"{k} must be a non-negative number (got {v!r})", where, k)
            return v
    _fail(f"{key} is missing: the architecture cannot be counted without it", where, key)


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
    mt = str(cfg.get("model_type") or "")
    if not mt:
        _fail(f"model_type is missing (known: {', '.join(SUPPORTED)})", where, "model_type")
    if mt not in SUPPORTED:
        _fail(f"model_type '{mt}' is not one the advisor can count (known: {', '.join(SUPPORTED)}); "
              "give the model as a mapping of params_b, layers, kv_heads, head_dim ... instead", where, "model_type")
    extra = 0
    outer = cfg
    if mt in WRAPPERS:
        text = cfg.get("text_config")
        if not isinstance(text, dict):
            _fail("text_config is missing (a multimodal config keeps its language model there)", where, "text_config")
        vision = cfg.get("vision_config") if isinstance(cfg.get("vision_config"), dict) else {}
        c = dict(text)
        c.setdefault("model_type", {"gemma3": "gemma3_text", "mistral3": "mistral"}.get(mt, "llama"))
        if "tie_word_embeddings" not in c and "tie_word_embeddings" in cfg:
            c["tie_word_embeddings"] = cfg["tie_word_embeddings"]
        extra = _vision_params(vision)
        if extra and mt == "gemma3":     # projector: a matrix into the text width and an RMS norm
            extra += int(vision["hidden_size"]) * int(_need(c, "hidden_size", where)) + int(vision["hidden_size"])
        mt = c["model_type"]
        if mt not in SUPPORTED or mt in WRAPPERS:
            _fail(f"text_config.model_type '{mt}' is not one the advisor can count", where, "text_config.model_type")
    else:
        c = cfg
    V = int(_need(c, "vocab_size", where))
    H = int(_need(c, "hidden_size", where, ("d_model", "n_embd")))
    L = int(_need(c, "num_hidden_layers", where, ("n_layer", "num_layers")))
    nh = int(_need(c, "num_attention_heads", where, ("n_head",)))
    if mt == "falcon" and not c.get("new_decoder_architecture"):
        _fail("only Falcon's new decoder architecture (new_decoder_architecture: true, Falcon 40B/180B) is counted",
              where, "new_decoder_architecture")
    nkv = int(c.get("num_key_value_heads") or c.get("num_kv_heads") or nh)
    d = int(c.get("head_dim") or H // nh)
    tied = bool(c.get("tie_word_embeddings", outer.get("tie_word_embeddings", mt in TIED_BY_DEFAULT)))
    embed = V * H
    head = 0 if tied else V * H
    norms_per_layer = (4 if mt in ("gemma2", "gemma3_text", "falcon") else 2) * H    # Falcon: 2 LayerNorms with bias
    parts = {"embeddings": embed, "lm_head": head, "final_norm": 2 * H if mt == "falcon" else H}

    # attention
    mla = None
    if mt in ("deepseek_v3", "deepseek_v2", "kimi_k2"):
        nope, rope = int(_need(c, "qk_nope_head_dim", where)), int(_need(c, "qk_rope_head_dim", where))
        vd, kvr = int(_need(c, "v_head_dim", where)), int(_need(c, "kv_lora_rank", where))
        qr = c.get("q_lora_rank")
        q = (H * qr + qr + qr * nh * (nope + rope)) if qr else H * nh * (nope + rope)
        attn = q + H * (kvr + rope) + kvr + kvr * nh * (nope + vd) + nh * vd * H
        mla = kvr + rope
    else:
        attn = H * nh * d + 2 * H * nkv * d + nh * d * H
        if c.get("attention_bias") or mt == "gpt_oss":
            attn += nh * d + 2 * nkv * d + H                                   # q, k, v and o biases
        elif mt in ("qwen2", "qwen2_moe"):
            attn += nh * d + 2 * nkv * d                                       # Qwen2: q, k, v biases
        if mt == "gpt_oss":
            attn += nh                                                         # attention sinks
        if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
            attn += 2 * d                                                      # q_norm, k_norm
    parts["attention"] = attn * L
    parts["norms"] = norms_per_layer * L

    # MLP or experts
    experts = k = None
    expert_total = 0          # routed expert weights in all layers
    per_expert = 0
    moe_layers = 0
    if mt in MOE:
        if mt == "mixtral":
            experts, k = int(_need(c, "num_local_experts", where)), int(_need(c, "num_experts_per_tok", where))
            I = int(_need(c, "intermediate_size", where))
            per_expert, moe_layers = 3 * H * I, L
            dense, router, shared = 0, H * experts, 0
        elif mt in ("qwen2_moe", "qwen3_moe"):
            experts, k = int(_need(c, "num_experts", where)), int(_need(c, "num_experts_per_tok", where))
            mI = int(_need(c, "moe_intermediate_size", where))
            per_expert = 3 * H * mI
            only = set(c.get("mlp_only_layers") or [])
            step = int(c.get("decoder_sparse_step") or 1)
            moe_idx = [i for i in range(L) if i not in only and (i + 1) % step == 0]
            moe_layers = len(moe_idx)
            dense = (L - moe_layers) * 3 * H * int(c.get("intermediate_size") or 0)
            router = H * experts
            sI = int(c.get("shared_expert_intermediate_size") or 0)
            shared = (3 * H * sI + H) if sI else 0                             # shared expert and its gate
        elif mt in ("deepseek_v3", "deepseek_v2", "kimi_k2"):
            experts, k = int(_need(c, "n_routed_experts", where)), int(_need(c, "num_experts_per_tok", where))
            mI, I = int(_need(c, "moe_intermediate_size", where)), int(_need(c, "intermediate_size", where))
            first_dense = int(c.get("first_k_dense_replace") or 0)
            step = int(c.get("moe_layer_freq") or 1)
            moe_layers = sum(1 for i in range(L) if i >= first_dense and i % step == 0)
            per_expert = 3 * H * mI
            dense = (L - moe_layers) * 3 * H * I
            router = H * experts + (experts if c.get("topk_method") == "noaux_tc" else 0)
            shared = int(c.get("n_shared_experts") or 0) * 3 * H * mI
        else:   # gpt_oss: fused gate/up with biases, down with bias; router with bias
            experts = int(_need(c, "num_local_experts", where))
            k = int(_need(c, "num_experts_per_tok", where, ("experts_per_token",)))
            I = int(_need(c, "intermediate_size", where))
            per_expert, moe_layers = H * 2 * I + 2 * I + I * H + H, L
            dense, router, shared = 0, H * experts + experts, 0
        expert_total = experts * per_expert * moe_layers
        parts["experts"] = expert_total
        parts["dense_mlp"] = dense
        parts["router_and_shared"] = (router + shared) * moe_layers
    elif mt == "falcon":   # dense_h_to_4h and dense_4h_to_h, no gate, no biases (bias: false)
        I = int(c.get("ffn_hidden_size") or 4 * H)
        parts["mlp"] = 2 * H * I * L
    else:
        I = int(_need(c, "intermediate_size", where))
        parts["mlp"] = 3 * H * I * L
    parts["vision"] = extra
    total = sum(parts.values())
    active = total - (expert_total - (k * per_expert * moe_layers if experts else 0)) - extra
    window, windowed = _sliding_layers(c, mt, L)
    dtype = str(c.get("torch_dtype") or c.get("dtype") or outer.get("torch_dtype") or "bfloat16")
    precision = DTYPES.get(dtype, "bf16")
    q = outer.get("quantization_config") or c.get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower() if isinstance(q, dict) else ""
    if method == "mxfp4":
        precision = {"experts": "mxfp4", "rest": "bf16"}
    elif method == "fp8":
        precision = "fp8"
    out = {
        "params_b": total / 1e9, "active_params_b": active / 1e9, "layers": L, "hidden_size": H,
        "attention_heads": nh, "kv_heads": nkv, "head_dim": d, "precision": precision,
        "max_context": int(c.get("max_position_embeddings") or 0) or None,
        "tied_embeddings": tied, "model_type": mt,
    }
    if experts:
        out.update(experts=experts, experts_per_token=k, expert_params_b=expert_total / 1e9)
    if mla:
        out["mla_kv_dim"] = mla
    if window:
        out.update(sliding_window=int(window), sliding_window_layers=int(windowed))
    out["_parts"] = parts
    return out


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
    from advisor.inputs.catalog import Figure, Model
    if spec.startswith("hf:"):
        path = fetch(spec[3:].strip())
        cfg, where = read(path)
        label = spec
    else:
        cfg, where = read(spec, base)
        label = where
    fig = derive(cfg, where)
    src = (f"config.json ({label})",)
    note = f"computed from {label} ({fig['model_type']}{', tied embeddings' if fig['tied_embeddings'] else ''})"
    figures = {}
    for key in ("params_b", "active_params_b", "expert_params_b", "experts", "experts_per_token", "layers", "hidden_size",
                "attention_heads", "kv_heads", "head_dim", "sliding_window", "sliding_window_layers", "mla_kv_dim",
                "precision", "max_context"):
        if fig.get(key) is not None:
            v = fig[key]
            figures[key] = Figure(round(v, 4) if isinstance(v, float) else v, src, note if key == "params_b" else None)
    name = str(cfg.get("_name_or_path") or (spec[3:] if spec.startswith("hf:") else Path(where).parent.name) or "model")
    return Model("custom", f"{name} (config.json)", (), figures, where, None)
