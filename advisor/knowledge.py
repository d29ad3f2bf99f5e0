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

from advisor import HOME, cache, yamlio
from advisor.cache import jinja_bytecode_cache
from advisor.errors import Collector, InputError, Problem
from advisor.facts import FACTS, prop
from advisor.gcpause import free_cycles, loads_for_good

RULES_DIR = HOME / "rules"
NOT_RULES = {"questions.yaml"}   # the dialogue's questions live beside the rules
MAX_PROPERTIES = 240             # per fact; the engine refuses more than 252 (error 302) and adds its own
RULE_KEYS = ("id", "title", "source", "group", "priority", "when", "then", "because", "examples")
EFFECTS = ("prefer", "avoid", "exclude", "warn", "note", "derive")
OPS = ("eq", "ne", "lt", "lte", "gt", "gte", "between", "in", "not_in", "exists", "matches")
SEVERITIES = ("info", "low", "medium", "high")
SELECTORS = ("gpu", "vendor", "generation", "class")
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DERIVED_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SAFE_PATTERN = re.compile(r"^[A-Za-z0-9_.*+\-\[\]]+$")    # what the engine's regex dialect runs like Python's
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
        return isinstance(a, str) and re.fullmatch(v, a) is not None
    if isinstance(a, bool) or isinstance(a, str) or isinstance(v, str):
        return False
    return {"lt": a < v, "lte": a <= v, "gt": a > v, "gte": a >= v}[cond.op]


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
    def __init__(self, col: Collector, derived_names: dict[str, str]):
        self.col = col
        self.derived = derived_names
        self.used: list[str] = []

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
        for op, v in spec.items():
            if op not in OPS:
                self.col.add(f"unknown operator '{op}' (known: {', '.join(OPS)})", line, str(name))
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
    """A Jinja loader whose templates are rule texts named by their digest, so that their compiled
    bytecode can be cached across processes (Jinja compiles slowly; starts should not)."""

    def __init__(self):
        self.texts: dict[str, str] = {}

    def add(self, text: str) -> str:
        name = hashlib.sha256(text.encode()).hexdigest()
        self.texts[name] = text
        return name

    def get_source(self, environment, name):
        return self.texts[name], None, lambda: True


def template_env():
    """The sandbox every rule text renders in: only the bound facts and three formatting filters."""
    from jinja2 import BaseLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment
    loader = type("RuleTextLoader", (_RuleTexts, BaseLoader), {})()
    env = SandboxedEnvironment(autoescape=False, undefined=StrictUndefined, loader=loader,
                               bytecode_cache=jinja_bytecode_cache())
    env.filters.update(FILTERS)
    return env


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
    """A rule text ready to render: plain text with fields, or else compiled once per process in the
    sandbox (its bytecode cached on disk)."""
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


def _parse_effects(raw, col: Collector, line, rid) -> dict:
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
            if not isinstance(v, dict) or not isinstance(v.get("weight"), (int, float)) or isinstance(v.get("weight"), bool) or v["weight"] <= 0:
                col.add(f"{k} needs a positive weight: {{weight: 20}} (and optionally gpu/vendor/generation/class)", kline, f"then.{k}")
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
        effects[k] = v
    return effects


def _files(dirs: list[Path]) -> list[Path]:
    out = []
    for d in dirs:
        d = Path(d)
        if d.is_file():
            out.append(d)
        elif d.is_dir():
            out.extend(sorted(p for p in d.rglob("*.yaml") if p.is_file() and p.name not in NOT_RULES))
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
    kb = _compiled_get(digest) if digest and cache.cache_dir() is not None else None
    if kb is None:
        kb = _load(files, digest)
        if cache.cache_dir() is not None:
            _compiled_put(kb)
    return kb


def _digest(files: list[Path]) -> str:
    """What identifies a knowledge base: its files' names (as shown) and bytes, in load order."""
    h = hashlib.sha256()
    for f in files:
        h.update(_display(f).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _load(files: list[Path], digest: str | None) -> KnowledgeBase:
    problems: list[Problem] = []
    raw_rules = []
    for f in files:
        rel = _display(f)
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
    seen_in_file: dict[tuple[str, str], int] = {}
    for rel, line, r in raw_rules:
        col = Collector(rel)
        rule = _parse_rule(r, rel, line, col, derived)
        problems.extend(col.problems)
        if rule is None:
            continue
        key = (rule.file, rule.id)
        if key in seen_in_file or (rule.id in rules and rules[rule.id].file == rule.file):
            problems.append(Problem(f"duplicate rule id '{rule.id}' (first at line {rules[rule.id].line})", rel, line, "id"))
            continue
        seen_in_file[key] = line
        if rule.id in rules:
            rule.overrides = rules[rule.id].where
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

COMPILED_VERSION = "kb-3"


def _compiled_key(digest: str) -> str:
    return cache.key(COMPILED_VERSION, digest, cache.source_of("knowledge", "facts", "engine", "yamlio"))


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


RULE_FIELDS = ("id", "title", "group", "priority", "because", "file", "line", "scope", "stratum", "overrides")


def _compiled_put(kb: KnowledgeBase) -> None:
    rules = [{**{k: getattr(r, k) for k in RULE_FIELDS}, "source": list(r.source), "when": _enc_cond(r.when),
              "effects": cache.pack(r.effects), "examples": cache.pack(r.examples),
              "facts_used": list(r.facts_used), "derives": list(r.derives)} for r in kb.rules]
    data = {"rules": rules, "files": kb.files, "digest": kb.digest, "derived": kb.derived}
    cache.write_json("kb", _compiled_key(kb.digest), data)


def _compiled_get(digest: str) -> KnowledgeBase | None:
    data = cache.read_json("kb", _compiled_key(digest), packed=True)
    if data is None:
        return None
    try:
        rules = [Rule(d["id"], d["title"], tuple(d["source"]), d["group"], d["priority"], _dec_cond(d["when"]),
                      d["effects"], d["because"], d["examples"], d["file"], d["line"],
                      d["scope"], d["stratum"],
                      tuple(d["facts_used"]), tuple(d["derives"]), d["overrides"]) for d in data["rules"]]
        return KnowledgeBase(rules, data["files"], data["digest"], data["derived"])
    except (KeyError, TypeError, IndexError):
        return None


def _display(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(HOME))
    except ValueError:
        return str(p)


def _parse_rule(r, rel, line, col: Collector, derived) -> Rule | None:
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
    if not src or not all(isinstance(s, str) and s for s in src):
        col.add(f"rule '{rid}' needs a source (knowledge IDs or your own reference)", yamlio.line_of(r, "source", line), "source")
        src = []
    prio = r.get("priority", 100)
    if not isinstance(prio, int) or isinstance(prio, bool) or not 0 <= prio <= 1000:
        col.add("priority must be a whole number 0..1000 (lower runs first)", yamlio.line_of(r, "priority", line), "priority")
        prio = 100
    if "when" not in r or "then" not in r:
        return None
    parser = _Parser(col, derived)
    before = len(col.problems)
    when = parser.cond(r["when"], yamlio.line_of(r, "when", line))
    effects = _parse_effects(r["then"], col, yamlio.line_of(r, "then", line), rid)
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
                derives=tuple(effects.get("derive", {}) or ()))


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
