"""The planner's plan table: every layout it tried for one GPU, as named rows, and the few best kept on
the Plan with why each lost (as SkyPilot's optimizer keeps its candidates table).

`Tried` is one row of the search (numbers.planner): the order key, the order it was tried in, the lean
plan and the workload and ledger variant it was timed for. `PlanRow` is what is kept of it on the Plan
(`Plan.table`, a `PlanTable`, whose `rows` are worded when read): the layout, its cards, the figures a user compares (price, unit cost, time), whether
it met the stated target, and, but for the chosen one, why it lost (objective.lost_to). The decision
record keeps `record(plan)` of each GPU (judgement/record.py) and `explain --why-not GPU` prints it.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from advisor.inputs.workload import Workload
from advisor.numbers import objective
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import Ledger
from advisor.numbers.terms import rounded

#: rows kept on a Plan: the chosen one and the best of the others in the planner's order (a search
#: tries up to hundreds of layouts; the table answers "what else was close, and why not it")
KEEP_ROWS = 4


class Tried(NamedTuple):
    """One layout the search timed (a tuple: the objective's helpers sort and filter these)."""

    key: tuple          # objective.plan_key: the planner's order
    order: int          # the order it was tried in (ties keep the first)
    plan: object        # the lean Plan (numbers.plan; no texts)
    layout: Layout
    workload: Workload  # the variant it was timed for (activation checkpointing turned on, or not)
    ledger: Ledger


@dataclass(frozen=True)
class PlanRow:
    """One layout tried for a GPU, as the plan table shows it."""

    gpu: str
    layout: Layout
    count: int
    activation_checkpointing: bool | None
    usd_per_hour: float | None
    unit_cost: float | None      # per the workload's unit of work (objective.UNIT_FIELD), its own price only
    training_hours: float | None
    job_hours: float | None      # an offline batch job's hours for its volume (numbers.batchjob)
    ttft_ms: float | None
    tpot_ms: float | None
    met: bool                    # holds the stated deadline or service level (true when none is stated)
    misses: str | None
    lost: str | None             # why the planner kept another; None for the chosen one

    @property
    def chosen(self) -> bool:
        return self.lost is None

    def as_dict(self) -> dict:
        """The record's row: the layout as the record states layouts, the figures that are known."""
        d = {"layout": self.layout.as_dict(), "count": self.count, "zero_stage": self.layout.zero_stage,
             "activation_checkpointing": self.activation_checkpointing, "usd_per_hour": self.usd_per_hour,
             "unit_cost": self.unit_cost, "training_hours": self.training_hours, "job_hours": self.job_hours, "ttft_ms": self.ttft_ms,
             "tpot_ms": self.tpot_ms, "met": self.met, "lost": self.lost}
        return {k: rounded(v) for k, v in d.items() if v is not None}


@dataclass(frozen=True, eq=False)
class PlanTable:
    """The plan table of one GPU: the chosen row and the best others of the search, kept as the search
    left them; their words (`rows`) are made when read (the record reads the first ranks' only)."""

    workload: Workload
    chosen: Tried
    others: tuple[Tried, ...]
    unit: str
    gpu_rate: float | None

    @cached_property
    def rows(self) -> tuple[PlanRow, ...]:
        """The chosen row first, then the others in the planner's order, each with why it lost."""
        w, chosen, unit = self.workload, self.chosen, self.unit
        return (_row(w, chosen, unit, None),) + tuple(
            _row(w, t, unit, objective.lost_to(w, t.plan, chosen.plan, unit, self.gpu_rate, t.key < chosen.key))
            for t in self.others)


def table(w: Workload, tried: list[Tried], chosen: Tried, unit: str, gpu_rate) -> PlanTable:
    """The chosen row and the best KEEP_ROWS - 1 others of the search, in the planner's order."""
    # the few best of up to hundreds of rows: a partial sort (every GPU of every decision keeps one)
    others = heapq.nsmallest(KEEP_ROWS - 1, (t for t in tried if t is not chosen), key=lambda t: (t.key, t.order))
    return PlanTable(w, chosen, tuple(others), unit, gpu_rate)


def _row(w: Workload, t: Tried, unit: str, lost: str | None) -> PlanRow:
    p = t.plan
    return PlanRow(p.gpu.id, t.layout, t.layout.count, t.workload.activation_checkpointing if w.training else None,
                   p.usd_per_hour, objective.unit_cost(p, unit), p.training_hours, p.job_hours,
                   None if w.training else p.ttft_ms, None if w.training else p.tpot_ms, p.misses is None, p.misses, lost)


def record(plan, unit: str) -> dict | None:
    """The plan table as the decision record keeps it: how many layouts were tried, the unit of the rows'
    `unit_cost` (objective.unit_of_work), the kept rows."""
    if plan.table is None:
        return None
    return {"tried": plan.layouts_considered, "unit": objective.UNIT_LABELS[unit], "rows": [r.as_dict() for r in plan.table.rows]}
