"""The value a recommendation is made of: one GPU's plan, frozen once the planner has built it.

A `Plan` is the GPU, its layout (numbers.layouts), what each card holds (layouts.memory), how fast
it runs (numbers.speed) and what it costs (numbers.cost), each part computed once by its own module
and attached by the planner (numbers.planner). Its figures are read by name (`plan.tp`,
`plan.usd_per_hour`): each name is declared once in `Plan` as a `_Figure` of exactly one part, and the
decision record's flat `candidates[]` keys are those names, in the parts' dataclass field order.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache

from advisor.inputs.catalog import GPU
from advisor.numbers.cost import Cost
from advisor.numbers.layouts import Layout, Memory
from advisor.numbers.speed import Speed
from advisor.numbers.terms import rounded

PARTS = ("layout", "memory", "speed", "cost")
_PART_TYPES = {"layout": Layout, "memory": Memory, "speed": Speed, "cost": Cost}
_NOT_FIGURES = ("why",)          # each part's `why` is merged into the plan's, in the planner's order


class _Figure:
    """One figure of a plan's part, read from that part (`plan.usd_per_hour` is `plan.cost.usd_per_hour`);
    a plan without the part (a GPU that holds nothing has no speed) reads the field's default."""

    __slots__ = ("part", "name")

    def __init__(self, part: str):
        self.part = part

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, plan, owner=None):
        if plan is None:
            return self
        value = plan.__dict__[self.part]
        return _default(self.part, self.name) if value is None else getattr(value, self.name)


class _KindFigure(_Figure):
    """A figure of the parts of some kinds only (a diffusion plan's seconds per image, its kinds'
    Speed and Cost subclasses in advisor/kinds/): None on the other kinds' plans, and recorded only
    where it has a value, so their records read as before."""

    __slots__ = ()

    def __get__(self, plan, owner=None):
        if plan is None:
            return self
        value = plan.__dict__[self.part]
        return None if value is None else getattr(value, self.name, None)


@cache
def _owner() -> dict[str, str]:
    """Figure name -> the part that owns it, in the parts' field order (the record's key order). A part's
    field without its `_Figure` line in `Plan`, or declared on another part, is refused here."""
    out: dict[str, str] = {}
    for part, cls in _PART_TYPES.items():
        for f in fields(cls):
            if f.name in _NOT_FIGURES:
                continue
            declared = Plan.__dict__.get(f.name)
            if not isinstance(declared, _Figure) or declared.part != part:
                raise TypeError(f"{cls.__name__}.{f.name} has no figure on Plan: add `{f.name} = _Figure({part!r})`")
            out[f.name] = part
    return out


@dataclass(frozen=True)
class Plan:
    """One GPU sized for the workload. A GPU no layout holds has `fits` false and a `reason`."""

    gpu: GPU
    fits: bool
    layout: Layout | None = None
    memory: Memory | None = None
    speed: Speed | None = None
    cost: Cost | None = None
    compute_precision: str = "bf16"
    engine: str | None = None                     # serving: the engine timing it (catalog/engines.yaml id)
    activation_checkpointing: bool | None = None  # training: activations recomputed in this plan
    reason: str | None = None
    misses: str | None = None                     # the stated deadline or service level it misses, with the figure
    min_count: int | None = None                  # the fewest cards any layout needs (the seeds' figure)
    layouts_considered: int | None = None
    limits: list = field(default_factory=list)   # the planner's limits that bound this plan, each with its figure
    # training without a deadline whose cheapest plan runs past longjob.LONG_JOB_HOURS: that plan
    # (count, hours, cost, text, met), kept beside the plan that finishes within them (longjob.bounded)
    beyond_bound: dict | None = None
    bound_missed: str | None = None    # no plan within the 30-day bound: how the fastest the limits allow misses it
    # the 30-day bound met only on a contract the workload did not ask for: that plan (count, hours, cost,
    # term, commitment, text), kept beside the fastest on on-demand capacity (numbers.longjob.within)
    bound_contract: dict | None = None
    # training without a deadline: the run on the knee of cost against time and its neighbours (days,
    # tolerance, the cheaper-but-slower and faster-but-dearer plans in words, text: numbers.longjob.knee)
    knee: dict | None = None
    ideal: dict = field(default_factory=dict)     # the seed's ideal figures at spec peaks (K06, K19, K08)
    # the plan table: the chosen layout and the best others tried, each with why it lost (numbers.plantable
    # PlanTable); recorded apart from the candidate's figures (plantable.record, judgement/record.py)
    table: object = None
    why: dict = field(default_factory=dict)       # figure -> how it was computed, in the memo's order

    # the parts' figures, each read by name from the part that computes it (`_owner` checks this list
    # against the parts' fields: a new field of Layout, Memory, Speed or Cost needs its line here)
    # numbers.layouts.Layout
    tp = _Figure("layout")
    pp = _Figure("layout")
    dp = _Figure("layout")
    per_card_bytes = _Figure("layout")
    rep = _Figure("layout")
    zero_stage = _Figure("layout")
    min_dp = _Figure("layout")
    ep = _Figure("layout")
    attention_dp = _Figure("layout")
    pools = _Figure("layout")
    interleave = _Figure("layout")
    cfg = _Figure("layout")
    sp = _Figure("layout")
    # numbers.layouts.Memory
    per_card_gb = _Figure("memory")
    headroom_gb = _Figure("memory")
    kv_headroom_gb = _Figure("memory")
    max_concurrency = _Figure("memory")
    max_context_tokens = _Figure("memory")
    long_request_fits = _Figure("memory")
    # numbers.speed.Speed
    concurrency = _Figure("speed")
    prefill_ms = _Figure("speed")
    ttft_ms = _Figure("speed")
    capacity_requests_per_s = _Figure("speed")
    tpot_ms = _Figure("speed")
    decode_ms_per_token = _Figure("speed")
    tokens_per_s = _Figure("speed")
    tokens_per_s_per_user = _Figure("speed")
    tokens_per_s_per_gpu = _Figure("speed")
    training_tokens_per_s = _Figure("speed")
    mfu = _Figure("speed")
    training_hours = _Figure("speed")
    training_hours_range = _Figure("speed")
    step_hours = _Figure("speed")
    goodput = _Figure("speed")
    global_batch = _Figure("speed")
    micro_batch = _Figure("speed")
    micro_batches = _Figure("speed")
    pipeline_bubble = _Figure("speed")
    virtual_stages = _Figure("speed")
    hours_per_million_tokens = _Figure("speed")
    job_hours = _Figure("speed")
    speed_explained = _Figure("speed")
    # numbers.cost.Cost
    power_kw_per_node = _Figure("cost")
    usd_per_hour = _Figure("cost")
    usd_per_million_tokens = _Figure("cost")
    usd_per_job = _Figure("cost")
    usd_per_million_io_tokens = _Figure("cost")
    price = _Figure("cost")
    price_unknown = _Figure("cost")
    tco = _Figure("cost")
    # the figures of image and video generation (advisor/kinds/diffusion: its Speed and Cost subclasses)
    seconds_per_image = _KindFigure("speed")
    seconds_per_clip = _KindFigure("speed")
    images_per_s_per_gpu = _KindFigure("speed")
    clips_per_hour_per_gpu = _KindFigure("speed")
    images_per_s = _KindFigure("speed")
    clips_per_hour = _KindFigure("speed")
    latent_patches = _KindFigure("speed")
    hours_per_unit = _KindFigure("speed")
    usd_per_thousand_images = _KindFigure("cost")
    usd_per_clip = _KindFigure("cost")
    usd_per_video_minute = _KindFigure("cost")

    @property
    def count(self) -> int | None:
        return self.layout.count if self.layout else None

    @property
    def nodes(self) -> int | None:
        return self.layout.nodes(self.gpu) if self.layout else None

    def as_dict(self) -> dict:
        """The record's candidate entry: the plan's own fields and every part's recorded figures, flat."""
        d = {"gpu": self.gpu.id, "count": self.count, "nodes": self.nodes,
             "layout": self.layout.as_dict() if self.layout else None}
        for name in _recorded():
            d[name] = _plain(getattr(self, name))
        for name in KIND_FIGURES:
            v = getattr(self, name)
            if v is not None:
                d[name] = _plain(v)
        d["memory_gb"] = self.gpu.memory_gb
        return d


@cache
def _recorded() -> tuple[str, ...]:
    """The figures a record's candidate entry keeps, in its key order: every part's recorded ones, then the
    plan's own fields (but its GPU and table); fixed by the classes, so listed once (a record lists 34 plans)."""
    parts = [name for name, part in _owner().items()
             if _PART_TYPES[part].__dataclass_fields__[name].metadata.get("record", True)]
    return tuple(parts) + tuple(f.name for f in fields(Plan) if f.name not in PARTS and f.name not in ("gpu", "table"))


def _default(part: str, name: str):
    """A figure of a part the plan does not have (a GPU that holds nothing has no speed): its default."""
    from dataclasses import MISSING
    f = _PART_TYPES[part].__dataclass_fields__[name]
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None if f.default is MISSING else f.default


def _plain(v):
    if isinstance(v, list):
        return [rounded(x) for x in v]
    if isinstance(v, dict):
        return {a: (rounded(b) if not isinstance(b, dict) else {x: rounded(y) for x, y in b.items()}) for a, b in v.items()}
    return rounded(v)


#: the figures of some kinds only, in the record's key order
KIND_FIGURES = tuple(k for k, v in Plan.__dict__.items() if isinstance(v, _KindFigure))

_owner()    # a part's field without its `_Figure` line in Plan fails at import, not at the first record
