"""Runs compiled rules on durable_rules, inside the safe subset measured in ../shared/design.md.

- single-pattern rules over flat facts (the candidate fact carries the workload's fields): no joins;
- derived facts are stratified: stratum k runs, its conclusions are folded into the facts of k+1;
- one long-lived engine ruleset per shard, a fresh sid per decision, delete_state after it;
- facts asserted one at a time, each with a unique id; a catch-all rule in every ruleset;
- at most LEAVES_PER_SET tests one fact can satisfy per ruleset (the 64-alpha-match limit); numbers
  normalised;
- no Python actions at all: the engine's C API is driven directly. After each `assert_fact` the
  pending firings are drained on the calling thread (`start_action_for_state`, then
  `complete_and_start_action` until none is left), and each firing's message names the rule and the
  fact. This is what durable's own Host does for one fact, minus what the advisor never uses: the
  Python `Closure` per firing, the session-state round trip through JSON (`update_state`; no rule
  reads or writes the state) and the Host's dispatcher threads (which, under load, took pending
  firings from the asserting thread: error 307). Rulesets are compiled when a fact first reaches
  them, so a knowledge base pays only for the shards its decisions touch.
- Any engine failure drops the compiled rulesets and the decision is evaluated by the plain-Python
  evaluator instead (the differential test shows the two agree), so no engine error reaches a user.
"""
from __future__ import annotations

import itertools
import json
import math
import operator
import threading

from advisor.judgement.facts import prop
from advisor.base.gcpause import loads_for_good
from advisor.judgement.knowledge import LEAVES_PER_SET, KnowledgeBase, Leaf, Node, Rule, evaluate

#: json.dumps(fact, ensure_ascii=False) without a new encoder made for every call (dumps makes one
#: whenever an argument is not the default): the same text
_dumps = json.JSONEncoder(ensure_ascii=False).encode

RULES_PER_SET = 200       # rules per ruleset (p07: 200 rules run while few of them match one fact)
GROUP_MIN = 8             # rules sharing a first test get rulesets of their own from this many on
BIG = 10 ** 15
CATCH_ALL = "zz_catch_all"
COMPARE = {"lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge}


def normalise(v):
    """A number the engine parses and compares like Python: no exponent notation, no NaN/inf."""
    t = type(v)
    if t is float:
        if not math.isfinite(v):
            return None
        if abs(v) >= 1e15:
            return max(-BIG, min(BIG, int(v)))
        if abs(v) < 1e-4:
            return 0.0
        return round(v, 6)
    if t is int:
        return v if -BIG <= v <= BIG else max(-BIG, min(BIG, v))
    if t is bool or t is str or v is None:
        return v
    if isinstance(v, int):      # an int or float subclass (an IntEnum, say) goes as the plain number
        return normalise(int(v))
    if isinstance(v, float):
        return normalise(float(v))
    return v


def predicate(leaf: Leaf):
    """A leaf compiled into a Python test over a normalised flat fact (same semantics as evaluate)."""
    p, v, op = prop(leaf.fact), leaf.value, leaf.op
    if op == "exists":
        return lambda f: p in f
    if op == "not_exists":
        return lambda f: p not in f
    if op in ("eq", "ne", "in", "not_in") and not isinstance(v, bool) and not (isinstance(v, tuple) and any(isinstance(x, bool) for x in v)):
        if op == "eq":
            return lambda f: p in f and not isinstance(f[p], bool) and f[p] == v
        if op == "ne":
            return lambda f: p in f and (isinstance(f[p], bool) or f[p] != v)
        values = frozenset(v) if all(isinstance(x, str) for x in v) else None
        if values is not None:
            if op == "in":
                return lambda f: p in f and isinstance(f[p], str) and f[p] in values
            return lambda f: p in f and not (isinstance(f[p], str) and f[p] in values)
    if op in COMPARE and type(v) in (int, float):
        cmp = COMPARE[op]       # evaluate: a number compared with a number; anything else fails
        return lambda f: p in f and type(f[p]) in (int, float) and cmp(f[p], v)
    return lambda f: evaluate(leaf, f)


def guard(cond) -> tuple:
    """Tests every fact matching `cond` must pass: its top-level single tests. Checked in Python
    before asserting, they are a necessary condition only (like a Rete discrimination index); the
    engine decides the match."""
    items = cond.items if isinstance(cond, Node) and cond.kind == "all" else (cond,)
    return tuple(c for c in items if isinstance(c, Leaf))


def normalise_fact(fact: dict, keep=None) -> dict:
    """The fact as the engine sees it: numbers normalised, None dropped, only the `keep` properties."""
    out = {}
    if keep is not None and len(keep) * 8 < len(fact):
        # a stratum whose rules test a few properties (derived facts): those looked up, in a fixed
        # order, rather than every one of a candidate's ~80 values scanned (34 candidates a stratum)
        for k in sorted(keep):
            if k in fact:
                n = normalise(fact[k])
                if n is not None:
                    out[k] = n
        return out
    for k, v in fact.items():
        if keep is None or k in keep:
            t = type(v)
            if t is str or t is bool:      # as normalise keeps them, without its call (most of a fact's values)
                out[k] = v
                continue
            n = normalise(v)
            if n is not None:
                out[k] = n
    return out


def _analyse(cond, facts: set) -> tuple:
    """(the condition with its constants normalised like facts, its leaves()) in one walk, adding the
    facts it tests to `facts`. The condition is the same object when nothing needed normalising."""
    if isinstance(cond, Node):
        items, n = [], 0
        for c in cond.items:
            item, k = _analyse(c, facts)
            items.append(item)
            n += k
        same = all(a is b for a, b in zip(items, cond.items))
        return (cond if same else Node(cond.kind, tuple(items))), n
    facts.add(cond.fact)
    v = cond.value
    nv = tuple(normalise(x) for x in v) if isinstance(v, tuple) else normalise(v)
    leaf = cond if nv == v and type(nv) is type(v) else Leaf(cond.fact, cond.op, nv)
    return leaf, (len(v) if cond.op == "not_in" else 1)


def _guard_key(g: tuple) -> tuple:
    return tuple((leaf.fact, leaf.op, type(leaf.value).__name__, str(leaf.value)) for leaf in g)


def to_engine(cond) -> dict:
    """The durable_rules expression of a compiled condition (constant operands only)."""
    if isinstance(cond, Node):
        return {"$and" if cond.kind == "all" else "$or": [to_engine(c) for c in cond.items]}
    p, v = prop(cond.fact), cond.value
    op = cond.op
    if op == "eq":
        return {p: v}
    if op == "ne":
        return {"$neq": {p: v}}
    if op in ("lt", "lte", "gt", "gte"):
        return {f"${op}": {p: v}}
    if op == "in":
        return {"$or": [{p: x} for x in v]} if len(v) > 1 else {p: v[0]}
    if op == "not_in":
        return {"$and": [{"$neq": {p: x}} for x in v]} if len(v) > 1 else {"$neq": {p: v[0]}}
    if op == "exists":
        return {"$ex": {p: 1}}
    if op == "not_exists":
        return {"$nex": {p: 1}}     # always inside $and with the kind discriminator (probe p08b)
    if op == "matches":
        return {"$mt": {p: v}}
    raise ValueError(op)


class EngineError(RuntimeError):
    pass


class EngineRunner:
    """The compiled rulesets of one knowledge base; decisions run one at a time."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.lock = threading.Lock()
        self.sids = itertools.count(1)
        self.conds: dict[str, object] = {}
        self.size: dict[str, int] = {}            # leaves() of each rule's condition
        props: dict[tuple[int, str], set] = {}    # per stratum and scope, the properties its rules test
        self.rule_props: dict[str, frozenset] = {}   # per rule, the properties it tests
        for r in kb.rules:
            facts: set[str] = set()
            self.conds[r.id], self.size[r.id] = _analyse(r.when, facts)
            self.rule_props[r.id] = frozenset(prop(f) for f in facts)
            props.setdefault((r.stratum, r.scope), set()).update(self.rule_props[r.id])
        # assert only what rules can match: each fact is cut down to the properties its scope's rules test
        self.props = {key: frozenset(v) for key, v in props.items()}
        self.sets: dict[tuple[int, str], list[str]] = {}
        self._definitions()
        self.handles: dict[str, int] = {}
        self.fallbacks = 0

    def _definitions(self) -> None:
        """Group the rules into rulesets (shards); nothing is compiled or even written out yet."""
        groups: dict[tuple[int, str], list[Rule]] = {}
        for r in self.kb.rules:
            groups.setdefault((r.stratum, r.scope), []).append(r)
        self.guards = {r.id: guard(self.conds[r.id]) for r in self.kb.rules}
        self.members: dict[str, list[str]] = {}
        self.scope_of: dict[str, str] = {}
        self.entry: dict[str, object] = {}       # the test every rule of a ruleset begins with
        self.sent: dict[str, tuple] = {}         # per ruleset, the properties a fact is asserted with
        self.tests: dict[str, list[tuple]] = {}  # per ruleset, each rule's guard tests (built on first use)
        self.rule_of: dict[str, str] = {f"r_{r.id}": r.id for r in self.kb.rules}   # engine rule name -> rule id
        for (stratum, scope), rules in sorted(groups.items()):
            # rules that begin with the same test share rulesets, so that a ruleset whose common first
            # test a fact fails is skipped with one check
            by_first: dict[object, list[Rule]] = {}
            for r in rules:
                g = self.guards[r.id]
                by_first.setdefault(g[0] if g else None, []).append(r)
            for first in [k for k, v in by_first.items() if k is not None and len(v) < GROUP_MIN]:
                by_first.setdefault(None, []).extend(by_first.pop(first))   # small groups share rulesets
            shards: list[tuple[object, list[Rule]]] = []
            for first, members in sorted(by_first.items(), key=lambda kv: _guard_key((kv[0],) if kv[0] else ())):
                current: list[Rule] = []
                size = 0
                for r in members:      # in knowledge-base order (sorting them bought nothing measurable)
                    n = self.size[r.id]
                    if current and (len(current) >= RULES_PER_SET or size + n > LEAVES_PER_SET):
                        shards.append((first, current))
                        current, size = [], 0
                    current.append(r)
                    size += n
                if current:
                    shards.append((first, current))
            names = []
            for i, (first, shard) in enumerate(shards):
                name = f"s{stratum}_{scope}_{i}"
                names.append(name)
                self.members[name] = [r.id for r in shard]
                self.scope_of[name] = scope
                self.entry[name] = predicate(first) if first is not None else None
                # what its rules test, and the fact's id, session and kind (the catch-all tests the kind)
                self.sent[name] = tuple(sorted(frozenset().union(*(self.rule_props[r.id] for r in shard)) | {"id", "sid", "kind"}))
            self.sets[(stratum, scope)] = names

    def definition(self, name: str) -> dict:
        """The durable_rules ruleset of a shard: its rules (after the kind test) and a catch-all."""
        scope = self.scope_of[name]
        rs = {f"r_{rid}": {"all": [{"m": {"$and": [{"kind": scope}, to_engine(self.conds[rid])]}}], "pri": 1}
              for rid in self.members[name]}
        rs[CATCH_ALL] = {"all": [{"m": {"kind": scope}}], "pri": 65000}
        return rs

    def _handle(self, name: str) -> int:
        """The engine ruleset of a shard, compiled when a fact first reaches it."""
        h = self.handles.get(name)
        if h is None:
            import durable_rules_engine
            text = json.dumps(self.definition(name), ensure_ascii=False)
            h = self.handles[name] = durable_rules_engine.create_ruleset(name, text)
        return h

    def _assert(self, engine, handle: int, fact: dict, fired: list, text: str | None = None) -> None:
        """Assert one fact (`text`: its JSON, when made already) and drain its firings on this thread."""
        code, state = engine.assert_fact(handle, text if text is not None else json.dumps(fact, ensure_ascii=False))
        if code != 0:      # 1 not handled, 2 already observed, 3 deferred: none may happen here
            raise EngineError(f"assert_fact returned {code}")
        pending = engine.start_action_for_state(handle, state)
        message = pending[1] if pending else None
        while message:
            # one fact at a time and every firing drained: each message is this fact's, and its first
            # key ('{"r_<rule id>":{"m":...}}') names the rule
            if not message.startswith('{"'):
                raise EngineError(f"unexpected firing message {message[:40]!r}")
            name = message[2:message.index('"', 2)]
            if name != CATCH_ALL:
                fired.append((self.rule_of[name], fact["id"]))
            message = engine.complete_and_start_action(handle, state)

    def _may_match(self, name: str, fact: dict) -> bool:
        """Whether some rule of the ruleset passes its guard on this fact."""
        tests = self.tests.get(name)
        if tests is None:
            tests = self.tests[name] = [tuple(predicate(g) for g in self.guards[rid]) for rid in self.members[name]]
        for ts in tests:
            for t in ts:
                if not t(fact):
                    break
            else:
                return True
        return False

    def fire(self, stratum: int, scope: str, facts: list[dict]) -> list[tuple[str, str]]:
        """(rule id, fact id) for every rule of this stratum and scope that matches a fact."""
        names = self.sets.get((stratum, scope), [])
        if not names or not facts:
            return []
        with self.lock:
            fired: list[tuple[str, str]] = []
            sid = f"d{next(self.sids)}"
            keep = self.props.get((stratum, scope), frozenset())
            small = [{**normalise_fact(f, keep), "id": f["id"], "sid": sid, "kind": scope} for f in facts]
            try:
                import durable_rules_engine as engine
                for name in names:
                    # assert only what the ruleset's rules can match: a fact failing every rule's guard is skipped
                    entry = self.entry[name]
                    candidates = [f for f in small if entry(f)] if entry else small
                    if not candidates:
                        continue
                    wanted = [f for f in candidates if self._may_match(name, f)]
                    if not wanted:
                        continue
                    handle = self._handle(name)
                    # each ruleset is sent the properties its own rules test: the engine parses and
                    # indexes every property of a fact, and a candidate's ~60 are some 25 per ruleset
                    # (half the engine's time per fact); the rules match on those alone
                    sent = self.sent[name]
                    try:
                        for f in wanted:
                            self._assert(engine, handle, f, fired, _dumps({k: f[k] for k in sent if k in f}))
                    finally:
                        engine.delete_state(handle, sid)
                return sorted(set(fired))
            except Exception:
                self.reset()          # a poisoned ruleset is rebuilt; this decision uses the evaluator
                self.fallbacks += 1
                return self.fire_python(stratum, scope, facts)

    def reset(self) -> None:
        """Forget every compiled ruleset; they are compiled afresh when next needed. The old ones are
        left to the engine, not deleted: `delete_ruleset` is outside the measured safe subset, and
        this happens only after an engine failure."""
        self.handles = {}

    def fire_python(self, stratum: int, scope: str, facts: list[dict]) -> list[tuple[str, str]]:
        normal = [normalise_fact(f) for f in facts]
        out = []
        for r in self.kb.rules:
            if r.stratum == stratum and r.scope == scope:
                cond = self.conds[r.id]
                out += [(r.id, f["id"]) for f in normal if evaluate(cond, f)]
        return sorted(set(out))


_RUNNERS: dict[str, EngineRunner] = {}


def runner(kb: KnowledgeBase) -> EngineRunner:
    """The process-wide runner of a knowledge base (one set of compiled rulesets per knowledge base)."""
    run = _RUNNERS.get(kb.digest)
    if run is None:
        run = _RUNNERS[kb.digest] = _new_runner(kb)
    return run


@loads_for_good
def _new_runner(kb: KnowledgeBase) -> EngineRunner:
    return EngineRunner(kb)
