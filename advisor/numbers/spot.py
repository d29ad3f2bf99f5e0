"""Spot: what renting interruptible instances costs a training job in time, and how often to checkpoint.

A synchronous job stops when any of its instances is reclaimed. With a per-instance interruption rate
by offer kind (catalog/capacity.yaml: a hyperscaler's spot, AWS Spot Instance Advisor's share of
instances reclaimed per month, as -ln(1 - share) / 730 h; a neocloud's spot or a marketplace's
interruptible offer, reclaimed when outbid, its interruptions per instance-day / 24 h), the job's mean
time between interruptions is M = 1 / (rate x instances).
Saving a checkpoint takes d = the model state (weights + optimizer states, the ledger's figures) over
the storage bandwidth of the job's GPUs; a restart takes R = the measured recovery time + reading the
checkpoint back. The interval that minimises the expected time is Young's, tau = sqrt(2 d M) (Young
1974; Daly 2006 to first order), and the expected wall-clock is the hours without interruptions x
(1 + d / tau + (tau / 2 + R) / M): each interval pays one save, each interruption loses half an
interval of work on average and one restart. The factor multiplies whatever hours the speed model
gives (step hours, or step hours times a goodput factor): expected-hour factors compose by product.
The lost work is stated in hours and dollars: the expected interruptions x (half an interval + the
restart), and the saves, at the plan's hourly price.
"""
from __future__ import annotations

import math
from dataclasses import replace

from advisor.numbers.terms import GB, HOURS_PER_MONTH



HYPERSCALER, MARKETPLACE = "hyperscaler spot", "neocloud spot or marketplace offer"


def offer_kind(capacity: dict, provider: str | None) -> str:
    """Which interruption figure a spot offer of `provider` takes: a hyperscaler's (capacity.yaml
    hyperscaler_providers, matched on the name's first word, case-insensitive) or, for any other provider
    when the catalog has a marketplace figure, the marketplace's (issue 45 item 6: a neocloud's spot was
    priced at AWS's monthly band, 17.8 h between checkpoints for a 155-hour job)."""
    sp = capacity["spot"]
    hyper = (sp.get("hyperscaler_providers") or {}).get("v")
    if not hyper or not sp.get("marketplace_interruptions_per_instance_day"):
        return HYPERSCALER
    first = (provider or "").split()[0].lower() if (provider or "").split() else ""
    return HYPERSCALER if first in {h.lower() for h in hyper} else MARKETPLACE


def interruption_rate(capacity: dict, gpu_id: str, provider: str | None = None) -> tuple[float, dict]:
    """Interruptions per instance-hour of one spot instance of this GPU from `provider`, and the figure it
    comes from (with its unit in words, `per`)."""
    sp = capacity["spot"]
    if offer_kind(capacity, provider) == MARKETPLACE:
        fig = sp["marketplace_interruptions_per_instance_day"]
        return fig["v"] / 24, {**fig, "per": "interruptions per instance-day"}
    shares = sp["interruption_share_per_month"]
    fig = shares.get(gpu_id) or shares["default"]
    return -math.log(1 - min(fig["v"], 0.999999)) / HOURS_PER_MONTH, {**fig, "per": "share of instances reclaimed a month"}


def young_interval_hours(checkpoint_hours: float, mtbf_hours: float) -> float:
    """Young's optimum checkpoint interval: sqrt(2 x checkpoint time x mean time between failures)."""
    return math.sqrt(2 * checkpoint_hours * mtbf_hours)


def expected_factor(checkpoint_hours: float, interval_hours: float, restart_hours: float, mtbf_hours: float) -> float:
    """Expected wall-clock per hour of uninterrupted work: one save per interval, and per interruption
    half an interval of lost work plus a restart (first order in interval / MTBF)."""
    return 1 + checkpoint_hours / interval_hours + (interval_hours / 2 + restart_hours) / mtbf_hours


#: a spot job checkpoints at least once before its middle: the interval is at most this share of the
#: job's uninterrupted hours (review 10, F12: "every 8.2 h" for a 0.8-hour job), a stated choice, so an
#: interruption in its second half does not lose the whole run
MAX_INTERVAL_SHARE_OF_JOB = 0.5


def term(gpu_id: str, count: int, instances: int, state_bytes: float, hours: float, capacity: dict,
         job_hours: float | None = None, provider: str | None = None, usd_per_hour: float | None = None) -> dict:
    """The spot figures of one plan: rates (by the offer kind of `provider`), checkpoint and restart
    times, the interval (Young's, at most half of `job_hours`, the job's uninterrupted hours when its size
    is known), the factor, the expected hours and the work they lose (hours, and dollars at
    `usd_per_hour`), with the sources of each input."""
    per_instance, fig = interruption_rate(capacity, gpu_id, provider)
    sp = capacity["spot"]
    mtbf = 1 / (per_instance * max(instances, 1))
    bw = sp["checkpoint_gb_s_per_gpu"]["v"] * GB * max(count, 1)        # every GPU writes its shard
    ckpt_h = state_bytes / bw / 3600
    restart_h = sp["restart_minutes"]["v"] / 60 + ckpt_h                  # recovery, then the checkpoint read back
    young = young_interval_hours(ckpt_h, mtbf)
    tau = min(young, job_hours * MAX_INTERVAL_SHARE_OF_JOB) if job_hours else young
    f = expected_factor(ckpt_h, tau, restart_h, mtbf)
    interruptions = hours * f / mtbf
    # wall-clock the interruptions cost (half an interval of work redone and a restart each) and the saves
    lost_h = interruptions * (tau / 2 + restart_h)
    saves_h = hours * f / tau * ckpt_h
    return {"offer_kind": offer_kind(capacity, provider), "interruption_figure": fig["v"], "interruption_unit": fig["per"],
            "interruption_share_per_month": fig["v"] if fig["per"].startswith("share") else None,
            "interruption_source": f"{fig['src']} ({fig['date']})",
            "interruptions_per_instance_hour": per_instance, "instances": instances, "mtbf_hours": mtbf,
            "checkpoint_gb": state_bytes / GB, "checkpoint_gb_s": bw / GB, "checkpoint_seconds": ckpt_h * 3600,
            "checkpoint_source": f"{sp['checkpoint_gb_s_per_gpu']['src']} ({sp['checkpoint_gb_s_per_gpu']['date']})",
            "restart_minutes": restart_h * 60,
            "restart_source": f"{sp['restart_minutes']['src']} ({sp['restart_minutes']['date']})",
            "checkpoint_interval_hours": tau, "young_interval_hours": young, "interval_capped_by_job": tau < young,
            "expected_factor": f, "expected_interruptions": interruptions,
            "hours_without_interruptions": hours, "expected_hours": hours * f,
            "lost_hours": lost_h, "checkpoint_hours": saves_h,
            "lost_usd": lost_h * usd_per_hour if usd_per_hour else None,
            "checkpoint_usd": saves_h * usd_per_hour if usd_per_hour else None}


def state_bytes(led) -> float:
    """What a checkpoint holds: the weights and the optimizer states (master copy included), one copy
    of the model whatever the layout (the ledger's figures)."""
    return led.bytes("weights_gb") + led.bytes("optimizer_gb")


def describe(t: dict) -> str:
    """The spot term in one sentence for the plan's `why` and the memo."""
    rate = (f"{t['interruption_figure']:.1%} of instances reclaimed a month" if t["interruption_share_per_month"] is not None
            else f"{t['interruption_figure']:g} interruptions per instance-day")
    return (f"spot ({t['offer_kind']}): {rate} "
            f"({t['interruptions_per_instance_hour']:.2e} per instance-hour x {t['instances']:,} instances: one interruption every "
            f"{t['mtbf_hours']:,.1f} h); checkpoint {t['checkpoint_gb']:,.0f} GB at {t['checkpoint_gb_s']:,.1f} GB/s = "
            f"{t['checkpoint_seconds']:,.0f} s, restart {t['restart_minutes']:,.1f} min; checkpoint every {every_text(t)}; "
            f"expected hours x {t['expected_factor']:.3f} ({t['expected_interruptions']:,.1f} interruptions expected); "
            + lost_text(t))


def lost_text(t: dict) -> str:
    """The work the interruptions and saves are expected to cost, in hours and (when priced) dollars."""
    usd = (f" (${t['lost_usd']:,.0f}; the saves ${t['checkpoint_usd']:,.0f})" if t.get("lost_usd") is not None else "")
    return (f"{t['expected_interruptions']:,.1f} interruptions x (half an interval + a {t['restart_minutes']:,.0f}-min restart) "
            f"lose about {t['lost_hours']:,.1f} h of the run and the saves take {t['checkpoint_hours']:,.1f} h{usd}")


def interval_text(hours: float) -> str:
    return f"{hours * 60:,.0f} min" if hours < 2 else f"{hours:,.1f} h"


def every_text(t: dict) -> str:
    """The checkpoint interval with where it comes from: Young's, or half the job when that is shorter."""
    young = (f"sqrt(2 x {t['checkpoint_seconds']:,.0f} s to write a checkpoint x {t['mtbf_hours']:,.1f} h between "
             "interruptions), Young's interval")
    if t.get("interval_capped_by_job"):
        return (f"{interval_text(t['checkpoint_interval_hours'])}, half the job's {interval_text(t['hours_without_interruptions'])} "
                f"(at least one checkpoint mid-run: {young}, is {interval_text(t['young_interval_hours'])}, longer than the job)")
    return f"{interval_text(t['checkpoint_interval_hours'])} ({young})"


def apply(w, led, gpu, count: int, sp, price, capacity: dict):
    """A training plan priced from a spot offer: its hours (and so its cost per job) as expected with
    interruptions, the spot figures in the offer (`price.spot`) and in `why`. Other plans unchanged."""
    offer = price.price or {}
    if not (w.training and offer.get("kind") == "spot" and capacity and capacity.get("spot")):
        return sp, price
    hours = sp.training_hours
    if hours is None and sp.hours_per_million_tokens:
        hours = sp.hours_per_million_tokens          # a job of unknown size: per million tokens, the same factor
    if not hours:
        return sp, price
    t = term(gpu.id, count, offer.get("instances") or 1, state_bytes(led), hours, capacity, sp.training_hours,
             offer.get("provider"), price.usd_per_hour)
    f = t["expected_factor"]
    text = describe(t)
    why = dict(sp.why)
    for k in ("training_hours", "hours_per_million_tokens"):
        if k in why:
            why[k] = f"{why[k]}; x {f:.3f} expected with spot interruptions (numbers/spot.py)"
    sp2 = replace(sp, training_hours=sp.training_hours * f if sp.training_hours is not None else None,
                  training_hours_range=[x * f for x in sp.training_hours_range] if sp.training_hours_range else None,
                  hours_per_million_tokens=sp.hours_per_million_tokens * f if sp.hours_per_million_tokens else None,
                  why=why)
    price2 = replace(price, price={**offer, "spot": t}, why={**price.why, "spot": text})
    return sp2, price2
