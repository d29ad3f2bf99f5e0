"""The memo's words for a plan of a kind counted in its own units (image and video generation: seconds
per image or clip, $ per 1,000 images or per clip). Read from the plan's own figures, so that the memo
names no kind and a plan without them reads as before (None: the caller's token or job words).
"""
from __future__ import annotations

from advisor.shell.wording import usd as _usd

#: the compute figures such a kind's estimate gives, in words (est["compute_explained"])
COMPUTE_LABELS = {"step_flops": "Denoiser FLOPs per pass", "passes_per_step": "Denoiser passes per step",
                  "flops_per_image": "FLOPs per image", "flops_per_clip": "FLOPs per clip",
                  "latent_patches": "Latent patches per image or clip"}
WHY_LABELS = {"seconds_per_image": "Seconds per image", "seconds_per_clip": "Seconds per clip",
              "usd_per_thousand_images": "Cost per 1,000 images", "usd_per_clip": "Cost per clip",
              "usd_per_video_minute": "Cost per minute of video", "layout": "Layout"}


def own_units(c: dict) -> bool:
    """The plan is counted in its kind's own units (images, clips), not tokens or jobs."""
    return c.get("seconds_per_image") is not None or c.get("seconds_per_clip") is not None


def table_columns(r: dict) -> tuple[tuple, tuple] | None:
    """(work, speed) columns of the summary's runners-up table for a recommendation counted in images or
    clips: (field, head) and (field, head, decimals); None for the token and job kinds."""
    if r.get("seconds_per_image") is not None:
        return ("usd_per_thousand_images", "per 1,000 images"), ("seconds_per_image", "s per image", 2)
    if r.get("seconds_per_clip") is not None:
        return ("usd_per_clip", "per clip"), ("seconds_per_clip", "s per clip", 0)
    return None


def unit_cost(c: dict) -> str | None:
    if c.get("usd_per_thousand_images") is not None:
        return f"{_usd(c['usd_per_thousand_images'])} per 1,000 images"
    if c.get("usd_per_clip") is not None:
        minute = c.get("usd_per_video_minute")
        return f"{_usd(c['usd_per_clip'])} per clip" + (f" ({_usd(minute)} per minute of video)" if minute is not None else "")
    return None


def speed_short(c: dict) -> str | None:
    if c.get("seconds_per_image") is not None:
        return f"{_secs(c['seconds_per_image'])} per image"
    if c.get("seconds_per_clip") is not None:
        return f"{_secs(c['seconds_per_clip'])} per clip"
    return None


def speed_fact(c: dict) -> str | None:
    """The recommended plan's speed line."""
    lay = c.get("layout") or {}
    per = f" on {lay.get('cfg', 1) * lay.get('sp', 1)} cards per replica" if lay.get("cfg", 1) * lay.get("sp", 1) > 1 else ""
    if c.get("seconds_per_image") is not None:
        return (f"{_secs(c['seconds_per_image'])} per image{per} ({c['images_per_s_per_gpu']:,.3g} images/s per GPU), "
                f"{c['images_per_s']:,.3g} images/s in all from {c['dp']} replica{'s' if c['dp'] > 1 else ''} "
                "(expected, calibrated: docs/accuracy.md)")
    if c.get("seconds_per_clip") is not None:
        return (f"{_secs(c['seconds_per_clip'])} per clip{per} ({c['clips_per_hour_per_gpu']:,.3g} clips an hour per GPU), "
                f"{c['clips_per_hour']:,.3g} clips an hour in all from {c['dp']} replica{'s' if c['dp'] > 1 else ''} "
                "(expected, calibrated: docs/accuracy.md)")
    return None


def compute_rows(comp: dict, prose) -> list[tuple[str, str, str]] | None:
    """The estimate's compute figures in words, when they are such a kind's."""
    if not any(k in comp for k in COMPUTE_LABELS):
        return None
    rows = []
    for k, t in comp.items():
        v = t["value"]
        shown = f"{v / 1e12:,.1f} TFLOP" if "flops" in k else f"{v:,.0f}"
        rows.append((COMPUTE_LABELS.get(k, k), shown, prose(t["formula"])))
    return rows


def _secs(s: float) -> str:
    if s >= 120:
        return f"{s / 60:,.1f} min"
    return f"{s:,.2f} s" if s < 10 else f"{s:,.1f} s"


def api_line(a: dict | None) -> str | None:
    """The memo's line on self-hosting against an API that sells the model per image or clip (the
    record's api_comparison with a `unit`); None for another comparison."""
    if not a or a.get("unit") not in ("image", "clip"):
        return None
    unit = a["unit"]
    if a.get("match") == "none":
        return f"No API in catalog/image-api-prices.yaml sells this model per {unit}: self-hosting is the way to run it"
    o = a["offers"][0]
    text = (f"An API: {_usd_small(o[f'usd_per_{unit}'])} per {unit} ({o['provider']}, {o['how']}"
            + (f", at {o['resolution']} (its stated size)" if o.get("resolution") else "")
            + (f", {o['date']}" if o.get("date") else ", undated page") + (f"; cheapest of {len(a['offers'])}" if len(a["offers"]) > 1 else "") + ")")
    ours = a.get(f"plan_usd_per_{unit}")
    if ours is None:
        return text + "; the plan has no price to compare"
    cheaper = "the API is cheaper" if ours > o[f"usd_per_{unit}"] else "self-hosting is cheaper"
    return text + f"; this plan {_usd_small(ours)} per {unit} with its replicas busy: {cheaper}"


def _usd_small(x: float) -> str:
    return f"${x:,.2f}" if x >= 0.1 else f"${x:.4f}"
