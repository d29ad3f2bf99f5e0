"""The hosted APIs that sell the workload's own diffusion model per image or per clip
(catalog/image-api-prices.yaml, each row quoting its page), priced at the workload's image or clip and
set beside the plan's own cost per image or clip: the record's `api_comparison` for image and video
generation. Rows for another model (an image-to-video variant, a closed model of the same family) are
not compared: a per-image price is the model's and the resolution's.
"""
from __future__ import annotations

from functools import cache

from advisor.base import yamlio
from advisor.inputs.catalog import CATALOG_DIR
from advisor.inputs.names import norm
from advisor.kinds.diffusion.shape import Shape, clip_seconds

FILE = "image-api-prices.yaml"


@cache
def rows() -> tuple[dict, ...]:
    path = CATALOG_DIR / FILE
    if not path.is_file():
        return ()
    return tuple(r for r in ((yamlio.load(path) or {}).get("rows") or []) if isinstance(r, dict))


def price(r: dict, s: Shape, model) -> tuple[float, str] | None:
    """(USD per image or clip at the workload's size, how) from a row's published price, or None."""
    mp = s.width * s.height / 1e6
    if "usd_per_image" in r:
        return float(r["usd_per_image"]), f"${r['usd_per_image']:g} per image"
    if "usd_per_megapixel" in r:
        return float(r["usd_per_megapixel"]) * mp, f"${r['usd_per_megapixel']:g} per megapixel x {mp:.2f} MP"
    if "usd_per_video" in r:
        return float(r["usd_per_video"]), f"${r['usd_per_video']:g} per video"
    if "usd_per_video_second" in r:
        secs = clip_seconds(s, model)
        if secs:
            return float(r["usd_per_video_second"]) * secs, f"${r['usd_per_video_second']:g} per second x {secs:,.2f} s"
    return None


def comparison(plan, w, s: Shape) -> dict | None:
    """The record's api_comparison for an image or video plan: the offers for the model, cheapest first,
    and the plan's own cost per image or clip; None where no API sells the model."""
    video = s.frames > 1
    unit = "clip" if video else "image"
    offers = []
    for r in rows():
        if not r.get("model") or norm(r["model"]) not in (norm(a) for a in (w.model.id, *w.model.aliases)):
            continue
        got = price(r, s, w.model)
        if got is None:
            continue
        offers.append({"provider": r.get("provider"), "provider_model": r.get("provider_model"), f"usd_per_{unit}": got[0],
                       "how": got[1], "resolution": r.get("resolution"), "billing": r.get("billing"), "source": r.get("source"),
                       "source_kind": r.get("source_kind"), "date": r.get("date")})
    if not offers:
        return {"unit": unit, "match": "none", "offers": []}
    offers.sort(key=lambda o: o[f"usd_per_{unit}"])
    ours = None
    if plan is not None and plan.fits:
        ours = plan.usd_per_clip if video else (plan.usd_per_thousand_images / 1000 if plan.usd_per_thousand_images else None)
    best = offers[0][f"usd_per_{unit}"]
    return {"unit": unit, "match": "model", "offers": offers, f"api_usd_per_{unit}": best, f"plan_usd_per_{unit}": ours,
            "api_over_plan": best / ours if ours else None, "gpu": plan.gpu.id if plan is not None else None,
            "source_file": f"catalog/{FILE}"}
