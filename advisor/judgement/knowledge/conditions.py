"""Rule conditions parsed and checked (lint's first step): each leaf's fact, operator, value and type
against the facts (advisor/judgement/facts.py) and the catalog's `vocabulary`, compiled into `Leaf` /
`Node` (`_Parser`); conditions no workload can satisfy refused (`_unreachable`).
"""
from __future__ import annotations

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError
from advisor.judgement.facts import FACTS
from advisor.judgement.knowledge.evaluation import _bad_number, number_of, parse_pattern
from advisor.judgement.knowledge.language import MAX_LIST, NEGATE, OPS, SAFE_PATTERN, Leaf, Node

# --- conditions -----------------------------------------------------------------------------------

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
