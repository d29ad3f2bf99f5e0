"""The diffusion models of image and video generation (catalog/diffusion-models.yaml): each a catalog
`Model` whose figures are the denoiser's (parameters, architecture, patch size), its VAE's (spatial and
temporal factors, latent channels, decoder cost), its text encoders' and its published defaults, every
figure with its source. Kept apart from the LLM catalog (models.yaml): an LLM workload never takes a
diffusion model, nor an image workload an LLM. Names resolve as the LLM catalog's do (id, alias or
Hugging Face repo).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError, Problem
from advisor.inputs.catalog import CATALOG_DIR, Model, _doc, _entries, _mapping
from advisor.inputs.figures import check_sources, figures_of
from advisor.inputs.names import name_index, norm, resolve

FILE = "diffusion-models.yaml"
KINDS = ("image-generation", "video-generation")
ARCHITECTURES = ("unet", "mmdit", "dit")
#: the figures every entry gives (positive numbers unless said)
REQUIRED = ("params_b", "active_params_b", "layers", "hidden_size", "patch_size", "latent_channels", "vae_spatial",
            "vae_params_b", "vae_decoder_gflops_per_megapixel", "text_tokens", "default_steps")
FIGURES = REQUIRED + ("architecture", "token_downsample", "vae_temporal", "text_encoders", "guidance_distilled",
                      "default_guidance", "default_resolution", "default_frames", "fps", "precision")
VIDEO_REQUIRED = ("vae_temporal", "default_frames", "fps")


def load(path: Path) -> dict[str, Model]:
    """Every diffusion model of `path`, checked: its figures known and sourced, its numbers positive."""
    col = Collector(str(path))
    sources = _mapping(path, "sources")
    items, _ = _doc(path, "models", col)
    models: dict[str, Model] = {}
    for line, e, mid in _entries(items, "model", col, models):
        figs = figures_of(e, col, {"id", "name", "aliases", "hf_repo", "kind"})
        for k in figs:
            if k not in FIGURES:
                col.add(f"unknown field (known: {', '.join(FIGURES)})", yamlio.line_of(e, k), f"{mid}.{k}")
        kind = e.get("kind")
        if kind not in KINDS:
            col.add(f"kind must be one of {', '.join(KINDS)}", yamlio.line_of(e, "kind", line), f"{mid}.kind")
        for k in REQUIRED + (VIDEO_REQUIRED if kind == "video-generation" else ()):
            v = figs.get(k)
            if v is None or not isinstance(v.value, (int, float)) or isinstance(v.value, bool) or v.value <= 0:
                col.add("required positive number", yamlio.line_of(e, k, line), f"{mid}.{k}")
        arch = figs.get("architecture")
        if arch is None or arch.value not in ARCHITECTURES:
            col.add(f"architecture must be one of {', '.join(ARCHITECTURES)}", yamlio.line_of(e, "architecture", line), f"{mid}.architecture")
        enc = figs.get("text_encoders")
        if enc is not None and not (isinstance(enc.value, dict) and all(isinstance(v, (int, float)) and v > 0 for v in enc.value.values())):
            col.add("text_encoders must map each encoder to its parameters in billions", yamlio.line_of(e, "text_encoders", line), f"{mid}.text_encoders")
        check_sources(col, figs, e, sources, mid)
        aliases = tuple(e.get("aliases") or ()) + ((e["hf_repo"],) if e.get("hf_repo") else ())
        figs["kind"] = _kind_figure(kind)
        models[mid] = Model(mid, e.get("name", mid), aliases, figs, str(path), line)
    col.raise_if_any()
    return models


def _kind_figure(kind):
    from advisor.inputs.figures import Figure
    return Figure(kind)


@cache
def shipped() -> dict[str, Model]:
    return load(CATALOG_DIR / FILE)


@cache
def sources() -> dict:
    return dict(_mapping(CATALOG_DIR / FILE, "sources"))


@cache
def _names() -> dict[str, str]:
    return name_index(shipped().values())


def knows(name) -> bool:
    return isinstance(name, str) and norm(name) in _names()


def resolve_id(name: str) -> str:
    """The catalog id of a diffusion model named by its id, an alias or its Hugging Face repo."""
    return _names()[norm(name)]


def model(name: str, kind: str, field_name: str = "model", file=None, line=None) -> Model:
    """The diffusion model `name` names (id, alias or Hugging Face repo), for a workload of `kind`."""
    m = shipped()[resolve(name, _names(), f"{'image' if kind == 'image-generation' else 'video'} generation model", field_name, file, line)]
    if m.fig("kind").value != kind:
        other = "video" if kind == "image-generation" else "image"
        raise InputError(Problem(f"{m.name} is a {other} generation model; this workload is {kind.replace('-', ' ')} "
                                 f"(models: {', '.join(sorted(i for i, x in shipped().items() if x.fig('kind').value == kind))})",
                                 file, line, field_name))
    return m


def check_resolution(m: Model, resolution: tuple[int, int]) -> str | None:
    """Why `resolution` cannot be generated by `m` (each side a multiple of its VAE factor x patch size,
    x the UNet's downsampling), or None."""
    step = int(m.num("vae_spatial") * m.num("patch_size") * (m.num("token_downsample") or 1))
    bad = [s for s in resolution if s % step]
    if bad:
        w, h = resolution
        return (f"{w}x{h}: each side must be a multiple of {step} pixels for {m.name} (VAE factor "
                f"{m.num('vae_spatial'):g} x patch {m.num('patch_size'):g}"
                + (f" x its UNet's downsampling {m.num('token_downsample'):g}" if m.num("token_downsample") else "")
                + f"); {bad[0]} is not, e.g. {_near(bad[0], step)}")
    return None


def check_frames(m: Model, frames: int) -> str | None:
    """Why `frames` cannot be generated by `m`: a causal video VAE takes 1 + a multiple of its temporal factor."""
    t = int(m.num("vae_temporal") or 1)
    if t > 1 and (frames - 1) % t:
        lo = 1 + (frames - 1) // t * t
        return f"{frames} frames: {m.name} takes 1 + a multiple of {t} frames (its VAE's temporal factor), e.g. {lo} or {lo + t}"
    return None


def _near(side: int, step: int) -> str:
    lo = max(step, side // step * step)
    return f"{lo} or {lo + step}"


@cache
def efficiency() -> dict:
    """The fitted shares of the achievable matmul rate (`efficiency:` of the file)."""
    data = yamlio.load(CATALOG_DIR / FILE) or {}
    eff = data.get("efficiency") or {}
    if "default_share" not in eff:
        raise InputError(Problem("efficiency.default_share is required", str(CATALOG_DIR / FILE), 1, "efficiency"))
    return eff
