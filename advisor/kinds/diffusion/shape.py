"""What one image or clip asks of a diffusion model: its latent tokens (the resolution over the VAE
factor and the patch size, times the latent frames of a clip), the denoiser passes per step (two with
classifier-free guidance unless the model is guidance-distilled), and the FLOPs of each part: the
denoiser per step (2 x parameters per token, attention quadratic in the tokens), the text encoders once
per request, the VAE decoder once per image or frame.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.inputs.catalog import Model
from advisor.inputs.workload import Workload


@dataclass(frozen=True)
class Shape:
    """One image or clip of the workload, in the model's terms."""

    width: int
    height: int
    frames: int                  # 1 for an image
    latent_frames: int           # 1 for an image
    tokens: int                  # latent tokens the denoiser attends over (the joined text tokens apart)
    text_tokens: int
    joined: bool                 # the text tokens join the image tokens in every block (MMDiT)
    steps: int
    guidance: float
    passes: int                  # denoiser passes per step: 2 with classifier-free guidance
    images: int                  # images per request (1 per clip)
    step_flops: float            # one denoiser pass at one step
    attention_flops: float       # of which attention (quadratic in the tokens)
    text_flops: float            # the text encoders, once per request
    vae_flops: float             # the VAE decoder, per image or clip
    how: dict                    # figure -> how it was computed

    @property
    def denoise_flops(self) -> float:
        """Every denoiser pass of one image or clip."""
        return self.step_flops * self.passes * self.steps

    @property
    def flops(self) -> float:
        """One image or clip in all (the text encoding shared by a request's images)."""
        return self.denoise_flops + self.vae_flops + self.text_flops / self.images


def defaults(w: Workload, m: Model) -> tuple[tuple[int, int], int, int, float]:
    """(resolution, frames, steps, guidance): the workload's, else the model's published defaults."""
    res = w.resolution or tuple(int(v) for v in m.fig("default_resolution").value)
    frames = w.frames or int(m.num("default_frames") or 1)
    steps = w.steps or int(m.num("default_steps"))
    guidance = w.guidance if w.guidance is not None else (m.num("default_guidance") or 0.0)
    return res, frames, steps, guidance


def shape(w: Workload) -> Shape:
    m = w.model
    (width, height), frames, steps, guidance = defaults(w, m)
    vae, patch = m.num("vae_spatial"), m.num("patch_size")
    down = m.num("token_downsample") or 1
    t = m.num("vae_temporal") or 1
    latent_frames = 1 + (frames - 1) // int(t) if frames > 1 else 1
    per_frame = (width / vae / patch / down) * (height / vae / patch / down)
    tokens = int(per_frame * latent_frames)
    text = int(m.num("text_tokens"))
    joined = m.fig("architecture").value == "mmdit"
    distilled = bool(m.fig("guidance_distilled").value)
    passes = 2 if guidance > 1 and not distilled else 1
    params, layers, hidden = m.num("active_params_b") * 1e9, m.num("layers"), m.num("hidden_size")
    seq = tokens + (text if joined else 0)
    linear = 2 * params * seq
    # QK^T and attention x V: 2 x 2 x seq^2 x hidden per layer; text by cross-attention where not joined
    attn = 4 * layers * hidden * seq * seq + (0 if joined else 4 * layers * hidden * tokens * text)
    encoders = m.fig("text_encoders").value or {}
    text_flops = sum(2 * p * 1e9 * text for p in encoders.values()) * (2 if passes == 2 else 1)
    vae_flops = m.num("vae_decoder_gflops_per_megapixel") * 1e9 * width * height / 1e6 * frames
    images = w.images_per_request if not m.num("vae_temporal") else 1
    how = {
        "latent_patches": (f"{width}x{height} / VAE {vae:g} / patch {patch:g}" + (f" / UNet downsampling {down:g}" if down > 1 else "")
                          + (f" x {latent_frames} latent frames (1 + ({frames} - 1) / {t:g})" if frames > 1 else "")
                          + f" = {tokens:,} latent patches" + (f", + {text} prompt embeddings joined in every block" if joined else "")),
        "step_flops": (f"2 x {params / 1e9:,.1f}B x {seq:,} positions + attention 4 x {layers:g} layers x {hidden:g} x {seq:,}^2"
                       + ("" if joined else f" + cross-attention to {text} prompt embeddings")
                       + f" = {(linear + attn) / 1e12:,.1f} TFLOP per pass"),
        "passes": ("2 passes per step (classifier-free guidance at scale " f"{guidance:g}: with and without the prompt)" if passes == 2
                   else ("1 pass per step (guidance-distilled: guidance is an input of the pass)" if distilled
                         else "1 pass per step (no guidance)")),
    }
    return Shape(width, height, frames, latent_frames, tokens, text, joined, steps, guidance, passes, images,
                 linear + attn, attn, text_flops, vae_flops, how)


def fps(m: Model) -> float | None:
    return m.num("fps")


def clip_seconds(s: Shape, m: Model) -> float | None:
    """Seconds of video in one clip, at the model's frame rate."""
    f = fps(m)
    return s.frames / f if f else None


def rounded_up(x: float) -> int:
    return max(1, math.ceil(x - 1e-9))
