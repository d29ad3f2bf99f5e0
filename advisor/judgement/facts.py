"""The facts of an estimate: `facts_for` turns it into the flat fact dictionaries the engine matches
(workload fields, plus one candidate per GPU option carrying its estimator figures and catalog fields),
in the vocabulary declared in advisor.judgement.vocabulary (FACTS, re-exported here).
"""
from __future__ import annotations

from functools import lru_cache

from advisor.base.kept import Kept, fingerprint
from advisor.inputs.catalog import GPU
from advisor.numbers import api
from advisor.numbers.spot import every_text, lost_text
from advisor.numbers.estimate import GB, Estimate
from advisor.numbers.layouts import rack_unit
from advisor.numbers.objective import unit_cost, unit_of_work
from advisor.numbers.power import WORKSTATION_CIRCUIT_KW, WORKSTATION_MAX_CARDS
from advisor.numbers.terms import HOURS_PER_MONTH
from advisor.judgement.record import model_error
from advisor.judgement.vocabulary import FACTS, SCOPES, Fact  # noqa: F401  (read from this module too: the linter, the rule tools)


@lru_cache(maxsize=None)
def prop(name: str) -> str:
    """The flat property a dotted fact name is stored under in the engine ('workload.mode' -> 'w_mode')."""
    scope, _, field = name.partition(".")
    return {"workload": "w_", "candidate": "c_", "derived": "d_"}[scope] + field.replace("-", "_")


def _put(d: dict, name: str, value):
    if value is None:
        return
    d[prop(name)] = value


#: candidate field -> (its flat property, whether the fact is an integer): looked up once per field,
#: not once per field of every candidate of every decision
_CANDIDATE_PROPS: dict[str, tuple[str, bool]] = {}


def _put_all(d: dict, vals: dict) -> None:
    props = _CANDIDATE_PROPS
    for k, v in vals.items():
        hit = props.get(k)
        if hit is None:
            name = f"candidate.{k}"
            if name not in FACTS:       # an undeclared fact: the plain path (an integer-valued float fails there)
                if isinstance(v, float) and v.is_integer() and FACTS[name].type == "integer":
                    v = int(v)
                _put(d, name, v)
                continue
            hit = props[k] = (prop(name), FACTS[name].type == "integer")
        if v is None:
            continue
        if hit[1] and isinstance(v, float) and v.is_integer():
            v = int(v)
        d[hit[0]] = v


#: a GPU entry's figures -> its candidate properties
_GPU_FACTS = Kept("GPU facts", 1024)


def _gpu_facts(g: GPU) -> dict:
    """The candidate properties that come from the catalog alone, built once per GPU entry."""
    return _GPU_FACTS.get(fingerprint(g), lambda: _gpu_facts_of(g))


def _gpu_facts_of(g: GPU) -> dict:
    software = g.fig("software")
    gb_s = g.fig("interconnect").extra.get("gb_s")
    vals = {
        "gpu": g.id, "vendor": g.vendor, "generation": g.generation, "class": g.gpu_class, "status": g.status,
        "launch_year": g.num("launch_year"), "months_shipping": g.months_shipping, "memory_gb": g.memory_gb, "bandwidth_tb_s": g.bandwidth_tb_s,
        "bf16_tflops": g.num("bf16_tflops"), "fp8_native": "fp8" in g.native_precisions,
        "fp4_native": "fp4" in g.native_precisions, "interconnect": g.fig("interconnect").value or "none",
        "interconnect_gb_s": gb_s if isinstance(gb_s, (int, float)) else None,
        "form_factor": g.fig("form_factor").value, "fleet_link": (g.fig("interconnect").extra or {}).get("fleet"), "gpus_per_node": g.gpus_per_node, "tdp_w": g.num("tdp_w"),
        "cooling": g.fig("cooling").value, "mig_instances": g.num("mig_instances"),
        # "air (passive)" in the catalog: a data-centre card; "active workstation / passive server" has both
        "passive_cooling": "passive" in (g.fig("cooling").note or "") and "active" not in (g.fig("cooling").note or ""),
        "us_export_controlled": bool(g.fig("us_export_controlled").value),
        "software": software.value, "software_maturity": software.extra.get("maturity"),
    }
    out: dict = {}
    _put_all(out, vals)
    return out


def _tco_values(c) -> dict:
    """An owned plan's buy-or-rent facts, from the estimator's comparison (numbers.cost, `tco`)."""
    t = c.tco if isinstance(c.tco, dict) else None
    if not t or t.get("rent_usd_per_month") is None or t.get("write_off_months") is None:
        return {}
    be = t.get("break_even_months")
    be = be if be is not None and be > 0 else None
    rent = t.get("rent_plan") or {}
    offer = t.get("rent_offer") or {}
    own = t["owning_usd_per_hour"] * HOURS_PER_MONTH if t.get("owning_usd_per_hour") is not None else None
    return {"buy_break_even_months": be, "buy_write_off_months": t["write_off_months"],
            "buy_pays_back": be is not None and be <= t["write_off_months"], "own_usd_per_month": own,
            "rent_usd_per_month": t["rent_usd_per_month"],
            "rent_plan": (f"{rent.get('count', c.count)} x {rent.get('gpu', c.gpu.id)}"
                          + (f" at {offer['provider']}" if offer.get("provider") else ""))}


def _price_values(c, price: dict | None) -> dict:
    """A plan's facts that come from its price: instances and the traffic between them, capacity, the
    listings it spreads over, a contract's or reservation's terms, spot checkpoints, owned cards."""
    out: dict = {}
    if price and price.get("instances") and price.get("gpus_per_instance"):
        # traffic between rented instances: a model copy larger than one instance (its pipeline stages or
        # a DEP group's all-to-all cross them), or disaggregated pools whose KV transfer crosses them (independent replicas
        # exchange nothing); bought or owned boxes have no provider's network between them
        per, pooled = price["gpus_per_instance"], c.layout is not None and c.layout.pools is not None
        out.update(instances=price["instances"], crosses_instances=price.get("kind") not in ("purchase", "owned")
               and price["instances"] > 1 and (c.tp * c.pp > per or pooled))
    if price and price.get("kind") == "purchase" and price.get("quote_age_years") is not None:
        out.update(purchase_quote_age_years=price["quote_age_years"], purchase_quote_date=str(price.get("date")))
    if price and price.get("capacity_instances"):
        out["capacity_instances"] = price["capacity_instances"]
    if price and price.get("listings"):
        out.update(price_listings=len(price["listings"]),
               price_providers=", ".join(dict.fromkeys(x["provider"] for x in price["listings"])))
    if price and price.get("kind") == "contract":
        out.update(instances_needed=price["on_demand_offer"]["instances_needed"],
               contract_usd_per_gpu_hour=price["usd_per_gpu_hour"], contract_term_months=price["term_months"],
               contract_term_usd=price["term_usd"], contract_source=f"{price['provider']}, {price['date']}",
               contract_job_percent=(100 * price["job_share_of_term"]) if price.get("job_share_of_term") is not None else None)
    if price and price.get("kind") == "reserved" and price.get("on_demand_offer"):
        # booked ahead beyond on-demand capacity (numbers/capacity.py reserve_for_job)
        out.update(instances_needed=price["on_demand_offer"]["instances_needed"],
               reservation_days=price.get("term_days"), reservation_usd_per_gpu_hour=price["usd_per_gpu_hour"],
               reservation_source=f"{price['provider']} {price['instance'] or ''}, {price['date']}".replace(" ,", ","))
    spot_term = (price or {}).get("spot")
    if spot_term:
        out.update(spot_checkpoint_minutes=spot_term["checkpoint_interval_hours"] * 60,
               spot_checkpoint_every=every_text(spot_term),
               spot_checkpoint_seconds=spot_term["checkpoint_seconds"], spot_mtbf_hours=spot_term["mtbf_hours"],
               spot_expected_factor=spot_term["expected_factor"], spot_offer_kind=spot_term.get("offer_kind"),
               spot_lost_hours=spot_term.get("lost_hours"), spot_lost_usd=spot_term.get("lost_usd"),
               spot_lost_words=lost_text(spot_term) if spot_term.get("lost_hours") is not None else None)
    net = (price or {}).get("fabric")
    out["fabric_gpu_direct"] = bool(net and net["gpu_direct"])
    if net:
        out.update(fabric_kind=net["kind"], fabric_rdma=net["rdma"], fabric_gbps=net["gbps"])
    if c.cost is not None and c.cost.why.get("fabric_refused"):
        out["fabric_refused"] = c.cost.why["fabric_refused"]
    first = (price or {}).get("owned_first")
    if first:
        out.update(owned_first_gpus=sum(s["cards"] for s in first["owned"]), owned_first_users=first["users"] - first["rented_users"],
                   owned_first_fleet=", ".join(f"{s['cards']} of {s['fleet_cards']} {s['gpu']}, {s['replicas']} x {s['layout']} "
                                               f"replica{'s' if s['replicas'] > 1 else ''}" for s in first["owned"]),
                   owned_first_usd_per_hour=first["owned_usd_per_hour"], rented_usd_per_hour=first["rented_usd_per_hour"],
                   rented_users=first["rented_users"])
    if price and price.get("kind") == "owned":
        out.update(owned_gpus=price["owned_gpus"], added_gpus=price["added_gpus"],
               owned_nodes=price.get("owned_nodes"), added_nodes=price.get("added_nodes"))
    return out


def _deadline_values(c, deadline_hours: float | None) -> dict:
    """The high end of a training plan's hours (the fits' spread) and its share of the deadline."""
    high = c.training_hours_range[1] if c.training_hours_range else None
    return {"training_hours_high": high, "deadline_share_high": high / deadline_hours if high and deadline_hours else None}


def _service_values(c, w, err: float | None) -> dict:
    """For a serving plan that meets its service level, how close the model's error brings it to the target:
    the larger share of (figure x (1 + err)) / target over TTFT and TPOT, and that figure in words (review
    13: 9,964 ms of a 10 s TTFT target, called stable, beside a plan a third cheaper that missed it by 2.5%)."""
    if w.training or not err or c.misses is not None:
        return {}
    pairs = [(name, got, want) for name, got, want in (("time to first token", c.ttft_ms, w.ttft_ms), ("time per output token", c.tpot_ms, w.tpot_ms))
             if got and want]
    if not pairs:
        return {}
    name, got, want = max(pairs, key=lambda t: t[1] / t[2])
    return {"service_level_share_high": got * (1 + err) / want,
            "service_level_high": f"{name} {got:,.1f} ms against the {want:,.0f} ms target, {got * (1 + err):,.1f} ms at the model's {err:.1%} error"}


def _idle(c, price: dict | None) -> dict:
    """idle_gpus and idle_share of a plan: of the instances its price rents, or for an unpriced plan of a
    GPU sold only as a whole rack (NVL72, layouts.rack_unit), of the racks it needs (64 GPUs: 8 of a rack)."""
    if price:
        return {"idle_gpus": price["idle_gpus"], "idle_share": price["idle_gpus"] / (price["instances"] * price["gpus_per_instance"])}
    unit = rack_unit(c.gpu)
    if not unit or not c.count:
        return {"idle_gpus": None, "idle_share": None}
    idle = -c.count % unit
    return {"idle_gpus": idle, "idle_share": idle / (c.count + idle)}


def facts_for(est: Estimate, catalog=None) -> tuple[dict, list[dict]]:
    """The workload fact and one candidate fact per GPU, keyed by flat property names (None omitted);
    with the catalog, serving plans also carry their comparison with the APIs (numbers.api)."""
    w = est.workload
    led = est.ledger
    wf: dict = {}
    vals = {
        "mode": w.mode, "model": w.model.id, "task": w.task, "kind": w.kind, "latency": w.latency,
        "precision": led.sized.precision_label,
        "low_precision_weights": all(p.bpp <= 1 for p in led.sized.parts),
        "context_tokens": w.context_tokens, "concurrency": w.concurrency, "concurrency_max": bool(w.concurrency_max),
        "params_b": led.sized.params / 1e9, "active_params_b": led.sized.active / 1e9,
        "moe": bool(led.sized.experts), "weights_gb": led.bytes("weights_gb") / GB,
        "kv_cache_gb": led.bytes("kv_cache_gb") / GB, "per_card_need_gb": (est.need_bytes if est.need_bytes is not None else led.bytes("total_gb")) / GB,
        "kv_fallback": led.kv_fallback, "import_restricted": w.constraints.import_restricted,
        "liquid_cooling": w.constraints.liquid_cooling, "power_kw_per_node": w.constraints.power_kw_per_node,
        "deployment": w.constraints.deployment, "load": w.constraints.load,
        "power_kw_per_rack": w.constraints.power_kw_per_rack,
        "fleet_gpus": sum(f.count for f in w.fleet) if w.fleet else None,
        "budget_usd_per_hour": w.constraints.budget_usd_per_hour, "budget_usd": w.constraints.budget_usd, "objective": w.objective,
        "ttft_ms": w.ttft_ms, "tpot_ms": w.tpot_ms, "deadline_hours": w.constraints.deadline_hours, "max_gpus": w.constraints.max_gpus,
        "service_level_stated": w.service_level_stated,
        "seconds_per_image": w.seconds_per_image, "seconds_per_clip": w.seconds_per_clip,
    }
    trained = w.model.num("max_context") if w.model else None
    if trained:
        vals.update(model_max_context=int(trained), context_over_model=w.context_tokens / trained)
    desk = w.constraints.deployment == "workstation"
    if desk:
        vals.update(workstation_max_cards=WORKSTATION_MAX_CARDS, workstation_circuit_kw=WORKSTATION_CIRCUIT_KW)
    if w.training:
        vals.update(concurrency=w.micro_batch, micro_batch=w.micro_batch, method=w.method, optimizer=w.optimizer, zero_stage=w.zero_stage,
                    activation_checkpointing=w.activation_checkpointing, training_tokens=w.training_tokens)
    elif w.kind_spec.tokens:
        vals.update(prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens, kv_tokens=w.kv_tokens)
    compared = api.compare_all(est.candidates, w, catalog) if catalog is not None else {}
    first = next(iter(compared.values()), None)
    if first is not None:
        vals.update(api_match=first.match, api_offers=first.offers_considered,
                    api_usd_per_million_tokens=first.api_usd_per_million_tokens)
    for k, v in vals.items():
        _put(wf, f"workload.{k}", v)
    cands = []
    err = model_error(catalog, w.kind_spec.error_class)[0] if catalog is not None and not w.kind_spec.job else None
    weights_gb = led.bytes("weights_gb") / GB
    unit = unit_of_work(w)
    costs = {c.gpu.id: unit_cost(c, unit) for c in est.candidates
             if c.fits and not (c.price and c.price.get("tier") == "listing")}
    cheapest = min((v for v in costs.values() if v), default=None)
    for c in est.candidates:
        cf = dict(wf)
        cf.update(_gpu_facts(c.gpu))
        price = c.price       # read once: a plan's figures are properties of its parts (numbers.plan)
        cvals = {"fits": c.fits, "price_known": c.usd_per_hour is not None}
        if not c.fits:
            cvals["unfit_reason"] = c.reason       # the planner's words: the memory, or the given layout, that failed
        if c.fits:
            cvals.update(count=c.count, nodes=c.nodes, **c.layout.all_degrees(), per_card_gb=c.per_card_gb,
                         replica_nodes=-(-c.layout.replica_cards // c.gpu.gpus_per_node),
                         headroom_gb=c.headroom_gb, kv_headroom_gb=c.kv_headroom_gb,
                         headroom_share=(c.headroom_gb / c.gpu.memory_gb) if c.headroom_gb is not None and c.gpu.memory_gb else None,
                         kv_headroom_share=(c.kv_headroom_gb / weights_gb) if c.kv_headroom_gb is not None and weights_gb else None,
                         kv_room_sequences=c.max_concurrency,
                         prefill_ms=c.prefill_ms, decode_ms_per_token=c.decode_ms_per_token, tokens_per_s=c.tokens_per_s,
                         tokens_per_s_per_user=c.tokens_per_s_per_user, training_hours=c.training_hours, job_hours=c.job_hours,
                         usd_per_million_io_tokens=c.usd_per_million_io_tokens,
                         rollout_percent=_rollout_percent(c),
                         **_deadline_values(c, w.constraints.deadline_hours), **_service_values(c, w, err),
                         power_kw_per_node=c.power_kw_per_node, usd_per_hour=c.usd_per_hour,
                         usd_per_million_tokens=c.usd_per_million_tokens, usd_per_job=c.usd_per_job,
                         price_tier=price["tier"] if price else None,
                         price_kind=price.get("kind") if price else None,
                         contracted_cluster=bool(price) and price.get("kind") == "contract",
                         **_idle(c, price),
                         unit_cost=unit_cost(c, unit), min_count=c.min_count,
                         rental_multiple=(c.count / c.min_count) if c.min_count else None, zero_stage=c.zero_stage,
                         activation_checkpointing=c.activation_checkpointing, misses_target=c.misses is not None,
                         missed=c.misses, beyond_bound_plan=c.beyond_bound["text"] if c.beyond_bound else None,
                         beyond_bound_met=c.beyond_bound["met"] if c.beyond_bound else None,
                         bound_contract_plan=c.bound_contract["text"] if c.bound_contract else None,
                         knee_plan=c.knee["text"] if c.knee else None,
                         cost_ratio_to_cheapest=(costs[c.gpu.id] / cheapest) if cheapest and costs.get(c.gpu.id) else None)
            a = compared.get(c.gpu.id)
            if a is not None:
                cvals.update(self_host_usd_per_million_tokens=a.plan_usd_per_million_tokens,
                             load_million_tokens_per_day=a.load_tokens_per_day / 1e6 if a.load_tokens_per_day else None,
                             break_even_million_tokens_per_day=a.break_even_tokens_per_day / 1e6 if a.break_even_tokens_per_day else None,
                             break_even_utilisation=a.break_even_utilisation, load_share_of_break_even=a.load_share_of_break_even)
            cvals.update({k: getattr(c, k) for k in ("seconds_per_image", "seconds_per_clip", "images_per_s_per_gpu",
                                                      "usd_per_thousand_images", "usd_per_clip", "latent_patches")})
            cvals["system_power_known"] = c.gpu.num("system_kw") is not None
            cvals["long_request_fits"] = c.long_request_fits
            cvals.update(_price_values(c, price))
            cvals.update(_tco_values(c))
            if w.constraints.power_kw_per_rack is not None and c.power_kw_per_node:
                cvals["nodes_per_rack"] = int(w.constraints.power_kw_per_rack // c.power_kw_per_node)
            if w.constraints.power_kw_per_node is not None and c.power_kw_per_node is not None:
                cvals["power_margin_kw"] = w.constraints.power_kw_per_node - c.power_kw_per_node
            elif desk and c.power_kw_per_node is not None:     # a given limit is judged by power_margin_kw alone
                cvals["circuit_margin_kw"] = WORKSTATION_CIRCUIT_KW - c.power_kw_per_node
            if desk:
                cvals["cards_over_workstation"] = c.count - WORKSTATION_MAX_CARDS
            if w.constraints.budget_usd_per_hour is not None and c.usd_per_hour is not None:
                cvals["budget_margin_usd_per_hour"] = w.constraints.budget_usd_per_hour - c.usd_per_hour
            if w.constraints.budget_usd is not None and c.usd_per_job is not None:
                cvals["job_budget_margin_usd"] = w.constraints.budget_usd - c.usd_per_job
        _put_all(cf, cvals)
        cands.append(cf)
    return wf, cands


def _rollout_percent(c) -> float | None:
    """The percent of an RL step spent generating (the step's phases in speed_explained), None where the
    plan's work has no rollouts."""
    share = ((c.speed_explained or {}).get("rl_step") or {}).get("factor", {}).get("rollout_share")
    return 100 * share if share else None
