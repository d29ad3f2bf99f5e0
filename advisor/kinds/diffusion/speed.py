"""How fast one replica of a diffusion pipeline makes an image or a clip on a GPU: compute-bound (the
denoiser's matmuls over thousands of latent tokens keep the tensor cores busy at batch 1), at the
card's achievable matmul rate (numbers.speed.achievable_tflops, MAMF) times a share fitted on
published measurements (catalog/diffusion-models.yaml `efficiency`, bench/accuracy.py). A replica may
run its two guidance passes on two cards at once (CFG parallelism) and split each pass's tokens over
`sp` cards (Ulysses sequence parallelism: four all-to-alls of the tokens' activations around every
attention, on the critical path); both only to meet a latency target.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from advisor.inputs import diffusionmodels
from advisor.inputs.catalog import GPU, Catalog
from advisor.inputs.workload import Workload
from advisor.kinds.diffusion.shape import Shape
from advisor.numbers import comm
from advisor.numbers.calibration import calibration
from advisor.numbers.speed import Speed, achievable_tflops
from advisor.numbers.terms import TFLOP

#: all-to-alls per block and pass in Ulysses attention: q, k and v to heads, the output back to tokens
ULYSSES_ALLTOALLS = 4


@dataclass(frozen=True)
class DiffusionSpeed(Speed):
    """A diffusion plan's speed (numbers.plan reads these as its kind figures)."""

    seconds_per_image: float | None = None        # one image from its request on an idle replica
    seconds_per_clip: float | None = None
    images_per_s_per_gpu: float | None = None
    clips_per_hour_per_gpu: float | None = None
    images_per_s: float | None = None             # the plan's replicas at their capacity
    clips_per_hour: float | None = None
    latent_patches: int | None = None
    hours_per_unit: float | None = None           # plan hours per 1,000 images or per clip
    parts_s: dict = field(default_factory=dict)   # text encoding, denoising, communication, VAE decode: seconds


def compute_precision(w: Workload, gpu: GPU) -> str:
    p = w.precision or w.model.precision.get("all", "bf16")
    return "fp8" if p in ("fp8", "int8") and "fp8" in gpu.native_precisions and gpu.tflops("fp8") else "bf16"


def share(gpu: GPU, arch: str) -> tuple[float, str, tuple]:
    """The fitted share of the achievable matmul rate a diffusion pipeline reaches on this GPU."""
    eff = diffusionmodels.efficiency()
    per = (eff.get("per_gpu") or {}).get(gpu.id)
    if per:
        return float(per["v"]), f"{per['v']:g} fitted share on {gpu.id}", tuple(per.get("src", ()))
    by = (eff.get("by_architecture") or {}).get(arch) or eff["default_share"]
    return float(by["v"]), f"{by['v']:g} fitted share ({arch if 'v' in by else 'default'})", tuple(by.get("src", ()))


def replica_seconds(w: Workload, s: Shape, gpu: GPU, catalog: Catalog, cfg: int, sp: int) -> tuple[float, dict, str]:
    """(seconds per image or clip on one replica of cfg x sp cards, its parts, how)."""
    cp = compute_precision(w, gpu)
    rate_t = achievable_tflops(catalog, gpu, cp)
    sh, sh_how, _ = share(gpu, w.model.fig("architecture").value)
    rate = rate_t.value * TFLOP * sh
    passes_at_once = min(cfg, s.passes)
    denoise = s.steps * s.passes / passes_at_once * s.step_flops / sp / rate
    comm_s = 0.0
    if sp > 1:
        cal = calibration(catalog)
        link, _ = cal.link_bytes_s(gpu)
        lat = cal.collective_latency_us(gpu, sp) * 1e-6
        seq = s.tokens + (s.text_tokens if s.joined else 0)
        per_block = ULYSSES_ALLTOALLS * comm.alltoall_s(seq / sp * w.model.num("hidden_size") * 2, sp, link, lat)
        comm_s = s.steps * s.passes / passes_at_once * w.model.num("layers") * per_block
    text = s.text_flops / s.images / rate
    vae = s.vae_flops / rate
    parts = {"text_s": text, "denoise_s": denoise, "communication_s": comm_s, "vae_s": vae}
    how = (f"({s.steps} steps x {s.passes} pass{'es' if s.passes > 1 else ''}" + (f" / CFG {cfg}" if passes_at_once > 1 else "")
           + f" x {s.step_flops / 1e12:,.1f} TFLOP" + (f" / SP {sp}" if sp > 1 else "")
           + f" + text {s.text_flops / 1e12:,.2f} + VAE {s.vae_flops / 1e12:,.2f} TFLOP) / ({rate_t.formula} x {sh_how})"
           + (f" + {comm_s:,.2f} s of Ulysses all-to-alls ({ULYSSES_ALLTOALLS} per block, {w.model.num('layers'):g} blocks per pass)" if sp > 1 else ""))
    return text + denoise + comm_s + vae, parts, how
