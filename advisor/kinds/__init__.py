"""The kinds of work, each a package behind one small protocol, between the figures (advisor/numbers)
and the judgement (advisor/judgement).

A kind (declared in advisor/inputs/kinds.py: its name, goal, unit and time figure) is modelled by a
package here that gives what the advise path calls:

- `spec`: its `KindSpec` (the shared path reads the goal, unit and time figure from it);
- `estimate(workload, catalog, only)`: its memory ledger, speed, layouts and cost as an `Estimate`
  of one `Plan` per candidate GPU (numbers.estimate), which the rules judge and the memo reads;
- `words`: the memo's nouns for its unit of work and speed (`Words`).

`estimate` and `words` below are the only doors: the advise path, `estimate`, `explain` and the sweep
call them and never test the kind by name. A new kind is its declaration in inputs/kinds.py, its
fields in inputs/kindfields.py, a package here registered in `PACKAGES`, and its rules and template
sections; no change to the shared path.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Protocol

from advisor.inputs.catalog import Catalog
from advisor.inputs.kinds import KindSpec
from advisor.inputs.workload import Workload
from advisor.numbers.estimate import Estimate


@dataclass(frozen=True)
class Words:
    """A kind's nouns, for the memo and the summary."""

    unit: str            # one unit of its work: "million output tokens", "job", "1,000 images"
    speed: str           # what its speed is read as: "tokens/s per user", "hours", "seconds per image"
    work: str            # what it does, in a title: "serving", "training", "image generation"
    settle_by: str       # the measurement that settles two plans within the model's error


class Kind(Protocol):
    """What a kind's package gives the advise path."""

    spec: KindSpec
    words: Words

    def estimate(self, w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate: ...

    def api_comparison(self, plan, w: Workload, catalog: Catalog) -> dict | None: ...


#: kind name -> the package that models it (imported when a workload of the kind is first decided)
PACKAGES = {
    "llm-serving": "advisor.kinds.llm",
    "llm-batch": "advisor.kinds.batch",
    "llm-training": "advisor.kinds.llm",
    "rl-post-training": "advisor.kinds.rl",
    "image-generation": "advisor.kinds.diffusion",
    "video-generation": "advisor.kinds.diffusion",
}


def of(w: Workload) -> Kind:
    """The package modelling the workload's kind."""
    return import_module(PACKAGES[w.kind]).KINDS[w.kind]


def estimate(w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
    """The workload's estimate, by its kind's package."""
    return of(w).estimate(w, catalog, only)


def api_comparison(plan, w: Workload, catalog: Catalog) -> dict | None:
    """The record's comparison of the plan with the hosted APIs that sell the work, by its kind's package."""
    return of(w).api_comparison(plan, w, catalog)


def words(w: Workload) -> Words:
    return of(w).words
