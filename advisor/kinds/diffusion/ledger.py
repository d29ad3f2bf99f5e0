"""What one replica of a diffusion pipeline holds: the denoiser's weights (both experts of a two-expert
video model), the text encoders', the VAE's, the activations of one denoiser pass at the resolution
(attention by flash kernels: linear in the tokens, no score matrix kept), the VAE decoder's working
memory, and the runtime's own. A `Ledger` of advisor.numbers.ledger, so that the memo's ledger table,
the memory rules and the record read it as they read an LLM's; its KV cache is none.
"""
from __future__ import annotations

from advisor.inputs.workload import Workload
from advisor.kinds.diffusion.shape import Shape
from advisor.numbers.ledger import BYTES_PER_PARAM, Ledger, Part, Sized
from advisor.numbers.terms import GB, Term

#: values live per token in one block's forward (q, k, v, attention output, the 4x MLP's input and
#: output, the norms' and residual's): about twelve hidden-size vectors, 16-bit (Korthikanti et al.'s
#: per-layer inventory for inference, where only one block's activations live at a time)
ACTIVATION_VECTORS_PER_TOKEN = 12
#: the VAE decoder's working memory per output megapixel (per frame chunk for video): its widest
#: feature maps (128-512 channels at full and half resolution, 16-bit) live at once
VAE_BYTES_PER_MEGAPIXEL = 1.0 * GB
#: a causal video VAE decodes a few latent frames at a time (Wan-VAE and HunyuanVideo's: chunks of 4 frames)
VIDEO_DECODE_FRAMES = 4
#: the CUDA context, the kernels' workspaces and the allocator's slack
RUNTIME_BYTES = 1.5 * GB
SOURCES = ("Korthikanti2022", "K16")


def precision_of(w: Workload) -> str:
    return w.precision or w.model.precision.get("all", "bf16")


def ledger(w: Workload, s: Shape) -> Ledger:
    m = w.model
    p = precision_of(w)
    bpp = BYTES_PER_PARAM[p]
    params, active = m.num("params_b") * 1e9, m.num("active_params_b") * 1e9
    encoders = m.fig("text_encoders").value or {}
    enc_params = sum(encoders.values()) * 1e9
    vae_params = m.num("vae_params_b") * 1e9
    # text encoders and VAE stay in 16 bits (an fp8 denoiser is the common recipe; T5 in fp8 loses quality)
    weights = params * bpp + enc_params * 2 + vae_params * 2
    enc_words = " + ".join(f"{n} {v:g}B" for n, v in encoders.items())
    moe = f" (both experts: {active / 1e9:,.0f}B run per step)" if params > active else ""
    w_formula = (f"denoiser {params / 1e9:,.1f}B x {bpp:g} B ({p}){moe} + text encoders ({enc_words}) x 2 B "
                 f"+ VAE {vae_params / 1e9:.3f}B x 2 B")
    hidden = m.num("hidden_size")
    seq = s.tokens + (s.text_tokens if s.joined else 0)
    acts = ACTIVATION_VECTORS_PER_TOKEN * seq * hidden * 2
    decode_mp = s.width * s.height / 1e6 * (min(s.frames, VIDEO_DECODE_FRAMES) if s.frames > 1 else 1)
    vae_ws = VAE_BYTES_PER_MEGAPIXEL * decode_mp
    a_formula = (f"{ACTIVATION_VECTORS_PER_TOKEN} x {seq:,} positions x {hidden:g} hidden x 2 B (one block's pass; flash attention "
                 f"keeps no score matrix) + VAE decoder {VAE_BYTES_PER_MEGAPIXEL / GB:g} GB per megapixel x {decode_mp:.2f} MP")
    terms = {
        "weights_gb": Term(weights, w_formula, tuple(dict.fromkeys(m.fig("params_b").sources + m.fig("text_encoders").sources))),
        "kv_cache_gb": Term(0.0, "none: a denoiser keeps no cache between steps", ()),
        "activations_gb": Term(acts + vae_ws, a_formula, ("Korthikanti2022",)),
        "gradients_gb": Term(0.0, "inference", ()),
        "optimizer_gb": Term(0.0, "inference", ()),
        "overhead_gb": Term(RUNTIME_BYTES, f"{RUNTIME_BYTES / GB:g} GB: CUDA context, kernel workspaces, allocator slack (assumption)", ()),
    }
    total = sum(t.value for t in terms.values())
    terms["total_gb"] = Term(total, "weights + activations + runtime", ())
    sized = Sized(params, active, (Part("all", params, active, p),), None, None, params * bpp, active * bpp,
                  w_formula, tuple(m.fig("params_b").sources), p)
    return Ledger(terms, sized, None, False, {}, ())


def per_card_bytes(led: Ledger, sp: int) -> float:
    """Bytes per card of a replica whose tokens are split over `sp` sequence-parallel ranks: the weights
    whole on each (Ulysses and ring attention replicate them), the activations split."""
    return led.bytes("weights_gb") + led.bytes("overhead_gb") + led.bytes("activations_gb") / sp
