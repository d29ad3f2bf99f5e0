"""The rule language: its vocabulary (the keys of a rule, its effects, operators, severities and
selectors), the limits a rule must stay within to run safely on the engine, and the compiled form
both the engine and the Python evaluator run (Leaf, Node, Rule, KnowledgeBase). docs/rules.md
documents the language for rule authors.
"""
from __future__ import annotations

import re
from collections import namedtuple
from dataclasses import dataclass, field

MAX_PROPERTIES = 240             # per fact; the engine refuses more than 252 (error 302) and adds its own
RULE_KEYS = ("id", "title", "source", "group", "priority", "when", "then", "because", "examples", "replaces")
EFFECTS = ("prefer", "avoid", "exclude", "warn", "note", "derive")
OPS = ("eq", "ne", "lt", "lte", "gt", "gte", "between", "in", "not_in", "exists", "matches")
SEVERITIES = ("info", "low", "medium", "high")
SELECTORS = ("gpu", "vendor", "generation", "class")
ID_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*\Z")          # \Z: '$' would let a final newline through
DERIVED_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
SAFE_PATTERN = re.compile(r"^[A-Za-z0-9_.*+\-\[\]]+$")    # what the engine's regex dialect runs like Python's
# What one rule may ask of the engine (bench/durable-probes/p11_rule_limits.py measured the edges:
# 127 '.*' segments crash durable_rules, a 4,095-character pattern is refused, an `in` list of 512
# values overflows a fact's matches), kept well below them.
MAX_PATTERN = 200            # characters in a `matches` pattern
MAX_QUANTIFIERS = 16         # '*' and '+' in a `matches` pattern
MAX_LIST = 100               # values in an `in` / `not_in` list
MAX_WEIGHT = 1000            # a prefer/avoid weight (the shipped rules use 3 to 30)
MAX_NUMBER = 1e15            # a number a condition compares with (the engine's own range)
NEGATE = {"eq": "ne", "ne": "eq", "lt": "gte", "gte": "lt", "lte": "gt", "gt": "lte", "in": "not_in",
          "not_in": "in", "exists": "not_exists", "not_exists": "exists"}
SYMBOL = {"eq": "=", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "in": "in", "not_in": "not in",
          "matches": "matches"}


# --- the compiled form ----------------------------------------------------------------------------

class Leaf(namedtuple("Leaf", "fact op value", defaults=(None,))):
    """One test of a compiled condition: FACT OP VALUE, where op is eq ne lt lte gt gte in not_in
    exists not_exists matches. (Named tuples: a 5,000-rule knowledge base builds tens of thousands.)"""

    __slots__ = ()


LEAVES_PER_SET = 56       # tests one fact can satisfy at once per ruleset: below the engine's 64 alpha matches (error 303)


def leaves(cond) -> int:
    """How many engine tests one fact can satisfy at once in a condition: an `in` list is a set of
    equality tests on one property, of which at most one holds; every other test may hold together."""
    if isinstance(cond, Node):
        return sum(leaves(c) for c in cond.items)
    return len(cond.value) if cond.op == "not_in" else 1


class Node(namedtuple("Node", "kind items")):
    """All (kind 'all') or any (kind 'any') of several compiled conditions (a tuple of Leaf | Node)."""

    __slots__ = ()


@dataclass(eq=False)
class Rule:
    """A rule as loaded and checked, with where it came from."""

    id: str
    title: str
    source: tuple[str, ...]
    group: str
    priority: int
    when: object            # Leaf | Node, negation pushed to the leaves
    effects: dict
    because: str
    examples: list
    file: str
    line: int
    scope: str = "workload"  # the fact the rule matches: workload or candidate
    stratum: int = 0
    facts_used: tuple[str, ...] = ()
    derives: tuple[str, ...] = ()
    overrides: str | None = None   # file:line of the shipped rule this one replaced
    replaces: str | None = None    # the id of the shipped rule this one replaced (`replaces: ID`)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(eq=False)
class KnowledgeBase:
    """Every rule in force, the files they came from and their digest."""

    rules: list[Rule]
    files: list[str]
    digest: str
    derived: dict[str, str] = field(default_factory=dict)   # derived fact -> scope

    def rule(self, rule_id: str) -> Rule:
        return self.by_id[rule_id]

    @property
    def by_id(self) -> dict[str, Rule]:
        if getattr(self, "_by_id", None) is None or len(self._by_id) != len(self.rules):
            self._by_id = {r.id: r for r in self.rules}
        return self._by_id

    @property
    def strata(self) -> int:
        return 1 + max((r.stratum for r in self.rules), default=0)
