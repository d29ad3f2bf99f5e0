"""A diffusion plan's cost per unit of work: per 1,000 images, or per clip and per minute of video,
from the plan's hourly price (numbers.cost.plan_cost) and the images or clips its replicas make in an
hour (the workload's rate where it gives one, else the replicas at their capacity).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.numbers.cost import Cost


@dataclass(frozen=True)
class DiffusionCost(Cost):
    usd_per_thousand_images: float | None = None
    usd_per_clip: float | None = None
    usd_per_video_minute: float | None = None


def priced(c: Cost, sp, w, s, clip_s: float | None) -> DiffusionCost:
    base = DiffusionCost(**{k: getattr(c, k) for k in c.__dataclass_fields__})
    if not c.usd_per_hour:
        return base
    why = dict(c.why)
    if sp.clips_per_hour:
        per_clip = c.usd_per_hour / sp.clips_per_hour
        why["usd_per_clip"] = f"${c.usd_per_hour:,.2f}/h / {sp.clips_per_hour:,.2f} clips per hour"
        minute = per_clip * 60 / clip_s if clip_s else None
        if minute is not None:
            why["usd_per_video_minute"] = f"${per_clip:,.2f} per clip x 60 / {clip_s:,.2f} s of video per clip"
        return replace(base, usd_per_clip=per_clip, usd_per_video_minute=minute, why=why)
    per_k = c.usd_per_hour / (sp.images_per_s * 3600) * 1000
    why["usd_per_thousand_images"] = f"${c.usd_per_hour:,.2f}/h / ({sp.images_per_s:,.3f} images/s x 3600) x 1,000"
    return replace(base, usd_per_thousand_images=per_k, why=why)
