"""The vocabulary of facts rules may test: declared once here, with type, unit and meaning.

`gpu-advisor facts` prints it, the rule linter rejects names outside it, and `facts_for` turns an
estimate into the flat fact dictionaries the engine matches (workload fields, plus one candidate per
GPU option carrying its estimator figures and catalog fields).
"""
from __future__ import annotations

from dataclasses import dataclass
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
from advisor.inputs.parallel import DIMS


@dataclass(frozen=True)
class Fact:
    """A fact name rules may test: its type, unit and meaning."""

    type: str      # number | integer | boolean | string
    unit: str
    meaning: str


W, C = "workload", "candidate"

FACTS: dict[str, Fact] = {
    # the workload as understood
    "workload.mode": Fact("string", "", "inference | training | fine-tuning"),
    "workload.model": Fact("string", "", "catalog model id ('custom' for a model given by its figures)"),
    "workload.seconds_per_image": Fact("number", "s", "image generation: the latency target per image (latency: {seconds_per_image: N})"),
    "workload.seconds_per_clip": Fact("number", "s", "video generation: the latency target per clip (latency: {seconds_per_clip: N})"),
    "workload.task": Fact("string", "", "llm | rlhf | image-generation | video-generation"),
    "workload.kind": Fact("string", "", "llm-serving | llm-batch | llm-training | rl-post-training | image-generation | video-generation (advisor/inputs/kinds.py)"),
    "workload.method": Fact("string", "", "training method: full | lora | qlora (training and fine-tuning only)"),
    "workload.precision": Fact("string", "", "weights precision, e.g. bf16, fp8, mxfp4/bf16 for mixed parts"),
    "workload.low_precision_weights": Fact("boolean", "", "weights stored at 8 bits or fewer (K10)"),
    "workload.optimizer": Fact("string", "", "adamw | adamw-8bit | sgd (training only)"),
    "workload.zero_stage": Fact("integer", "", "ZeRO stage 0-3 (training only)"),
    "workload.activation_checkpointing": Fact("boolean", "", "activations recomputed in the backward pass"),
    "workload.context_tokens": Fact("integer", "tokens", "tokens per sequence"),
    "workload.prompt_tokens": Fact("integer", "tokens", "prompt tokens per request (inference)"),
    "workload.output_tokens": Fact("integer", "tokens", "generated tokens per request (inference)"),
    "workload.concurrency": Fact("integer", "sequences", "inference: sequences at once (training: the micro-batch, its old name, for one release)"),
    "workload.micro_batch": Fact("integer", "sequences", "training: sequences per GPU in one micro-batch"),
    "workload.training_tokens": Fact("number", "tokens", "tokens the training job processes"),
    "workload.latency": Fact("string", "", "interactive | batch"),
    "workload.params_b": Fact("number", "billions", "total parameters (K01: sets memory)"),
    "workload.active_params_b": Fact("number", "billions", "parameters active per token (K01: sets compute and bytes moved)"),
    "workload.moe": Fact("boolean", "", "mixture-of-experts model"),
    "workload.weights_gb": Fact("number", "GB", "weights of one model copy"),
    "workload.kv_cache_gb": Fact("number", "GB", "KV cache for all sequences"),
    "workload.per_card_need_gb": Fact("number", "GB", "memory one copy of the job needs before it is split over cards (ledger total; with activation checkpointing when the workload leaves it to the planner)"),
    "workload.kv_fallback": Fact("boolean", "", "KV cache sized by the 50%-of-weights rule: architecture unknown (K05)"),
    "workload.import_restricted": Fact("boolean", "", "the team cannot obtain US export-controlled accelerators"),
    "workload.liquid_cooling": Fact("boolean", "", "the data centre offers liquid cooling"),
    "workload.power_kw_per_node": Fact("number", "kW", "power available per node (absent: no limit given)"),
    "workload.power_kw_per_rack": Fact("number", "kW", "power available per rack (absent: no limit given)"),
    "workload.fleet_gpus": Fact("integer", "GPUs", "GPUs the team owns or has reserved, all kinds (absent: no fleet given)"),
    "workload.deployment": Fact("string", "", "cloud | on-prem | air-gapped | workstation"),
    "workload.model_max_context": Fact("integer", "tokens", "the context the model was trained for (its config's max_position_embeddings; absent: not known)"),
    "workload.context_over_model": Fact("number", "", "context_tokens / model_max_context (above 1: the model runs only with RoPE scaling, up to x4, crosschecks.ROPE_SCALING_MAX)"),
    "workload.concurrency_max": Fact("boolean", "", "inference: concurrency: max, the largest batch the memory holds (workload.concurrency is then no number the user gave)"),
    "workload.kv_tokens": Fact("integer", "tokens", "tokens of KV cache one sequence is sized at: the stated prompt + output, up to context_tokens"),
    "workload.workstation_max_cards": Fact("integer", "GPUs", "on a workstation: the cards one tower takes (K02; numbers.power, which the planner sizes with)"),
    "workload.workstation_circuit_kw": Fact("number", "kW", "on a workstation: a 15 A / 120 V household circuit's continuous load (NEC_15A; numbers.power)"),
    "workload.load": Fact("string", "", "steady | irregular"),
    "workload.budget_usd_per_hour": Fact("number", "USD/h", "most the team pays per hour (absent: no limit given)"),
    "workload.budget_usd": Fact("number", "USD", "training: most the team pays for the whole job (absent: no limit given)"),
    "workload.objective": Fact("string", "", "what the plan minimises: cost | time | cards"),
    "workload.ttft_ms": Fact("number", "ms", "service level: time to first token (absent: none stated)"),
    "workload.tpot_ms": Fact("number", "ms", "service level: time per output token (absent: none stated)"),
    "workload.service_level_stated": Fact("boolean", "", "the workload states its own service level (latency: {ttft_ms, tpot_ms}); false: none, or the catalog's default for interactive use"),
    "workload.deadline_hours": Fact("number", "h", "a job with a volume (training, an offline batch job): hours by which it must finish (absent: none stated)"),
    "workload.max_gpus": Fact("integer", "GPUs", "the most GPUs the workload allows (constraints.max_gpus; absent: none stated)"),
    # one candidate per GPU option: catalog fields
    "candidate.gpu": Fact("string", "", "catalog GPU id"),
    "candidate.vendor": Fact("string", "", "nvidia | amd | huawei | intel | google"),
    "candidate.generation": Fact("string", "", "turing | ampere | ada | hopper | blackwell | rubin | cdna3 | cdna4 | davinci | gaudi | tpu"),
    "candidate.class": Fact("string", "", "server | workstation | consumer (K02)"),
    "candidate.status": Fact("string", "", "shipping | announced | discontinued (no longer made: rented or owned, not bought new)"),
    "candidate.launch_year": Fact("integer", "year", "year the GPU launched or ships"),
    "candidate.months_shipping": Fact("integer", "months", "months from the GPU's volume shipping (catalog shipping_since) to the catalog's as_of date"),
    "candidate.memory_gb": Fact("number", "GB", "memory per card (vendor label)"),
    "candidate.bandwidth_tb_s": Fact("number", "TB/s", "memory bandwidth per card"),
    "candidate.bf16_tflops": Fact("number", "TFLOPS", "dense 16-bit matmul rate"),
    "candidate.fp8_native": Fact("boolean", "", "computes FP8 natively (K10)"),
    "candidate.fp4_native": Fact("boolean", "", "computes FP4 natively (K10)"),
    "candidate.interconnect": Fact("string", "", "scale-up link (nvlink-4, nvlink-5, infinity-fabric ...) or 'none'"),
    "candidate.interconnect_gb_s": Fact("number", "GB/s", "scale-up bandwidth per GPU (absent: none)"),
    "candidate.form_factor": Fact("string", "", "sxm | pcie | oam | module | cloud"),
    "candidate.fleet_link": Fact("string", "", "how the team's fleet file gave this GPU's link: pcie | unknown (planned as PCIe) | assumed (an SXM/OAM module's own link, not named); absent: no fleet entry or a named scale-up link"),
    "candidate.gpus_per_node": Fact("integer", "GPUs", "GPUs in one node"),
    "candidate.tdp_w": Fact("number", "W", "power per card (absent: unknown)"),
    "candidate.cooling": Fact("string", "", "air | liquid | air-or-liquid"),
    "candidate.passive_cooling": Fact("boolean", "", "the card has a passive heat sink only: a server chassis' forced airflow cools it (the catalog's cooling note)"),
    "candidate.mig_instances": Fact("integer", "", "MIG partitions (0: none)"),
    "candidate.us_export_controlled": Fact("boolean", "", "subject to US export control"),
    "candidate.software": Fact("string", "", "cuda | rocm | cann | habana | xla"),
    "candidate.software_maturity": Fact("string", "", "mature | maturing | new | limited"),
    # one candidate per GPU option: estimator figures
    "candidate.fits": Fact("boolean", "", "a layout within the GPU limit holds the workload"),
    "candidate.unfit_reason": Fact("string", "", "when no layout fits: why, in the planner's words (the memory needed, or the given layout that cannot run)"),
    "candidate.count": Fact("integer", "GPUs", "cards needed"),
    "candidate.nodes": Fact("integer", "nodes", "nodes needed"),
    "candidate.replica_nodes": Fact("integer", "nodes", "nodes one copy of the model spans (its tensor and pipeline groups; the wider pool of a disaggregated plan): replicas beyond it exchange nothing when serving"),
    "candidate.instances": Fact("integer", "instances", "instances of the offer the plan rents or buys (absent: no offer)"),
    "candidate.crosses_instances": Fact("boolean", "", "traffic crosses the rented instances: a model copy wider than one instance, or disaggregated pools sending KV between them"),
    # every declared layout dimension (advisor.inputs.parallel), in its own words: a new one is a fact at once
    **{f"candidate.{d.field}": Fact("integer", "", f"{d.name} degree ({d.notation}): {d.meaning.format(n='N')}") for d in DIMS},
    "candidate.per_card_gb": Fact("number", "GB", "memory each card needs in the layout"),
    # image and video generation (advisor/kinds/diffusion): the plan's own figures
    "candidate.seconds_per_image": Fact("number", "s", "image generation: seconds from a request to its image on an idle replica"),
    "candidate.seconds_per_clip": Fact("number", "s", "video generation: seconds from a request to its clip on an idle replica"),
    "candidate.images_per_s_per_gpu": Fact("number", "images/s", "image generation: images per second per card"),
    "candidate.usd_per_thousand_images": Fact("number", "USD", "image generation: cost per 1,000 images"),
    "candidate.usd_per_clip": Fact("number", "USD", "video generation: cost per clip"),
    "candidate.latent_patches": Fact("integer", "", "image or video generation: latent patches the denoiser attends over per image or clip"),
    "candidate.headroom_gb": Fact("number", "GB", "memory left on each card"),
    "candidate.headroom_share": Fact("number", "", "headroom_gb / memory_gb: the share of each card left free (below 0.05: within 5% of capacity)"),
    "candidate.kv_headroom_gb": Fact("number", "GB", "memory of one model replica left after the weights (K05, W06)"),
    "candidate.kv_headroom_share": Fact("number", "", "kv_headroom_gb / weights: below 0.5 breaks the 50% rule (K05)"),
    "candidate.kv_room_sequences": Fact("integer", "sequences", "sequences of the workload's length the plan's memory holds beside its weights (numbers.layouts.memory; architecture known)"),
    "candidate.prefill_ms": Fact("number", "ms", "prefill time of one prompt"),
    "candidate.decode_ms_per_token": Fact("number", "ms", "time per generated token at the workload's concurrency"),
    "candidate.tokens_per_s": Fact("number", "tokens/s", "output tokens per second, all users"),
    "candidate.tokens_per_s_per_user": Fact("number", "tokens/s", "output tokens per second for one user"),
    "candidate.training_hours": Fact("number", "h", "hours to process the training tokens"),
    "candidate.rollout_percent": Fact("number", "%", "RL post-training: percent of the step spent generating rollouts (absent for other work and for DPO's none)"),
    "candidate.job_hours": Fact("number", "h", "an offline batch job's hours for its whole volume at the plan's throughput (absent: no volume)"),
    "candidate.usd_per_million_io_tokens": Fact("number", "USD", "an offline batch job's cost per million input + output tokens of its volume"),
    "candidate.training_hours_high": Fact("number", "h", "the high end of the training hours' range (the speed and goodput fits' spread)"),
    "candidate.deadline_share_high": Fact("number", "", "training_hours_high / the workload's deadline_hours: above 1, the plan meets the deadline only at its expected figure"),
    "candidate.service_level_share_high": Fact("number", "", "serving with a stated or default TTFT or TPOT target that the plan meets: the larger of its TTFT and TPOT x (1 + the serving model error) over their targets; above 1, it meets the service level only at its expected figure"),
    "candidate.service_level_high": Fact("string", "", "the figure behind service_level_share_high in words: the expected figure, its target and the figure at the model error's high end"),
    "candidate.power_kw_per_node": Fact("number", "kW", "power per node incl. host (C14)"),
    "candidate.nodes_per_rack": Fact("integer", "nodes", "whole nodes the rack's power feeds (absent: no rack power given)"),
    "candidate.system_power_known": Fact("boolean", "", "power per node comes from the vendor's system specification, not the C14 host factor"),
    "candidate.owned_gpus": Fact("integer", "GPUs", "cards of the plan that the team's fleet already holds (absent: none)"),
    "candidate.added_gpus": Fact("integer", "GPUs", "cards the plan needs beyond the team's fleet of this GPU"),
    "candidate.owned_nodes": Fact("integer", "nodes", "the team's own nodes the plan uses (absent: no fleet of this GPU)"),
    "candidate.added_nodes": Fact("integer", "nodes", "rented instances (or bought servers) the plan adds beside the fleet's nodes (absent: no fleet of this GPU)"),
    "candidate.fabric_kind": Fact("string", "", "the network between the plan's rented instances, as the listing states it (catalog/fabric.yaml; 'not stated by the listing' when none)"),
    "candidate.fabric_gpu_direct": Fact("boolean", "", "the listing states a GPU-direct network between its instances: RDMA or GPUDirect-TCPX/TCPXO (false without a priced listing)"),
    "candidate.fabric_rdma": Fact("boolean", "", "the listing states RDMA (InfiniBand, RoCE, EFA) between its instances"),
    "candidate.fabric_gbps": Fact("number", "Gbit/s", "the listing's scale-out bandwidth per instance (absent: not stated)"),
    "candidate.fabric_refused": Fact("string", "", "the plan's traffic crosses rented instances and no usable listing of the GPU states a GPU-direct network between them: the cheapest listing refused, its network and how many were (absent: priced or not needed)"),
    "candidate.owned_first_gpus": Fact("integer", "GPUs", "the team's own cards serving whole replicas beside this rented plan (numbers.ownedfirst; absent: none)"),
    "candidate.owned_first_users": Fact("integer", "sequences", "the users the team's own replicas serve beside this rented plan"),
    "candidate.owned_first_fleet": Fact("string", "", "the team's cards beside this rented plan, in words (\"32 of 32 a100-80gb-sxm, 4 x TP 8 replicas\")"),
    "candidate.owned_first_usd_per_hour": Fact("number", "USD/h", "the running cost of the team's own replicas beside this rented plan"),
    "candidate.rented_usd_per_hour": Fact("number", "USD/h", "the rented part's hourly price (usd_per_hour less the team's own replicas' running cost)"),
    "candidate.rented_users": Fact("integer", "sequences", "the users the rented part serves"),
    "candidate.power_margin_kw": Fact("number", "kW", "available power per node minus the node's need (absent: no limit given)"),
    "candidate.long_request_fits": Fact("boolean", "", "with the KV cache sized by the stated requests: one request of the full context_tokens fits a replica beside its other sequences (absent: sized at the context)"),
    "candidate.circuit_margin_kw": Fact("number", "kW", "on a workstation without a given power limit: the household circuit's continuous load (workload.workstation_circuit_kw) minus the box's need"),
    "candidate.cards_over_workstation": Fact("integer", "GPUs", "on a workstation: cards beyond what one tower holds (workload.workstation_max_cards); 0 or less when they fit"),
    "candidate.usd_per_hour": Fact("number", "USD/h", "rental cost of the layout (absent: price unknown)"),
    "candidate.budget_margin_usd_per_hour": Fact("number", "USD/h", "budget minus cost per hour (absent: no budget or price)"),
    "candidate.job_budget_margin_usd": Fact("number", "USD", "training: the whole-job budget (budget_usd) minus the plan's cost per job (absent: no such budget or no cost per job)"),
    "candidate.usd_per_million_tokens": Fact("number", "USD", "cost per million output tokens (T07); training without training_tokens: per million training tokens"),
    "candidate.usd_per_job": Fact("number", "USD", "cost of the training job (C16)"),
    "candidate.price_known": Fact("boolean", "", "a price quote exists for this layout"),
    "candidate.idle_gpus": Fact("integer", "GPUs", "GPUs rented with the instances but not used by the layout (K13); unpriced, of a GPU sold only as whole racks (NVL72): those of its racks"),
    "candidate.idle_share": Fact("number", "", "idle_gpus / GPUs rented: 0 when the layout uses every rented GPU"),
    "candidate.price_tier": Fact("string", "", "quote | catalog | listing: how trustworthy the price is"),
    "candidate.price_kind": Fact("string", "", "on-demand | spot | reserved | endpoint | contract (a cluster beyond on-demand capacity) | purchase | owned (the team's fleet): what kind of offer prices the plan"),
    # capacity and spot (issue 21; catalog/capacity.yaml, numbers/cost.py contract, numbers/spot.py)
    "candidate.capacity_instances": Fact("integer", "instances", "the most instances of the plan's listing that can be rented at once (its own figure or the sourced default)"),
    "candidate.price_listings": Fact("integer", "listings", "serving beyond one listing's on-demand capacity: how many listings the replicas are spread over (absent: one)"),
    "candidate.price_providers": Fact("string", "", "the providers of a plan spread over several listings"),
    "candidate.instances_needed": Fact("integer", "instances", "instances of the cheapest listing the plan would need on demand (a contract plan: more than capacity_instances)"),
    "candidate.contract_usd_per_gpu_hour": Fact("number", "USD/GPU-h", "a contracted cluster's sourced rate (price_kind contract)"),
    "candidate.contract_term_months": Fact("integer", "months", "the term the contract rate is for"),
    "candidate.contract_term_usd": Fact("number", "USD", "the whole term's commitment: cluster price per hour x the term's hours"),
    "candidate.contract_job_percent": Fact("number", "%", "training on a contract: the job's hours / the term's hours x 100 (the rest of the term is committed but unused by this job)"),
    "candidate.contract_source": Fact("string", "", "where the contract rate comes from, with its date"),
    "candidate.reservation_days": Fact("integer", "days", "a plan beyond on-demand capacity booked ahead (price_kind reserved): the days of the shortest reservation on sale that covers the job"),
    "candidate.reservation_usd_per_gpu_hour": Fact("number", "USD/GPU-h", "the reservation's published rate"),
    "candidate.reservation_source": Fact("string", "", "who sells the reservation and the date of its rate"),
    "candidate.spot_checkpoint_minutes": Fact("number", "min", "spot training: the checkpoint interval that minimises expected time, sqrt(2 x checkpoint time x MTBF) (Young), at most half the job"),
    "candidate.spot_checkpoint_every": Fact("string", "", "spot training: spot_checkpoint_minutes in words (minutes below 2 h, else hours) with where it comes from (Young's interval, or half the job)"),
    "candidate.spot_checkpoint_seconds": Fact("number", "s", "spot training: time to write one checkpoint (model state / storage bandwidth)"),
    "candidate.spot_mtbf_hours": Fact("number", "h", "spot training: mean hours between interruptions of the job's instances"),
    "candidate.spot_expected_factor": Fact("number", "", "spot training: expected hours / hours without interruptions"),
    "candidate.spot_offer_kind": Fact("string", "", "spot training: hyperscaler spot | neocloud spot or marketplace offer: which interruption figure the offer takes (catalog/capacity.yaml)"),
    "candidate.spot_lost_hours": Fact("number", "h", "spot training: expected wall-clock hours the interruptions lose (half an interval of work redone and a restart each)"),
    "candidate.spot_lost_usd": Fact("number", "USD", "spot training: spot_lost_hours at the plan's hourly price"),
    "candidate.spot_lost_words": Fact("string", "", "spot training: the lost work and the saves in hours and dollars, in words"),
    "candidate.buy_break_even_months": Fact("number", "months", "owned plan (deployment on-prem): months after which buying costs less than renting the same work (absent: it never does)"),
    "candidate.contracted_cluster": Fact("boolean", "", "priced as a contracted cluster (price.kind contract): its nodes come with the cluster's fabric"),
    "candidate.purchase_quote_age_years": Fact("integer", "years", "owned plan: years between its purchase price's quote and the newest quote in catalog/purchase.yaml"),
    "candidate.purchase_quote_date": Fact("string", "", "owned plan: when its purchase price was quoted (catalog/purchase.yaml)"),
    "candidate.buy_write_off_months": Fact("number", "months", "owned plan: the write-off the purchase is amortised over (amortisation_years x 12)"),
    "candidate.buy_pays_back": Fact("boolean", "", "owned plan: buying costs less than renting the same work within the write-off"),
    "candidate.own_usd_per_month": Fact("number", "USD", "owned plan: amortised purchase, power, hosting and maintenance a month"),
    "candidate.rent_usd_per_month": Fact("number", "USD", "owned plan: renting the same work a month at the workload's busy share"),
    "candidate.rent_plan": Fact("string", "", "owned plan: the rental the purchase is compared with (cards x GPU, at the provider)"),
    "candidate.unit_cost": Fact("number", "USD", "cost per unit of work: per job (training with training_tokens), per million training tokens (training without), per million output tokens (serving, batch and interactive alike: objective.unit_of_work)"),
    "candidate.cost_ratio_to_cheapest": Fact("number", "", "unit_cost / the lowest unit_cost of the priced candidates that fit (1: the cheapest; absent: unpriced or listing-only)"),
    "candidate.rental_multiple": Fact("number", "", "cards of the plan / the fewest cards any layout needs (1: no card beyond what the memory needs)"),
    "candidate.min_count": Fact("integer", "GPUs", "the fewest cards any layout of this GPU needs (count may be higher to fill rented instances or meet a deadline)"),
    "candidate.zero_stage": Fact("integer", "", "training: ZeRO stage of the plan (3 = FSDP full sharding)"),
    "candidate.activation_checkpointing": Fact("boolean", "", "training: activations recomputed in the plan"),
    "candidate.misses_target": Fact("boolean", "", "the best plan misses a stated deadline or service level"),
    "candidate.beyond_bound_met": Fact("boolean", "", "the plan that replaces beyond_bound_plan finishes within the 30 days (false: none does within the workload's limits, and it is the fastest of them)"),
    "candidate.beyond_bound_plan": Fact("string", "", "a training job without a deadline whose cheapest plan runs past 30 days (numbers.longjob.LONG_JOB_HOURS): that plan, which the plan within them replaces (absent: none needed or none meets them)"),
    "candidate.bound_contract_plan": Fact("string", "", "a training job without a deadline that finishes within 30 days only on a contract it did not ask for: that contracted plan, with what it commits; the plan is then the fastest on what one listing rents on demand (numbers.longjob; absent: no such contract)"),
    "candidate.knee_plan": Fact("string", "", "a training job without a deadline sized on the knee of cost against time (numbers.longjob.knee): the plan, the cheaper-but-slower and faster-but-dearer plans beside it, in words (absent: a deadline, a run within 30 days, or no run of the knee's lengths is had)"),
    "candidate.missed": Fact("string", "", "the figure that missed the deadline or service level (absent: none missed)"),
    # serving: the plan against the APIs that sell the model (numbers.api, catalog/api-prices.yaml)
    "workload.api_match": Fact("string", "", "model | size-class | none: whether APIs sell this model, only models of its size class, or neither"),
    "workload.api_offers": Fact("integer", "offers", "API rows for the model (or its size class) in catalog/api-prices.yaml"),
    "workload.api_usd_per_million_tokens": Fact("number", "USD", "cheapest API price per million prompt + output tokens at the workload's request shape and prefix_cache_hit"),
    "candidate.self_host_usd_per_million_tokens": Fact("number", "USD", "the plan's cost per million prompt + output tokens at the workload's load (rented: busy hours; owned: running cost)"),
    "candidate.load_million_tokens_per_day": Fact("number", "million tokens", "prompt + output tokens a day the plan serves at the workload's concurrency and utilisation"),
    "candidate.break_even_million_tokens_per_day": Fact("number", "million tokens", "tokens a day above which the plan costs less than the cheapest API"),
    "candidate.break_even_utilisation": Fact("number", "", "break-even load / the plan's tokens in a full day at the workload's concurrency (above 1: never cheaper at this concurrency)"),
    "candidate.load_share_of_break_even": Fact("number", "", "the workload's load / the break-even load (below 1: the API is cheaper)"),
}

SCOPES = ("workload", "candidate", "derived")


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
