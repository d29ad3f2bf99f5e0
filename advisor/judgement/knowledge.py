"""The knowledge base: YAML rules loaded safely, checked (lint), and compiled into conditions that
both the durable_rules engine and the plain-Python why-not evaluator run.

Rule language (docs/rules.md): id, title, source, group, priority, when, then, because, examples.
A condition is {FACT: {OP: VALUE}} (or {FACT: VALUE} for eq), combined with all / any / not.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

from advisor import HOME
from advisor.base import cache, yamlio
from advisor.base.errors import Collector, InputError, Problem
from advisor.base.files import note_read
from advisor.judgement.facts import FACTS, prop
from advisor.base.gcpause import free_cycles, loads_for_good

RULES_DIR = HOME / "rules"
NOT_RULES = {"questions.yaml"}   # the dialogue's questions live beside the rules
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
NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")   # YAML 1.1 reads 1e11 as text
NEGATE = {"eq": "ne", "ne": "eq", "lt": "gte", "gte": "lt", "lte": "gt", "gt": "lte", "in": "not_in",
          "not_in": "in", "exists": "not_exists", "not_exists": "exists"}


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


# --- condition evaluation in Python (the why-not evaluator; doubles as the engine's differential) -----

def evaluate(cond, fact: dict) -> bool:
    """Engine semantics: a test on an absent property is false, whatever the operator."""
    if isinstance(cond, Node):
        results = (evaluate(c, fact) for c in cond.items)
        return all(results) if cond.kind == "all" else any(results)
    p = prop(cond.fact)
    present = p in fact
    if cond.op == "exists":
        return present
    if cond.op == "not_exists":
        return not present
    if not present:
        return False
    a, v = fact[p], cond.value
    if cond.op == "eq":
        return _eq(a, v)
    if cond.op == "ne":
        return not _eq(a, v)
    if cond.op == "in":
        return any(_eq(a, x) for x in v)
    if cond.op == "not_in":
        return not any(_eq(a, x) for x in v)
    if cond.op == "matches":
        return isinstance(a, str) and pattern_matcher(v)(a)
    if isinstance(a, bool) or isinstance(a, str) or isinstance(v, str):
        return False
    return {"lt": a < v, "lte": a <= v, "gt": a > v, "gte": a >= v}[cond.op]


# --- `matches` patterns: a small dialect both the engine and Python run alike, matched without backtracking

def parse_pattern(pattern: str) -> list[tuple]:
    """A `matches` pattern as a list of (atom, quantifier): atom is ('any',), ('char', c) or
    ('class', ((lo, hi), ...)); quantifier '', '*' or '+'. ValueError says what is wrong."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("a pattern is a non-empty text")
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"pattern of {len(pattern)} characters: at most {MAX_PATTERN}")
    out, i, quantifiers = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c in "*+":
            raise ValueError(f"'{c}' at position {i + 1} repeats nothing (write '.{c}' or 'x{c}')")
        if c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                raise ValueError(f"'[' at position {i + 1} is never closed")
            body, ranges, k = pattern[i + 1:j], [], 0
            if not body:
                raise ValueError(f"empty class '[]' at position {i + 1}")
            while k < len(body):
                a = body[k]
                if not (a.isascii() and (a.isalnum() or a in "_-")):
                    raise ValueError(f"'{a}' inside [...] (a class holds letters, digits, _ and ranges like a-z)")
                if k + 2 < len(body) and body[k + 1] == "-":
                    b = body[k + 2]
                    if not (b.isascii() and b.isalnum()) or b < a:
                        raise ValueError(f"bad range '{a}-{b}' in [{body}]")
                    ranges.append((a, b))
                    k += 3
                else:
                    ranges.append((a, a))
                    k += 1
            atom, i = ("class", tuple(ranges)), j + 1
        elif c == "]":
            raise ValueError(f"']' at position {i + 1} closes nothing")
        elif c == ".":
            atom, i = ("any",), i + 1
        elif c.isascii() and (c.isalnum() or c in "_-"):
            atom, i = ("char", c), i + 1
        else:
            raise ValueError(f"'{c}' is not allowed (letters, digits, - _ . * + and [ ] only)")
        q = ""
        if i < len(pattern) and pattern[i] in "*+":
            q, i = pattern[i], i + 1
            quantifiers += 1
            if i < len(pattern) and pattern[i] in "*+":
                raise ValueError(f"'{pattern[i - 1]}{pattern[i]}' at position {i}: one repetition per item")
        out.append((atom, q))
    if quantifiers > MAX_QUANTIFIERS:
        raise ValueError(f"{quantifiers} repetitions (* or +): at most {MAX_QUANTIFIERS}")
    return out


def _atom_matches(atom, ch: str) -> bool:
    if atom[0] == "any":
        return ch != "\n"
    if atom[0] == "char":
        return ch == atom[1]
    return any(lo <= ch <= hi for lo, hi in atom[1])


_MATCHERS: dict[str, object] = {}


def pattern_matcher(pattern: str):
    """A full-match test of a checked pattern, as re.fullmatch would answer, in time linear in the
    text (a set of positions in the pattern, never backtracking: '.*' x 24 + 'Z' is instant)."""
    m = _MATCHERS.get(pattern)
    if m is not None:
        return m
    items = []
    for atom, q in parse_pattern(pattern):
        if q == "+":
            items += [(atom, ""), (atom, "*")]
        else:
            items.append((atom, q))
    n = len(items)

    def closure(states):
        out, todo = set(states), list(states)
        while todo:
            s = todo.pop()
            if s < n and items[s][1] == "*" and s + 1 not in out:
                out.add(s + 1)
                todo.append(s + 1)
        return out

    start = frozenset(closure({0}))

    def match(text: str) -> bool:
        states = start
        for ch in text:
            nxt = set()
            for s in states:
                if s < n and _atom_matches(items[s][0], ch):
                    nxt.add(s if items[s][1] == "*" else s + 1)
            if not nxt:
                return False
            states = closure(nxt)
        return n in states

    if len(_MATCHERS) < 10_000:
        _MATCHERS[pattern] = match
    return match


def number_of(v):
    """A rule file's number as a workload file reads it: 1e11 (text to YAML 1.1) is a number too."""
    if isinstance(v, str) and NUMBER_TEXT.match(v.strip()):
        try:
            return float(v)
        except (ValueError, OverflowError):
            return v
    return v


def _bad_number(v) -> str | None:
    """Why a number cannot go into a condition (not finite, or beyond what the engine compares)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return f"{str(v)[:20]}... is too large (at most {MAX_NUMBER:g} in size)"
    if f != f or f in (float("inf"), float("-inf")):
        return f"{v!r} is not a finite number"
    if abs(f) > MAX_NUMBER:
        return f"{v:g} is too large (at most {MAX_NUMBER:g} in size)"
    return None


SYMBOL = {"eq": "=", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "in": "in", "not_in": "not in",
          "matches": "matches"}


def failing(cond, fact: dict) -> list[str]:
    """Why a condition is false on a fact, test by test: each failing test with the value the fact
    has ('candidate.memory_gb >= 120 (is 80)'). Empty when the condition holds."""
    if evaluate(cond, fact):
        return []
    if isinstance(cond, Node):
        parts = [x for c in cond.items for x in failing(c, fact)]
        return parts if cond.kind == "all" else [f"none of: {'; '.join(parts)}"]
    p = prop(cond.fact)
    if cond.op == "exists":
        return [f"{cond.fact} is absent"]
    if cond.op == "not_exists":
        return [f"{cond.fact} is present (is {fact[p]!r})"]
    value = list(cond.value) if isinstance(cond.value, tuple) else cond.value
    return [f"{cond.fact} {SYMBOL[cond.op]} {value!r} ({f'is {fact[p]!r}' if p in fact else 'absent'})"]


def _eq(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


# --- parsing and checking --------------------------------------------------------------------------

def _value_type(v) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def _compatible(fact_type: str, v) -> bool:
    t = _value_type(v)
    if fact_type in ("number", "integer"):
        return t == "number"
    return t == fact_type


class _Parser:
    def __init__(self, col: Collector, derived_names: dict[str, str], vocab: dict | None = None):
        self.col = col
        self.derived = derived_names
        self.vocab = vocab or {}
        self.used: list[str] = []

    def check_vocab(self, name: str, values, line) -> bool:
        """Values a string fact can really take (a misspelt `vendor: AMD` would never fire)."""
        known = self.vocab.get(name)
        if not known:
            return True
        for x in values:
            if isinstance(x, str) and x not in known:
                self.col.add(f"'{x}' is not a value {name} takes{_closest(x, known)}", line, name)
                return False
        return True

    def cond(self, raw, line, negate=False):
        if not isinstance(raw, dict) or not raw:
            self.col.add("a condition must be a mapping: {FACT: {OP: VALUE}}, all, any or not", line, "when")
            return None
        items = []
        for key, val in raw.items():
            kline = yamlio.line_of(raw, key, line)
            if key in ("all", "any"):
                if not isinstance(val, list) or not val:
                    self.col.add(f"'{key}' takes a non-empty list of conditions", kline, "when")
                    continue
                subs = [self.cond(v, yamlio.line_of(val, i, kline), negate) for i, v in enumerate(val)]
                kind = key if not negate else ("any" if key == "all" else "all")
                items.append(Node(kind, tuple(s for s in subs if s is not None)))
            elif key == "not":
                items.append(self.cond(val, kline, not negate))
            else:
                items.extend(self.leaf(key, val, kline, negate))
        items = [i for i in items if i is not None]
        if len(items) == 1:
            return items[0]
        return Node("any" if negate else "all", tuple(items))

    def fact_type(self, name: str, line) -> str | None:
        if name in FACTS:
            return FACTS[name].type
        if name.startswith("derived."):
            if name[8:] in self.derived:
                return "any"
            self.col.add(f"unknown derived fact '{name}' (no rule derives it)", line, "when")
            return None
        close = [f for f in FACTS if f.split(".")[-1] == name.split(".")[-1]]
        hint = f"; did you mean {close[0]}?" if close else "; `gpu-advisor facts` lists them"
        self.col.add(f"unknown fact '{name}'{hint}", line, "when")
        return None

    def leaf(self, name, spec, line, negate):
        ftype = self.fact_type(str(name), line)
        if ftype is None:
            return []
        self.used.append(name)
        if not isinstance(spec, dict):
            spec = {"eq": spec}
        out = []
        numeric = ftype in ("number", "integer")
        for op, v in spec.items():
            if op not in OPS:
                self.col.add(f"unknown operator '{op}' (known: {', '.join(OPS)})", line, str(name))
                continue
            if isinstance(v, list) and (op == "between" or numeric):
                v = [number_of(x) for x in v]
            elif numeric:
                v = number_of(v)
            bad = next((b for b in map(_bad_number, v if isinstance(v, list) else [v]) if b), None)
            if bad:
                self.col.add(bad, line, str(name))
                continue
            if op in ("in", "not_in") and isinstance(v, list) and len(v) > MAX_LIST:
                self.col.add(f"{op} list of {len(v)} values: at most {MAX_LIST} (split the rule)", line, str(name))
                continue
            if op in ("eq", "ne", "in", "not_in") and not self.check_vocab(str(name), v if isinstance(v, list) else [v], line):
                continue
            if op == "between":
                if not (isinstance(v, list) and len(v) == 2 and all(_value_type(x) == "number" for x in v)):
                    self.col.add("between takes [low, high] numbers", line, str(name))
                    continue
                if v[0] > v[1]:
                    self.col.add(f"unreachable: lower bound {v[0]} is above upper bound {v[1]}", line, str(name))
                    continue
                lo, hi = Leaf(name, "gte", v[0]), Leaf(name, "lte", v[1])
                out.append(Node("any", (Leaf(name, "lt", v[0]), Leaf(name, "gt", v[1]))) if negate else Node("all", (lo, hi)))
                continue
            if op == "exists":
                if not isinstance(v, bool):
                    self.col.add("exists takes true or false", line, str(name))
                    continue
                want = v != negate
                out.append(Leaf(name, "exists" if want else "not_exists"))
                continue
            if op in ("in", "not_in"):
                if not isinstance(v, list) or not v:
                    self.col.add(f"{op} takes a non-empty list", line, str(name))
                    continue
                bad = [x for x in v if ftype != "any" and not _compatible(ftype, x)]
                if bad:
                    self.col.add(f"type mismatch: {ftype} fact compared with {bad[0]!r}", line, str(name))
                    continue
                out.append(Leaf(name, NEGATE[op] if negate else op, tuple(v)))
                continue
            if op == "matches":
                if negate:
                    self.col.add("'matches' cannot be negated safely on the engine; use not_in", line, str(name))
                    continue
                if not isinstance(v, str) or not SAFE_PATTERN.match(v):
                    self.col.add("matches takes a pattern of letters, digits, - _ . * + and [ ] only", line, str(name))
                    continue
                try:
                    parse_pattern(v)
                except ValueError as exc:
                    self.col.add(f"matches: {exc}", line, str(name))
                    continue
                if ftype not in ("string", "any"):
                    self.col.add(f"type mismatch: 'matches' on a {ftype} fact", line, str(name))
                    continue
                out.append(Leaf(name, "matches", v))
                continue
            if ftype != "any" and not _compatible(ftype, v):
                self.col.add(f"type mismatch: {ftype} fact compared with {v!r}", line, str(name))
                continue
            if op in ("lt", "lte", "gt", "gte") and ftype not in ("number", "integer", "any"):
                self.col.add(f"'{op}' needs a number fact, '{name}' is {ftype}", line, str(name))
                continue
            out.append(Leaf(name, NEGATE[op] if negate else op, v))
        return out


def _closest(x: str, known) -> str:
    import difflib      # only when there is something to suggest
    close = difflib.get_close_matches(x, sorted(known), n=3, cutoff=0.5)
    if not close:
        close = [k for k in sorted(known) if k.lower() == x.lower()][:1]
    return f"; did you mean {', '.join(close)}?" if close else (f"; known: {', '.join(sorted(known))}" if len(known) <= 12 else "")


def vocabulary(cat=None) -> dict[str, set]:
    """The values each string fact can take, from the catalog and the workload schema: rule values
    and selectors outside them are misspellings. Empty when the catalog cannot be read (its own
    command reports that)."""
    from advisor.inputs import catalog as catalog_mod, workload
    try:
        cat = cat or catalog_mod.default()
    except InputError:
        return {}
    v = {"candidate.gpu": set(cat.gpus), "candidate.vendor": set(catalog_mod.VENDORS),
         "candidate.generation": set(catalog_mod.GENERATIONS), "candidate.class": set(catalog_mod.CLASSES),
         "workload.model": set(cat.models) | {"custom"}}
    for f, spec in workload.FIELDS.items():
        if spec.kind == "enum" and f"workload.{f}" in FACTS and f != "precision":
            v[f"workload.{f}"] = set(spec.choices)
    for f, spec in workload.CONSTRAINTS.items():
        if spec.kind == "enum" and f"workload.{f}" in FACTS:
            v[f"workload.{f}"] = set(spec.choices)
    v["_gpu_names"] = set(cat.gpu_names)
    v["_catalog"] = cat.digest
    return v


def _unreachable(cond) -> str | None:
    """Conjunctions whose numeric bounds on one fact exclude each other (gt 200 and lt 100)."""
    if isinstance(cond, Node) and cond.kind == "all":
        lo, hi = {}, {}
        for c in cond.items:
            if isinstance(c, Leaf) and isinstance(c.value, (int, float)) and not isinstance(c.value, bool):
                if c.op in ("gt", "gte"):
                    lo[c.fact] = max(lo.get(c.fact, float("-inf")), c.value)
                if c.op in ("lt", "lte"):
                    hi[c.fact] = min(hi.get(c.fact, float("inf")), c.value)
            else:
                r = _unreachable(c)
                if r:
                    return r
        for f in lo:
            if f in hi and lo[f] > hi[f]:
                return f"unreachable: {f} must be above {lo[f]:g} and below {hi[f]:g}"
    if isinstance(cond, Node) and cond.kind == "any":
        for c in cond.items:
            r = _unreachable(c)
            if r:
                return r
    return None


class _RuleTexts:
    """A Jinja loader whose templates are rule texts named by their digest."""

    def __init__(self):
        self.texts: dict[str, str] = {}

    def add(self, text: str) -> str:
        name = hashlib.sha256(text.encode()).hexdigest()
        self.texts[name] = text
        return name

    def get_source(self, environment, name):
        return self.texts[name], None, lambda: True


def template_env():
    """The sandbox every rule text renders in (the memo's: plain data only, bounded): the bound facts and
    three formatting filters. Rule files come from users (--rules), so nothing compiled from a rule text
    is cached on disk; only texts the plain-text path cannot render (to report an error) reach Jinja."""
    from jinja2 import BaseLoader
    from advisor.base import sandbox
    loader = type("RuleTextLoader", (_RuleTexts, BaseLoader), {})()
    return sandbox.environment(loader, filters=FILTERS, layout=False)


FILTERS = {"gb": lambda x: f"{x:,.1f} GB", "usd": lambda x: f"${x:,.2f}", "num": lambda x, nd=1: f"{x:,.{nd}f}"}
_FIELD = re.compile(r"\{\{\s*(workload|candidate|derived)\.([a-z][a-z0-9_]*)\s*"
                    r"(?:\|\s*(gb|usd|num)\s*(?:\(\s*([0-9])\s*\))?\s*)?\}\}")


class _PlainText:
    """A rule text made only of literal text and `{{ scope.fact }}` / `{{ scope.fact | filter }}`
    fields, which is what nearly every rule text is. It renders exactly as the sandboxed Jinja
    template would (a test compares the two on every shipped text) without importing Jinja, which
    costs more than the rest of a decision. Anything else, and any field that would not render
    plainly (absent, or named like a dict method), goes to Jinja itself."""

    def __init__(self, text: str, parts: list):
        self.text, self.parts = text, parts

    @staticmethod
    def parse(text: str) -> _PlainText | None:
        if "\r" in text:               # Jinja rewrites line ends; leave that to it
            return None
        parts, pos = [], 0
        for m in _FIELD.finditer(text):
            parts.append(text[pos:m.start()])
            parts.append((m[1], m[2], m[3], int(m[4]) if m[4] else None))
            pos = m.end()
        tail = text[pos:]
        parts.append(tail[:-1] if tail.endswith("\n") else tail)     # as Jinja, one final newline dropped
        literal = "".join(p for p in parts if isinstance(p, str))
        if any(mark in literal for mark in ("{{", "{%", "{#", "}}", "%}", "#}")):
            return None
        if any(isinstance(p, str) and p.endswith("{") for p in parts[:-1]):
            return None                  # '{{{ x }}}': Jinja reads '{{' and then a '{' of its own
        if any(isinstance(p, tuple) and hasattr(dict, p[1]) for p in parts):
            return None
        return _PlainText(text, parts)

    def render(self, **ctx) -> str:
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            scope, name, flt, arg = p
            values = ctx.get(scope)
            if not isinstance(values, dict) or name not in values:
                return _jinja_template(self.text).render(**ctx)     # Jinja reports the undefined name
            v = values[name]
            if flt is None:
                out.append(str(v))
                continue
            try:
                out.append(FILTERS[flt](v) if arg is None else FILTERS[flt](v, arg))
            except (TypeError, ValueError):
                return _jinja_template(self.text).render(**ctx)     # Jinja reports the failure
        return "".join(out)


_ENV = []
_COMPILED: dict[str, object] = {}


def _jinja():
    if not _ENV:            # Jinja is imported only when a rule text is checked or rendered
        _ENV.append(template_env())
    return _ENV[0]


def compiled_template(text: str):
    """A rule text ready to render: plain text with fields, or else compiled once per process in the sandbox."""
    t = _COMPILED.get(text)
    if t is None:
        t = _COMPILED[text] = _PlainText.parse(text) or _jinja_template(text)
    return t


def _jinja_template(text: str):
    env = _jinja()
    return env.get_template(env.loader.add(text))


class _TemplateSyntax(Exception):
    pass


_REFS: dict[str, tuple[set, set]] = {}


def _template_refs(text: str) -> tuple[set, set]:
    """The (scope, field) pairs a rule text reads, e.g. ('candidate', 'count'), and the top-level
    names it reads; _TemplateSyntax for a text Jinja cannot parse. Plain texts are read without Jinja."""
    if text not in _REFS:
        plain = _PlainText.parse(text)
        if plain is None:
            _REFS[text] = _jinja_refs(text)
        else:
            fields = [part for part in plain.parts if isinstance(part, tuple)]
            _REFS[text] = {(scope, name) for scope, name, _, _ in fields}, {scope for scope, _, _, _ in fields}
    return _REFS[text]


def _jinja_refs(text: str) -> tuple[set, set]:
    from jinja2 import meta, nodes
    from jinja2.exceptions import TemplateSyntaxError
    try:
        ast = _jinja().parse(text)
    except TemplateSyntaxError as exc:
        raise _TemplateSyntax(exc.message) from None
    refs = set()
    for n in ast.find_all(nodes.Getattr):
        if isinstance(n.node, nodes.Name):
            refs.add((n.node.name, n.attr))
    return refs, meta.find_undeclared_variables(ast)


def _parse_effects(raw, col: Collector, line, rid, vocab: dict | None = None) -> dict:
    effects = {}
    if not isinstance(raw, dict) or not raw:
        col.add("then needs at least one effect: " + ", ".join(EFFECTS), line, "then")
        return effects
    for k, v in raw.items():
        kline = yamlio.line_of(raw, k, line)
        if k not in EFFECTS:
            col.add(f"unknown effect '{k}' (known: {', '.join(EFFECTS)})", kline, "then")
            continue
        if k in ("prefer", "avoid"):
            if isinstance(v, dict) and "weight" in v:
                v = {**v, "weight": number_of(v["weight"])}
            w = v.get("weight") if isinstance(v, dict) else None
            if not isinstance(w, (int, float)) or isinstance(w, bool) or not (0 < w <= MAX_WEIGHT):
                col.add(f"{k} needs a weight above 0 and at most {MAX_WEIGHT}: {{weight: 20}} (and optionally "
                        f"gpu/vendor/generation/class){'' if w is None else f' (got {w!r})'}", kline, f"then.{k}")
                continue
        if k == "exclude" and not isinstance(v, dict):
            v = {"reason": v} if isinstance(v, str) else None
            if v is None:
                col.add("exclude takes {reason: TEXT} (and optionally gpu/vendor/generation/class)", kline, "then.exclude")
                continue
        if k in ("warn", "note"):
            if isinstance(v, str):
                v = {"text": v}
            if not isinstance(v, dict) or not isinstance(v.get("text", ""), str):
                col.add(f"{k} takes {{severity: low|medium|high, text: TEXT}}", kline, f"then.{k}")
                continue
            sev = v.get("severity", "medium" if k == "warn" else "info")
            if sev not in SEVERITIES:
                col.add(f"severity must be one of {', '.join(SEVERITIES)}", kline, f"then.{k}")
                continue
            v = {**v, "severity": sev}
        if k == "derive":
            if not isinstance(v, dict) or not v:
                col.add("derive takes {NAME: VALUE}", kline, "then.derive")
                continue
            for name, val in v.items():
                if not DERIVED_RE.match(str(name)):
                    col.add(f"derived fact name '{name}' must be lower_snake_case", kline, "then.derive")
                if isinstance(val, (dict, list)) or val is None:
                    col.add(f"derived fact '{name}' must be a plain value", kline, "then.derive")
        if k in ("prefer", "avoid", "exclude") and isinstance(v, dict):
            for s in v:
                if s not in SELECTORS + ("weight", "reason"):
                    col.add(f"unknown key '{s}' (known: weight, reason, {', '.join(SELECTORS)})", kline, f"then.{k}")
                elif s in SELECTORS and vocab:
                    want = v[s] if isinstance(v[s], list) else [v[s]]
                    known = vocab.get("_gpu_names") if s == "gpu" else vocab.get(f"candidate.{s}")
                    for x in want:
                        key = re.sub(r"[\s_]+", "-", str(x).strip().lower()) if s == "gpu" else x
                        if known and key not in known:
                            hint = _closest(str(x), vocab["candidate.gpu"] if s == "gpu" else known)
                            col.add(f"'{x}' is not a {s} of the catalog{hint}", kline, f"then.{k}.{s}")
        effects[k] = v
    return effects


def _files(dirs: list[Path]) -> list[Path]:
    """The rule files of each folder in order (.yaml and .yml; the dialogue's questions.yaml is
    skipped in the shipped folder only: in a user's folder every YAML file is a rule file)."""
    out = []
    for d in dirs:
        d = Path(d)
        if d.is_file():
            out.append(d)
        elif d.is_dir():
            shipped = d.resolve() == RULES_DIR.resolve()
            out.extend(sorted(p for p in d.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                              and not (shipped and p.name in NOT_RULES)))
        else:
            raise InputError(Problem("no such rules directory", str(d)))
    return out


def rule_dirs(extra: list[str] | None = None, shipped: bool = True) -> list[Path]:
    """rules/ first, then GPU_ADVISOR_RULES (a path list), then every --rules DIR: later files win."""
    dirs = [RULES_DIR] if shipped else []
    env = os.environ.get("GPU_ADVISOR_RULES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in (extra or [])]
    return dirs


@loads_for_good
def load(dirs: list[Path] | None = None) -> KnowledgeBase:
    """Load, check and compile every rule file; any problem anywhere means nothing is loaded."""
    files = _files(dirs if dirs is not None else rule_dirs())
    try:
        digest = _digest(files)
    except OSError:
        digest = None        # the full load below reports what cannot be read
    vocab = vocabulary()     # values are checked against the catalog: its digest is part of the key
    kb = _compiled_get(digest, vocab.get("_catalog")) if digest and cache.cache_dir() is not None else None
    if kb is None:
        kb = _load(files, digest, vocab)
        if cache.cache_dir() is not None:
            _compiled_put(kb, vocab.get("_catalog"))
    return kb


def folder_digest(folder) -> str:
    """The digest of one rule folder's files (their paths inside it and their bytes): the same
    wherever the folder is named from."""
    folder = Path(folder)
    h = hashlib.sha256()
    for f in _files([folder]):
        h.update(str(f.relative_to(folder) if folder.is_dir() else f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _digest(files: list[Path]) -> str:
    """What identifies a knowledge base: its files' names (as shown) and bytes, in load order."""
    h = hashlib.sha256()
    for f in files:
        h.update(_display(f).encode())
        note_read(f, "rule file")
        h.update(f.read_bytes())
    return h.hexdigest()


def _load(files: list[Path], digest: str | None, vocab: dict | None = None) -> KnowledgeBase:
    problems: list[Problem] = []
    raw_rules = []
    shipped_files = set()
    for f in files:
        rel = _display(f)
        if _is_shipped(f):
            shipped_files.add(rel)
        try:
            data = yamlio.load(f)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        col = Collector(rel)
        items = data.get("rules") if isinstance(data, dict) else data
        if data is None:
            continue
        if not isinstance(items, list):
            col.add("a rule file holds a list of rules (or 'rules: [...]')", getattr(data, "line", 1))
            problems.extend(col.problems)
            continue
        for i, r in enumerate(items):
            raw_rules.append((rel, yamlio.line_of(items, i), r))
    # derived facts: names and scope come from the rules that derive them
    derived: dict[str, str] = {}
    for rel, line, r in raw_rules:
        if isinstance(r, dict) and isinstance(r.get("then"), dict) and isinstance(r["then"].get("derive"), dict):
            for name in r["then"]["derive"]:
                derived.setdefault(str(name), "workload")
    rules: dict[str, Rule] = {}
    replaced: dict[str, str] = {}          # shipped rule id -> where the user's rule replacing it is
    for rel, line, r in raw_rules:
        col = Collector(rel)
        rule = _parse_rule(r, rel, line, col, derived, vocab)
        problems.extend(col.problems)
        if rule is None:
            continue
        same_place = False
        if rule.replaces:
            target = rules.get(rule.replaces)
            if rel in shipped_files:
                problems.append(Problem("a shipped rule replaces nothing", rel, line, "replaces"))
                continue
            if rule.replaces in replaced:
                problems.append(Problem(f"'{rule.replaces}' is replaced already (by {replaced[rule.replaces]})", rel, line, "replaces"))
                continue
            if target is None or target.file not in shipped_files:
                shipped = [k for k, x in rules.items() if x.file in shipped_files]
                problems.append(Problem(f"replaces '{rule.replaces}', which is not a shipped rule{_closest(rule.replaces, shipped)}"
                                        if target is None else
                                        f"replaces '{rule.replaces}', which is not a shipped rule (it is defined at {target.where})",
                                        rel, line, "replaces"))
                continue
            rule.overrides = target.where
            replaced[rule.replaces] = rule.where
            if rule.id == rule.replaces:
                same_place = True                 # the replacement takes the shipped rule's place
            else:
                del rules[rule.replaces]
        if rule.id in rules and not same_place:
            prev = rules[rule.id]
            if prev.file in shipped_files and rel not in shipped_files:
                problems.append(Problem(f"'{rule.id}' is the id of a shipped rule ({prev.where}): to override it add "
                                        f"`replaces: {rule.id}`, otherwise choose another id", rel, line, "id"))
            else:
                problems.append(Problem(f"duplicate rule id '{rule.id}' (first at {prev.where})", rel, line, "id"))
            continue
        if rule.id in replaced and not same_place:
            problems.append(Problem(f"'{rule.id}' names a shipped rule replaced by {replaced[rule.id]}; choose another id",
                                    rel, line, "id"))
            continue
        rules[rule.id] = rule
    kb_rules = list(rules.values())
    problems.extend(_scopes_and_strata(kb_rules, derived))
    if len(FACTS) + len(derived) > MAX_PROPERTIES:
        first = next(r for r in kb_rules if r.derives)
        problems.append(Problem(f"{len(derived)} derived facts: with the {len(FACTS)} declared facts a fact would carry more "
                                f"than {MAX_PROPERTIES} properties, which the engine cannot hold (error 302)",
                                first.file, first.line, "then.derive"))
    for r in kb_rules:
        problems.extend(_check_template(r, derived))
    free_cycles()                 # parsing YAML and Jinja left some behind
    if problems:
        raise InputError(problems)
    return KnowledgeBase(kb_rules, [_display(f) for f in files], digest or _digest(files), derived)


# --- the compiled-knowledge-base cache -------------------------------------------------------------
# A knowledge base that passed every check is written out compiled (JSON: plain data only), keyed by
# the digest of its files' names and bytes and of the checker's own source. The next start with the
# same files reads it back instead of parsing, checking and compiling every rule again.

COMPILED_VERSION = "kb-4"


def _compiled_key(digest: str, catalog_digest: str | None) -> str:
    return cache.key(COMPILED_VERSION, digest, catalog_digest or "", cache.source_of("judgement.knowledge", "judgement.facts", "judgement.engine", "base.yamlio"))


def _enc_cond(c):
    if isinstance(c, Node):
        return ["N", c.kind, [_enc_cond(i) for i in c.items]]
    if isinstance(c.value, tuple):
        return ["T", c.fact, c.op, list(c.value)]
    return ["L", c.fact, c.op, c.value]


def _dec_cond(c):
    tag = c[0]
    if tag == "N":
        return Node(c[1], tuple(_dec_cond(i) for i in c[2]))
    return Leaf(c[1], c[2], tuple(c[3]) if tag == "T" else c[3])


RULE_FIELDS = ("id", "title", "group", "priority", "because", "file", "line", "scope", "stratum", "overrides", "replaces")


def _compiled_put(kb: KnowledgeBase, catalog_digest: str | None = None) -> None:
    rules = [{**{k: getattr(r, k) for k in RULE_FIELDS}, "source": list(r.source), "when": _enc_cond(r.when),
              "effects": cache.pack(r.effects), "examples": cache.pack(r.examples),
              "facts_used": list(r.facts_used), "derives": list(r.derives)} for r in kb.rules]
    data = {"rules": rules, "files": kb.files, "digest": kb.digest, "derived": kb.derived}
    cache.write_json("kb", _compiled_key(kb.digest, catalog_digest), data)


def _compiled_get(digest: str, catalog_digest: str | None = None) -> KnowledgeBase | None:
    data = cache.read_json("kb", _compiled_key(digest, catalog_digest), packed=True)
    if data is None:
        return None
    try:
        rules = [Rule(d["id"], d["title"], tuple(d["source"]), d["group"], d["priority"], _dec_cond(d["when"]),
                      d["effects"], d["because"], d["examples"], d["file"], d["line"],
                      d["scope"], d["stratum"],
                      tuple(d["facts_used"]), tuple(d["derives"]), d["overrides"], d["replaces"]) for d in data["rules"]]
        return KnowledgeBase(rules, data["files"], data["digest"], data["derived"])
    except (KeyError, TypeError, IndexError):
        return None


def _is_shipped(p: Path) -> bool:
    try:
        Path(p).resolve().relative_to(RULES_DIR.resolve())
        return True
    except ValueError:
        return False


def _display(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(HOME))
    except ValueError:
        return str(p)


def _parse_rule(r, rel, line, col: Collector, derived, vocab: dict | None = None) -> Rule | None:
    if not isinstance(r, dict):
        col.add("a rule must be a mapping", line)
        return None
    for k in r:
        if k not in RULE_KEYS:
            col.add(f"unknown key (known: {', '.join(RULE_KEYS)})", yamlio.line_of(r, k, line), str(k))
    rid = r.get("id")
    if not isinstance(rid, str) or not ID_RE.match(rid):
        col.add("id must be kebab-case (a-z, 0-9, -)", yamlio.line_of(r, "id", line), "id")
        return None
    for k in ("title", "when", "then"):
        if k not in r:
            col.add(f"rule '{rid}' has no {k}", line, k)
    src = r.get("source")
    if isinstance(src, str):
        src = [src]
    if not src or not isinstance(src, list) or not all(isinstance(s, str) and s for s in src):
        col.add(f"rule '{rid}' needs a source (knowledge IDs or your own reference)", yamlio.line_of(r, "source", line), "source")
        src = []
    prio = r.get("priority", 100)
    if not isinstance(prio, int) or isinstance(prio, bool) or not 0 <= prio <= 1000:
        col.add("priority must be a whole number 0..1000 (lower runs first)", yamlio.line_of(r, "priority", line), "priority")
        prio = 100
    replaces = r.get("replaces")
    if replaces is not None and (not isinstance(replaces, str) or not ID_RE.match(replaces)):
        col.add("replaces names the id of the shipped rule this one replaces (one id, not a list)",
                yamlio.line_of(r, "replaces", line), "replaces")
        replaces = None
    if "when" not in r or "then" not in r:
        return None
    parser = _Parser(col, derived, vocab)
    before = len(col.problems)
    when = parser.cond(r["when"], yamlio.line_of(r, "when", line))
    effects = _parse_effects(r["then"], col, yamlio.line_of(r, "then", line), rid, vocab)
    because = r.get("because", "")
    if not isinstance(because, str):
        col.add("because must be a text", yamlio.line_of(r, "because", line), "because")
        because = ""
    if when is not None:
        why = _unreachable(when)
        if why:
            col.add(why, yamlio.line_of(r, "when", line), "when")
        if leaves(when) > LEAVES_PER_SET:
            col.add(f"too complex to run safely on the engine: {leaves(when)} tests (at most {LEAVES_PER_SET}); "
                    "split the rule", yamlio.line_of(r, "when", line), "when")
    examples = r.get("examples") or []
    if not isinstance(examples, list):
        col.add("examples must be a list of {given: {...}, fires: true|false}", yamlio.line_of(r, "examples", line), "examples")
        examples = []
    for i, ex in enumerate(examples):
        eline = yamlio.line_of(examples, i, line)
        if not isinstance(ex, dict) or not isinstance(ex.get("given"), dict) or not isinstance(ex.get("fires"), bool):
            col.add("an example is {given: {workload: {...}, candidate: {...}}, fires: true|false}", eline, "examples")
            continue
        for scope, vals in ex["given"].items():
            if scope not in ("workload", "candidate", "derived") or not isinstance(vals, dict):
                col.add(f"example 'given' has scopes workload, candidate, derived (got '{scope}')", eline, "examples")
                continue
            for k in vals:
                name = f"{scope}.{k}"
                if scope != "derived" and name not in FACTS:
                    col.add(f"example uses unknown fact '{name}'", eline, "examples")
    if len(col.problems) > before or when is None:
        return None
    return Rule(rid, str(r.get("title", "")), tuple(src), str(r.get("group", "general")), prio, when, effects, because,
                examples, rel, line, facts_used=tuple(dict.fromkeys(parser.used)),
                derives=tuple(effects.get("derive", {}) or ()), replaces=replaces)


def _scopes_and_strata(rules: list[Rule], derived: dict[str, str]) -> list[Problem]:
    problems = []
    producers: dict[str, list[Rule]] = {}
    for r in rules:
        for d in r.derives:
            producers.setdefault(d, []).append(r)
    # scope: candidate if the rule reads a candidate fact or a candidate-scoped derived fact (fixpoint)
    changed = True
    for r in rules:
        r.scope = "candidate" if any(f.startswith("candidate.") for f in r.facts_used) else "workload"
    while changed:
        changed = False
        for r in rules:
            if r.scope == "workload" and any(
                    f.startswith("derived.") and any(p.scope == "candidate" for p in producers.get(f[8:], ()))
                    for f in r.facts_used):
                r.scope = "candidate"
                changed = True
    for d, ps in producers.items():
        derived[d] = "candidate" if any(p.scope == "candidate" for p in ps) else "workload"
    # strata: a rule runs after every rule that derives a fact it reads; a cycle is an error
    state: dict[str, int] = {}

    def visit(r: Rule, path: list[str]) -> int:
        if state.get(r.id) == -1:
            cycle = " -> ".join(path[path.index(r.id):] + [r.id])
            raise _Cycle(r, cycle)
        if r.id in state:
            return state[r.id]
        state[r.id] = -1
        level = 0
        for f in r.facts_used:
            if f.startswith("derived."):
                for p in producers.get(f[8:], ()):
                    level = max(level, visit(p, path + [r.id]) + 1)
        state[r.id] = level
        r.stratum = level
        return level

    for r in rules:
        try:
            visit(r, [])
        except _Cycle as c:
            problems.append(Problem(f"derive cycle: {c.cycle}", c.rule.file, c.rule.line, "when"))
            return problems
    for r in rules:
        for k in ("prefer", "avoid", "exclude"):
            eff = r.effects.get(k)
            if isinstance(eff, dict) and r.scope == "workload" and not any(s in eff for s in SELECTORS):
                problems.append(Problem(f"{k} in a rule over the workload alone must name a gpu, vendor, generation "
                                        "or class (or test a candidate fact)", r.file, r.line, f"then.{k}"))
    return problems


class _Cycle(Exception):
    def __init__(self, rule, cycle):
        self.rule, self.cycle = rule, cycle


def _check_template(r: Rule, derived: dict[str, str]) -> list[Problem]:
    problems = []
    texts = [("because", r.because)]
    for k, v in r.effects.items():
        if k in ("warn", "note"):
            texts.append((f"then.{k}.text", v.get("text", "")))
        if k == "exclude":
            texts.append(("then.exclude.reason", v.get("reason", "")))
    for where, text in texts:
        if not text:
            continue
        if _PlainText.parse(text) is None:
            problems.append(Problem("a rule text holds only text and fields: {{ workload.X }}, {{ candidate.X }} or "
                                    "{{ derived.X }}, optionally with | gb, | usd or | num(N) (no other Jinja)",
                                    r.file, r.line, where))
            continue
        try:
            refs, names = _template_refs(text)
        except _TemplateSyntax as exc:
            problems.append(Problem(f"template syntax error: {exc}", r.file, r.line, where))
            continue
        for name in names - {"workload", "candidate", "derived"}:
            problems.append(Problem(f"template variable '{name}' is not a bound fact (use workload.X, candidate.X, derived.X)",
                                    r.file, r.line, where))
        for scope, attr in refs:
            if scope == "candidate" and r.scope != "candidate":
                problems.append(Problem(f"template reads candidate.{attr} but the rule matches the workload alone",
                                        r.file, r.line, where))
            elif scope in ("workload", "candidate") and f"{scope}.{attr}" not in FACTS:
                problems.append(Problem(f"template variable '{scope}.{attr}' is not a fact", r.file, r.line, where))
            elif scope == "derived" and attr not in derived:
                problems.append(Problem(f"template variable 'derived.{attr}': no rule derives it", r.file, r.line, where))
            elif scope in ("workload", "candidate") and f"{scope}.{attr}" not in r.facts_used and not _always_present(f"{scope}.{attr}"):
                problems.append(Problem(f"template reads '{scope}.{attr}', which the rule does not test: test it "
                                        f"(e.g. exists: true) so it is bound when the rule fires", r.file, r.line, where))
    return problems


ALWAYS = {"workload.mode", "workload.model", "workload.task", "workload.latency", "workload.precision",
          "workload.low_precision_weights", "workload.context_tokens", "workload.concurrency", "workload.params_b",
          "workload.active_params_b", "workload.moe", "workload.weights_gb", "workload.kv_cache_gb",
          "workload.per_card_need_gb", "workload.kv_fallback", "workload.import_restricted", "workload.liquid_cooling",
          "workload.deployment", "workload.load", "candidate.gpu", "candidate.vendor", "candidate.generation",
          "candidate.class", "candidate.status", "candidate.memory_gb", "candidate.bandwidth_tb_s",
          "candidate.bf16_tflops", "candidate.fp8_native", "candidate.fp4_native", "candidate.interconnect",
          "candidate.gpus_per_node", "candidate.us_export_controlled", "candidate.fits", "candidate.price_known"}


def _always_present(name: str) -> bool:
    return name in ALWAYS
