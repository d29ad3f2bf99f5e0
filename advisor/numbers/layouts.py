"""Which layout: for one GPU, the layouts an expert would consider, each holding the ledger.

The planner enumerates what practitioners search (C12, K14): tensor parallelism inside a node only,
over 1, 2, 4, 8 cards that divide the KV heads (or replicate them); pipeline stages only across
nodes, each stage a whole node of tensor parallelism; data-parallel replicas for memory (KV cache,
ZeRO/FSDP shards), to fill the instances that are rented anyway, to meet a deadline or a service
level. For training it also tries ZeRO-0..3 (3 = FSDP full sharding) when the workload does not fix
`zero_stage`. It never prices or times a layout (numbers.cost and numbers.speed do) and never picks
one (numbers.planner does, by the workload's objective); `memory` gives what a chosen layout leaves.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import replace

from advisor.base.kept import Kept, fingerprint
from advisor.inputs.catalog import GPU
from advisor.inputs.parallel import Layout, Pools  # noqa: F401  (layouts.Layout, layouts.Pools)
# what a card holds: kept beside the layouts that read it, as numbers.layouts.memory and friends
from advisor.numbers.cardmemory import PREFILL_PROMPTS_IN_FLIGHT, Memory, fixed_bytes, kv_replication, memory  # noqa: F401
from advisor.numbers import comm
from advisor.numbers.ledger import TRAINING_SAFETY, Ledger, training_usable_bytes
from advisor.numbers.terms import GB
from advisor.inputs.workload import Workload

# the planner's ceiling when the workload sets no max_gpus: the largest clusters built (issue 21 asks
# for at least 100,000 GPUs) and the most `constraints.max_gpus` accepts (inputs.workload); when it
# binds, the plan says so (planner: `limits`)
MAX_GPUS = 100_000
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)
# the widest tensor split deployed: one HGX board's 8 GPUs (K14). On a rack-scale NVLink domain (NVL72:
# 72 GPUs per "node", the unit rented and bought) tensor parallelism stays at 8 too; the rest of the
# domain takes expert-parallel / attention-DP groups, pipeline stages and replicas
TENSOR_SPLIT_MAX = 8
# the widest MoE serving DEP group beyond a node's NVLink (a stated choice: SGLang serves DeepSeek-V3 on
# 2-12 H100 nodes with DP attention and EP over DeepEP, DeepSeek's own decode runs EP 144)
CROSS_NODE_DEP = 32
ZERO_STAGES = (0, 1, 2, 3)         # 3 = weights sharded too (FSDP FULL_SHARD)


def _tp_options(gpu: GPU, kv_heads: int | None = None) -> list[int]:
    """TP degrees inside one node that split the KV heads evenly or replicate them whole (K14, C12);
    a whole node's TP stays available (padded heads) so that a model too big for one node can still
    take pipeline stages across nodes."""
    sizes = [t for t in TP_SIZES if t <= tensor_split_max(gpu)]
    even = [t for t in sizes if not kv_heads or kv_heads % t == 0 or t % kv_heads == 0]
    return even if sizes[-1] in even else even + [sizes[-1]]


def tensor_split_max(gpu: GPU) -> int:
    """The widest tensor split on this GPU: a node of it, at most TENSOR_SPLIT_MAX cards."""
    return min(gpu.gpus_per_node, TENSOR_SPLIT_MAX)


def rack_unit(gpu: GPU) -> int | None:
    """GPUs that are rented and bought only together, whatever a price source says: a rack-scale
    system's whole rack (NVL72: one 72-GPU "node", CoreWeave deploys full racks only), else None."""
    return gpu.gpus_per_node if gpu.gpus_per_node > TENSOR_SPLIT_MAX else None


def _pp_options(tp: int, widest: int, layers: int, fits) -> list[int]:
    """Pipeline stages only across nodes (K14; on an NVL72 rack, across its NVLink domain): PP 1, or
    when TP is the widest split (`widest`: a node, or 8 on a rack), the fewest such stages that hold
    the model (`fits(pp)`)."""
    if fits(1):
        return [1]
    if tp != widest:
        return []
    for pp in range(2, layers + 1):
        if fits(pp):
            return [pp]
    return []


#: per ledger (alive as long as it is): the replica split of each card size, concurrency and split
_REPLICAS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LAST_REPLICAS: list = [None, None]      # (ledger, its entry of _REPLICAS): a weak lookup makes a weakref each time


def inference_replicas(w: Workload, led: Ledger, gpu: GPU, lay: Layout):
    """(per-card bytes of a replica's fixed part, KV bytes per card, fewest replicas, KV replication)
    for `lay`'s TP x PP (with its attention ranks in the TP group; its dp is not read), or None when the fixed part
    alone does not fit. Kept per ledger by what else it reads (the card's memory, the concurrency):
    the planner asks again for every pipeline depth it tries and every replica count of a layout."""
    if _LAST_REPLICAS[0] is led:      # the planner asks hundreds of times for one ledger in a row
        mine = _LAST_REPLICAS[1]
    else:
        mine = _REPLICAS.get(led)
        if mine is None:
            mine = _REPLICAS[led] = {}
        _LAST_REPLICAS[:] = [led, mine]
    key = (gpu.memory_gb, w.concurrency, lay.form)
    if key not in mine:
        mine[key] = _inference_replicas(w, led, gpu, lay)
    return mine[key]


def _inference_replicas(w: Workload, led: Ledger, gpu: GPU, lay: Layout):
    mem = gpu.memory_gb * GB
    rep = kv_replication(led, lay)
    fixed = fixed_bytes(led, lay)
    if fixed >= mem:
        return None
    kv_card = led.bytes("kv_cache_gb") * rep / (lay.tp * lay.pp)
    if led.kv_fallback:     # a fixed reservation, not per-sequence: it cannot be spread over replicas
        dp = 1 if fixed + kv_card <= mem else None
    else:
        dp = max(1, math.ceil(kv_card / (mem - fixed) - 1e-9)) if kv_card > 0 else 1
        dp = min(dp, w.concurrency) if fixed + kv_card / min(dp, w.concurrency) <= mem else None
    if dp is None:
        return None
    return fixed, kv_card, dp, rep


def moe_options(w: Workload, gpu: GPU, tp: int) -> list[tuple[int, int]]:
    """(ep, attention_dp) pairs practitioners serve a MoE model with on a TP group (SGLang, vLLM and
    TensorRT-LLM's layouts): plain TP, TP attention with expert parallelism ("TEP"), and data-parallel
    attention with expert parallelism ("DEP"); a dense model (or a single card) has only plain TP."""
    n = w.model.num("experts")
    k = w.model.num("experts_per_token")
    if tp == 1 or not (n and k and n > k) or n % tp:
        return [(1, 1)]
    return [(1, 1), (tp, 1), (tp, tp)]


#: per ledger (alive as long as it is): the layouts enumerated for each GPU shape (below)
_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _per_shape(kind: str, w: Workload, led: Ledger, gpu: GPU, max_gpus: int, extra, make) -> list[Layout]:
    """`make()` once per ledger and GPU shape: the enumerations read of a GPU only its memory, its node
    size and its NVLink domain (a Layout holds no GPU), and of the workload only its model and
    concurrency, so the catalog's GPUs of one shape (34 GPUs, 18 shapes) share their layouts."""
    mine = _LAYOUTS.get(led)
    if mine is None:
        mine = _LAYOUTS[led] = {}
    key = (kind, fingerprint(w.model), w.concurrency, gpu.memory_gb, gpu.gpus_per_node, comm.nvlink_domain(gpu), max_gpus, extra)
    hit = mine.get(key)
    if hit is None:
        hit = mine[key] = tuple(make())
    return list(hit)


def inference_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int) -> list[Layout]:
    """Every (TP, PP) that holds one replica, with the fewest data-parallel replicas its KV cache
    needs; for a MoE model also every expert-parallel and attention-DP form of each TP group inside a
    node, and DEP groups (attention DP = EP = the group) up to the NVLink domain or CROSS_NODE_DEP cards."""
    return _per_shape("inference", w, led, gpu, max_gpus, None, lambda: _inference_layouts(w, led, gpu, max_gpus))


def _inference_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int) -> list[Layout]:
    kv_heads = led.kv.kv_heads if led.kv else None
    layers = int(w.model.num("layers") or 64)
    out = []
    # a rack-scale NVLink domain (NVL72) holds DEP groups wider than a node: each card one attention
    # rank and 1/tp of the experts, so no tensor split leaves a card and the all-to-all stays on NVLink;
    # elsewhere up to CROSS_NODE_DEP cards over the network too (review 19, F1: DeepSeek-R1, 2,048 users)
    domain = comm.nvlink_domain(gpu)
    widest = tensor_split_max(gpu)
    wide = [t for t in TP_SIZES if widest < t <= max(domain, CROSS_NODE_DEP) and moe_options(w, gpu, t)[-1] == (t, t)]
    for t in wide:
        dep = Layout(t, 1, 1, ep=t, attention_dp=t)
        r = inference_replicas(w, led, gpu, dep)
        if r and t * r[2] <= max_gpus:
            fixed, kv_card, dp, rep = r
            out.append(Layout(t, 1, dp, fixed + kv_card / dp, rep, min_dp=dp, ep=t, attention_dp=t))
    for tp in _tp_options(gpu, kv_heads):
        for ep, adp in moe_options(w, gpu, tp):
            # (Layouts built, not replace()d: the enumeration tries every TP, EP form and depth)
            for pp in _pp_options(tp, widest, layers, lambda p: inference_replicas(w, led, gpu, Layout(tp, p, 1, ep=ep, attention_dp=adp)) is not None):
                fixed, kv_card, dp, rep = inference_replicas(w, led, gpu, Layout(tp, pp, 1, ep=ep, attention_dp=adp))
                if tp * pp * dp <= max_gpus:
                    out.append(Layout(tp, pp, dp, fixed + kv_card / dp, rep, min_dp=dp, ep=ep, attention_dp=adp))
    return out


def with_replicas(w: Workload, led: Ledger, gpu: GPU, base: Layout, dp: int) -> Layout:
    """The same TP x PP (and EP, attention DP) with `dp` replicas (at least the base's): memory per
    card recomputed. Training with EP: `dp` is rounded up until the EP ranks divide TP x DP."""
    dp = max(dp, base.min_dp)
    if w.training:
        dp = ep_dp(base, dp)
        return replace(base, dp=dp, per_card_bytes=training_per_card(led, base, base.zero_stage or 0, dp=dp))
    fixed, kv_card, _, _ = inference_replicas(w, led, gpu, base)
    return replace(base, dp=dp, per_card_bytes=fixed + kv_card / min(dp, w.concurrency))


def ep_dp(lay: Layout, dp: int) -> int:
    """The fewest data-parallel replicas, at least `dp`, whose TP x DP ranks `lay`'s expert-parallel
    ranks divide (Megatron-Core draws the EP group from the data-parallel x tensor ranks)."""
    if lay.ep <= 1:
        return dp
    step = lay.ep // math.gcd(lay.tp, lay.ep)
    return math.ceil(dp / step) * step


def expert_split(lay: Layout) -> int:
    """Cards one pipeline stage spreads each routed expert's states over: TP without expert
    parallelism; with it, the EP ranks, each holding whole experts (expert tensor parallelism 1, as
    NeMo's MoE recipes set it: expert_tensor_parallel_size 1)."""
    return lay.tp if lay.ep <= 1 else lay.ep


def _training_split(led: Ledger, z: int):
    """(ZeRO-sharded bytes, unsharded dense bytes, unsharded expert bytes) of one replica's states."""
    W, G, O, A = (led.bytes(k) for k in ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb"))
    eW, eG, eO = led.training_expert_bytes()
    keep_w, keep_g, keep_o = z < 3, z < 2, z < 1
    sharded = (W if not keep_w else 0) + (G if not keep_g else 0) + (O if not keep_o else 0)
    expert = (eW if keep_w else 0) + (eG if keep_g else 0) + (eO if keep_o else 0)
    return sharded, W + G + O + A - sharded - expert, expert


#: (a ledger, a ZeRO stage) -> its training split
_SPLITS = Kept("training split", 256)


def _split_of(led: Ledger, z: int) -> tuple:
    """_training_split once per (frozen) ledger and stage: the planner sizes every replica count of
    every base layout it tries (with_replicas) from it."""
    return _SPLITS.get((fingerprint(led), z), lambda: _training_split(led, z))


def training_per_card(led: Ledger, lay: Layout, z: int, split: tuple | None = None, dp: int | None = None) -> float:
    """Bytes per card (with the x1.2 safety of C06): the unsharded dense part split over TP x PP, the
    unsharded expert part over PP x the expert split (TP, or EP with expert parallelism), the
    ZeRO-sharded part over all cards (the experts' shards over their expert-data-parallel ranks:
    TP x DP / EP of them, the same cards in all). `split`: _training_split(led, z), when the caller
    has it (the enumeration sizes every TP, PP and EP of a stage from one); `dp`: with that many
    replicas instead of the layout's own (with_replicas sizes a base once per count it tries)."""
    sharded, dense, expert = split or _split_of(led, z)
    m = lay.tp * lay.pp
    return (dense / m + expert / (lay.pp * expert_split(lay)) + sharded / (m * (dp or lay.dp))) * TRAINING_SAFETY


#: expert-parallel sizes tried for training (Megatron-Core, NeMo and torchtitan recipes use powers of 2)
EP_SIZES = (2, 4, 8, 16, 32, 64, 128, 256)
#: the widest expert-parallel group a published pre-training ran: DeepSeek-V3's EP 64 over 8 nodes (DEEPSEEK_V3_BATCH)
WIDEST_TRAINING_EP = 64


def training_ep_options(w: Workload, gpu: GPU, tp: int) -> tuple[list[int], list[int]]:
    """(EP sizes inside the NVLink domain, EP sizes beyond it) for training a MoE model at TP `tp`:
    sizes dividing its experts; an EP group inside the domain (one card per rank) keeps the all-to-all
    on NVLink, and the narrowest wider one that holds the model is tried beside them, for shallower
    pipelines (DeepSeek-V3 trained with EP 64 over 8 nodes; review 19, F2). A dense model has EP 1 only."""
    n, k = w.model.num("experts"), w.model.num("experts_per_token")
    if not (n and k and n > k):
        return [1], []
    domain = comm.nvlink_domain(gpu)
    sizes = [e for e in EP_SIZES if e <= n and int(n) % e == 0]
    return [1] + [e for e in sizes if e <= domain], [e for e in sizes if e > domain]


def training_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int, stages=ZERO_STAGES, deep: bool = False) -> list[Layout]:
    """Every ZeRO stage x (TP, PP, EP) that holds the job, with the fewest replicas its shards need;
    for a MoE model every EP size inside the NVLink domain and the narrowest wider one that fits;
    `deep`: also deeper pipelines of a dense model at the node's TP (deeper_stages), the way to more GPUs
    once the global batch feeds no more data-parallel replicas."""
    return _per_shape("training", w, led, gpu, max_gpus, (tuple(stages), deep),
                      lambda: _training_layouts(w, led, gpu, max_gpus, stages, deep))


def deeper_stages(fewest: int, layers: int) -> list[int]:
    """Pipeline depths beyond the fewest that hold the model, tried when a deadline may need more GPUs
    than the global batch's replicas: the powers of two above it, with at least two layers per stage
    (Llama 3 405B: 126 layers on 16 stages; NeMo's 70B and 405B recipes run PP 4-16)."""
    out, pp = [], 2
    while pp * 2 <= layers:
        if pp > fewest:
            out.append(pp)
        pp *= 2
    return out


def _training_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int, stages, deep: bool = False) -> list[Layout]:
    mem = training_usable_bytes(gpu.memory_gb) / TRAINING_SAFETY     # the headroom kept free (issue 45)
    layers = int(w.model.num("layers") or 64)
    kv_heads = w.model.num("kv_heads")      # Megatron-style TP splits the KV-head groups evenly
    widest = tensor_split_max(gpu)
    # the TP degrees and each one's EP sizes read no ZeRO stage: found once, not once per stage
    tp_eps = [(tp, training_ep_options(w, gpu, tp)) for tp in _tp_options(gpu, int(kv_heads) if kv_heads else None)]
    out = []
    for z in stages:
        split = _split_of(led, z)
        sharded, dense, expert = split
        for tp, (inside, across) in tp_eps:
            def dp_for(form: Layout, pp: int):
                """The fewest replicas of `form` on `pp` stages that hold the job, or None."""
                m = form.tp * pp
                room = mem - dense / m - expert / (pp * expert_split(form))
                if room <= 0:
                    return None
                dp = 1 if sharded / m <= room else math.ceil(sharded / m / room - 1e-9)
                dp = ep_dp(form, dp)
                return dp if m * dp <= max_gpus else None
            for group in (inside, across):
                found = False
                for ep in group:
                    # a pipeline stage is a node's worth of model-parallel cards: TP, or with experts the
                    # wider of TP and the EP group
                    width = tp if ep == 1 else min(max(tp, ep), widest)
                    form = Layout(tp, 1, 1, ep=ep, zero_stage=z)
                    stages = _pp_options(width, widest, layers, lambda p, form=form: dp_for(form, p) is not None)
                    if deep and ep == 1 and stages and width == widest:
                        stages = stages + deeper_stages(stages[0], layers)
                    for pp in (_even_stages(stages, layers) if ep > 1 else stages):
                        dp = dp_for(form, pp)
                        if dp is None:
                            continue
                        # (built, not replace()d: this runs for every ZeRO stage, TP, EP and depth)
                        per_card = training_per_card(led, Layout(tp, pp, dp, ep=ep), z, split)
                        out.append(Layout(tp, pp, dp, per_card, zero_stage=z, min_dp=dp, ep=ep,
                                          interleave=interleaved_stages(layers, pp, w.virtual_stages)))
                        found = True
                    if found and group is across and ep >= WIDEST_TRAINING_EP:
                        break       # cross-node EP sizes that hold the model, up to the widest published one
    return out


def interleaved_stages(layers: int, pp: int, given: int | None = None) -> int | None:
    """Model chunks per card a searched pipeline of `pp` stages is run with: Megatron-LM's interleaved
    schedule (--num-layers-per-virtual-pipeline-stage), which cuts the bubble v-fold, as Llama 3's and
    NeMo's large runs use: the workload's `virtual_stages` where each chunk keeps a layer; None when it
    states none (the planner's choice once the micro-batches are known: trainspeed.schedule); 1 without a
    pipeline."""
    if pp <= 1:
        return 1
    if given:
        return given if pp * given <= layers else 1
    return None


def _even_stages(stages: list[int], layers: int) -> list[int]:
    """Pipeline depths tried for an expert-parallel training layout: the fewest that hold it, the fewest
    that split the layers evenly up to twice that, and twice that (NeMo's MoE recipes take PP 4 where 2
    would hold gpt-oss-120b: deeper stages leave the memory that spares recomputing activations). No
    deeper search for an even split: Megatron-LM runs uneven stages (--decoder-first/last-pipeline-
    num-layers; DeepSeek-V3's 61 layers on 16 stages), and the only even split of a prime count of
    layers is a layer per stage, a depth nobody runs (review 11: PP 61 x EP 8 on 488 H100)."""
    if not stages or stages[0] <= 1:
        return stages
    even = next((p for p in range(stages[0], min(2 * stages[0], layers) + 1) if layers % p == 0), None)
    if even is None:
        return stages
    return sorted({stages[0], even} | ({2 * even} if layers % (2 * even) == 0 else set()))


def given_layout(w: Workload, led: Ledger, gpu: GPU, stages=ZERO_STAGES) -> Layout | None:
    """The workload's own `layout: {tp, pp, dp, ep, attention_dp}` on this GPU, or None when it does
    not hold the job (for training, with the lowest ZeRO stage that makes it fit; `ep` there is the
    expert-parallel ranks drawn from TP x DP). A tensor split wider than a node is no layout at all: it
    stays inside one node's links (K14)."""
    given = replace(w.layout, min_dp=w.layout.dp)
    if w.training:
        if given.tp > gpu.gpus_per_node:
            return None
        mem = training_usable_bytes(gpu.memory_gb)
        for z in stages:
            per_card = training_per_card(led, given, z)
            if per_card <= mem:
                return replace(given, per_card_bytes=per_card, zero_stage=z, interleave=w.virtual_stages or 1)
        return None
    if given.split_width > gpu.gpus_per_node:
        return None
    r = inference_replicas(w, led, gpu, given)
    if r is None:
        return None
    fixed, kv_card, _, rep = r
    per_card = fixed + kv_card / min(given.dp, w.concurrency)
    return replace(given, per_card_bytes=per_card, rep=rep) if per_card <= gpu.memory_gb * GB else None


def _pool_form(form: Layout) -> Layout:
    """A pool's form: its dimensions only (Layout.form), no sizes, no replicas."""
    return Layout(1, 1, 1).with_form(form.form)


def prefill_pool(w: Workload, led: Ledger, gpu: GPU, form: Layout, replicas: int) -> Layout | None:
    """A disaggregated plan's prefill pool: `replicas` replicas of `form` (its TP x PP, EP and
    attention DP; its dp is not read), each card holding the weights and the KV cache of the prompts
    in prefill; None when that does not fit (or the KV size is unknown: nothing to size the transfer by)."""
    if not led.kv or led.kv_fallback or form.split_width > gpu.gpus_per_node:
        return None
    rep = kv_replication(led, form)
    kv = led.kv.bytes_per_sequence(w.prompt_tokens) * rep * PREFILL_PROMPTS_IN_FLIGHT * form.attention_dp / (form.tp * form.pp)
    per_card = fixed_bytes(led, form) + kv
    if per_card > gpu.memory_gb * GB:
        return None
    return replace(_pool_form(form), dp=replicas, per_card_bytes=per_card, rep=rep)


def decode_pool(w: Workload, led: Ledger, gpu: GPU, form: Layout, replicas: int | None = None) -> Layout | None:
    """A disaggregated plan's decode pool: replicas of `form` (its dp is not read) holding the weights
    and the KV cache of every decoding sequence (prompt and output), at least as many as that cache
    needs (`replicas` None: the fewest); None when they do not fit."""
    if not led.kv or led.kv_fallback or form.split_width > gpu.gpus_per_node:
        return None
    r = inference_replicas(w, led, gpu, form)
    if r is None:
        return None
    fixed, kv_card, least, rep = r
    dp = max(least, replicas or least)
    return replace(_pool_form(form), dp=dp, per_card_bytes=fixed + kv_card / min(dp, w.concurrency), rep=rep, min_dp=least)


def disaggregated(prefill: Layout, decode: Layout) -> Layout:
    """The plan's one layout value for two pools: the decode pool's dimensions, the larger per-card
    need of the two, both pools kept."""
    return replace(decode, pools=Pools(prefill, decode), per_card_bytes=max(prefill.per_card_bytes, decode.per_card_bytes))


def given_pools(w: Workload, led: Ledger, gpu: GPU) -> Layout | None:
    """The workload's own `layout: {prefill: {...}, decode: {...}}` on this GPU, exactly as given, or
    None when a pool does not hold its work on it."""
    given = w.pools
    pf = prefill_pool(w, led, gpu, given.prefill, given.prefill.dp)
    dc = decode_pool(w, led, gpu, given.decode, given.decode.dp)
    if pf is None or dc is None or dc.dp != given.decode.dp:
        return None
    return disaggregated(pf, dc)


def pool_forms(bases: list[Layout]) -> list[Layout]:
    """The forms (tp, pp, ep, attention_dp; no replicas) a pool may take on a GPU: those of the
    colocated layouts that hold the model on it (the same memory and node limits), each once."""
    return [Layout(1, 1, 1).with_form(f) for f in sorted({b.form for b in bases})]


def min_cards(layouts: list[Layout]) -> int | None:
    """The fewest cards any layout needs (the seeds' "2x H200 or 3x 80 GB cards" figure)."""
    return min((lay.count for lay in layouts), default=None)
