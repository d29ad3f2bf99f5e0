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


def share(gpu: GPU, cls: str) -> tuple[float, str, tuple]:
    """The fitted share of the achievable matmul rate a diffusion pipeline of this class (unet, mmdit,
    video) reaches on this GPU: the class's, times the GPU's own factor where its records gave one."""
    eff = diffusionmodels.efficiency()
    by = (eff.get("by_class") or {}).get(cls) or eff["default_share"]
    v, how = float(by["v"]), f"{by['v']:g} fitted share ({cls})"
    per = (eff.get("per_gpu") or {}).get(gpu.id)
    if per:
        v, how = v * float(per["v"]), how + f" x {per['v']:g} on {gpu.id}"
    return v, how, tuple(by.get("src", ()))


def fit_class(w: Workload) -> str:
    """The class a model's share is fitted in: video denoisers together, image ones by architecture."""
    return "video" if w.model.num("vae_temporal") else w.model.fig("architecture").value


@dataclass(frozen=True)
class Terms:
    """The raw terms of one replica's image or clip, before the fitted figures apply."""

    compute_s: float          # text encoding, denoising and VAE decode at the full achievable rate
    passes: float             # denoiser passes one after another (each pays a fixed overhead)
    alltoalls: int            # Ulysses all-to-alls on the critical path (each pays a fixed latency)
    alltoall_bytes_s: float   # their bytes over the link
    parts_at_full: dict       # text, denoise, VAE seconds at the full achievable rate
    rate_how: str


def replica_terms(w: Workload, s: Shape, gpu: GPU, catalog: Catalog, form: tuple[int, int]) -> Terms:
    """The terms of one replica of form (cfg, sp): guidance passes on cfg cards at once, each pass's
    positions over sp cards."""
    cfg, sp = form
    rate_t = achievable_tflops(catalog, gpu, compute_precision(w, gpu))
    rate = rate_t.value * TFLOP
    passes_seq = s.steps * s.passes / min(cfg, s.passes)        # passes one after another
    denoise = passes_seq * s.step_flops / sp / rate
    text = s.text_flops / s.images / rate
    vae = s.vae_flops / rate
    n, bytes_s = 0, 0.0
    if sp > 1:
        link, _ = calibration(catalog).link_bytes_s(gpu)
        seq = s.tokens + (s.text_tokens if s.joined else 0)
        n = int(passes_seq * w.model.num("layers") * ULYSSES_ALLTOALLS)
        bytes_s = n * comm.alltoall_bytes(seq / sp * w.model.num("hidden_size") * 2, sp) / link
    if cfg > 1 and s.passes > 1:
        n += s.steps            # CFG parallelism: the two predictions exchanged once per step
    return Terms(text + denoise + vae, passes_seq, n, bytes_s, {"text_s": text, "denoise_s": denoise, "vae_s": vae},
                 rate_t.formula)


def combine(t: Terms, share_: float, alltoall_us: float, pass_ms: float) -> tuple[float, dict]:
    """Seconds of one image or clip from its terms and the fitted figures, and its parts: the compute at
    the share, a fixed overhead per denoiser pass that no card count divides (launches, the scheduler,
    host work between steps), the all-to-alls' latency and bytes."""
    parts = {k: v / share_ for k, v in t.parts_at_full.items()}
    parts["overhead_s"] = t.passes * pass_ms * 1e-3
    parts["communication_s"] = t.alltoalls * alltoall_us * 1e-6 + t.alltoall_bytes_s
    return sum(parts.values()), parts


def replica_seconds(w: Workload, s: Shape, gpu: GPU, catalog: Catalog, form: tuple[int, int]) -> tuple[float, dict, str]:
    """(seconds per image or clip on one replica of form (cfg, sp), its parts, how)."""
    cfg, sp = form
    t = replica_terms(w, s, gpu, catalog, form)
    sh, sh_how, _ = share(gpu, fit_class(w))
    eff = diffusionmodels.efficiency()
    us, ms = float(eff["sp_alltoall_us"]["v"]), float(eff["pass_overhead_ms"]["v"])
    total, parts = combine(t, sh, us, ms)
    passes_at_once = min(cfg, s.passes)
    how = (f"({s.steps} steps x {s.passes} pass{'es' if s.passes > 1 else ''}" + (f" / CFG {cfg}" if passes_at_once > 1 else "")
           + f" x {s.step_flops / 1e12:,.1f} TFLOP" + (f" / SP {sp}" if sp > 1 else "")
           + f" + text encoders {s.text_flops / 1e12:,.2f} + VAE decoder {s.vae_flops / 1e12:,.2f} TFLOP"
           + f") / ({t.rate_how} x {sh_how}) + {t.passes:g} passes x {ms:g} ms fixed overhead"
           + (f" + {parts['communication_s']:,.2f} s of Ulysses all-to-alls ({t.alltoalls:,} of them, {us:g} us each + their bytes)" if sp > 1 else ""))
    return total, parts, how
