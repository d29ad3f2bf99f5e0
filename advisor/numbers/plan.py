"""The value a recommendation is made of: one GPU's plan, frozen once the planner has built it.

A `Plan` is the GPU, its layout (numbers.layouts), what each card holds (layouts.memory), how fast
it runs (numbers.speed) and what it costs (numbers.cost), each part computed once by its own module
and attached by the planner (numbers.planner). Its figures are read by name (`plan.tp`,
`plan.usd_per_hour`): each name belongs to exactly one part, and the decision record's flat
`candidates[]` keys are those names, taken from the parts' dataclass fields.
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


@cache
def _owner() -> dict[str, str]:
    """Figure name -> the part that owns it (a name in two parts would be ambiguous: refused)."""
    out: dict[str, str] = {}
    for part, cls in _PART_TYPES.items():
        for f in fields(cls):
            if f.name in _NOT_FIGURES:
                continue
            if f.name in out:
                raise TypeError(f"{f.name} is a field of both {out[f.name]} and {part}")
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
    ideal: dict = field(default_factory=dict)     # the seed's ideal figures at spec peaks (K06, K19, K08)
    why: dict = field(default_factory=dict)       # figure -> how it was computed, in the memo's order

    def __getattr__(self, name: str):
        # only called for names that are not the plan's own fields: a figure of one of its parts
        part = _owner().get(name)
        if part is None:
            raise AttributeError(f"Plan has no figure {name!r}")
        value = object.__getattribute__(self, part)
        return _default(part, name) if value is None else getattr(value, name)

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
        for name, part in _owner().items():
            if _PART_TYPES[part].__dataclass_fields__[name].metadata.get("record", True):
                d[name] = _plain(getattr(self, name))
        for f in fields(self):
            if f.name not in PARTS and f.name != "gpu":
                d[f.name] = _plain(getattr(self, f.name))
        d["memory_gb"] = self.gpu.memory_gb
        return d


def _figure(name: str, part: str) -> property:
    def read(self):
        value = object.__getattribute__(self, part)
        return _default(part, name) if value is None else getattr(value, name)
    read.__name__ = name
    return property(read, doc=f"{name} of the plan's {part}")


# each part's figures as properties of the plan: read as `__getattr__` reads them, without the failed
# lookup first (the planner and the facts read thousands of figures per decision)
for _name, _part in _owner().items():
    if _name not in Plan.__dataclass_fields__ and not hasattr(Plan, _name):
        setattr(Plan, _name, _figure(_name, _part))


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
