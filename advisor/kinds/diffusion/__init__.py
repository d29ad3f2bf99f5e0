"""Image and video generation as kinds: a diffusion model (catalog/diffusion-models.yaml) served as
whole replicas, its memory the denoiser, text encoders, VAE and the activations at the resolution
(ledger.py), its speed compute-bound from the denoiser's FLOPs per step over the latent tokens
(shape.py, speed.py), its layouts replicas per card with CFG or sequence parallelism only for a latency
target (plans.py), its cost per 1,000 images or per clip (cost.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.inputs.catalog import Catalog
from advisor.inputs.kinds import IMAGE, KINDS as SPECS, VIDEO, KindSpec
from advisor.inputs.workload import Workload
from advisor.kinds import Words
from advisor.kinds.diffusion import apis
from advisor.kinds.diffusion.ledger import ledger
from advisor.kinds.diffusion.plans import plan_for
from advisor.kinds.diffusion.shape import shape
from advisor.numbers import owning
from advisor.numbers.cost import ON_PREM
from advisor.numbers.estimate import Estimate, candidate_gpus
from advisor.numbers.terms import Term


@dataclass(frozen=True)
class DiffusionKind:
    """Image or video generation by a diffusion model."""

    spec: KindSpec
    words: Words

    def api_comparison(self, plan, w: Workload, catalog: Catalog) -> dict | None:
        """The APIs that sell the model per image or clip, beside the plan (catalog/image-api-prices.yaml)."""
        return apis.comparison(plan, w, shape(w))

    def estimate(self, w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
        s = shape(w)
        led = ledger(w, s)
        cands = [plan_for(w, s, led, g, catalog) for g in candidate_gpus(w, catalog, only)]
        if w.constraints.deployment in ON_PREM:
            cands = owning.rent_comparison(cands, w)
        per = "clip" if s.frames > 1 else "image"
        compute = {
            "step_flops": Term(s.step_flops, s.how["step_flops"], ()),
            "passes_per_step": Term(float(s.passes), s.how["passes"], ()),
            f"flops_per_{per}": Term(s.flops, f"{s.steps} steps x {s.passes} x {s.step_flops / 1e12:,.1f} TFLOP + text encoders "
                                              f"{s.text_flops / 1e12:,.2f} + VAE decoder {s.vae_flops / 1e12:,.2f} TFLOP", ()),
            "latent_patches": Term(float(s.tokens), s.how["latent_patches"], ()),
        }
        notes = list(w.notes) + [_defaults_note(w, s)]
        return Estimate(w, led, cands, compute, None, [n for n in notes if n], led.bytes("total_gb"))


def _defaults_note(w: Workload, s) -> str | None:
    given = [k for k in ("resolution", "steps", "frames", "guidance") if getattr(w, k) is None and (k != "frames" or s.frames > 1)]
    if not given:
        return None
    vals = {"resolution": f"{s.width}x{s.height}", "steps": f"{s.steps} steps", "frames": f"{s.frames} frames",
            "guidance": f"guidance {s.guidance:g}"}
    return f"{w.model.name}'s published defaults used: " + ", ".join(vals[k] for k in given) + " (catalog/diffusion-models.yaml)."


IMAGES_SETTLE = "an hour of the workload on one card of each, measuring seconds per image at the workload's resolution and steps"
CLIPS_SETTLE = "a few clips on one node of each, measuring seconds per clip at the workload's resolution, frames and steps"

KINDS = {
    IMAGE: DiffusionKind(SPECS[IMAGE], Words("1,000 images", "seconds per image", "image generation", IMAGES_SETTLE)),
    VIDEO: DiffusionKind(SPECS[VIDEO], Words("clip", "seconds per clip", "video generation", CLIPS_SETTLE)),
}
