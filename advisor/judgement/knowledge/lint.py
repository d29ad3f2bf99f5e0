"""Lint: rule files parsed and checked before anything runs. Every problem is reported with its
file:line and field (unknown facts, operators and effects, type mismatches, values outside a fact's
vocabulary, unreachable or too-complex conditions, effects without a target, derive cycles, rule texts
reading facts the rule does not bind, ids clashing with or replacing shipped rules); what passes is
compiled into Leaf / Node conditions and ordered into strata.
"""
from __future__ import annotations

import re

from advisor.base import yamlio
from advisor.base.errors import Collector, Problem
from advisor.judgement.facts import FACTS
from advisor.judgement.knowledge.conditions import _Parser, _closest, _unreachable, vocabulary  # noqa: F401  (vocabulary: loader)
from advisor.judgement.knowledge.evaluation import number_of
from advisor.judgement.knowledge.examples import check_examples
from advisor.judgement.knowledge.language import (DERIVED_RE, EFFECTS, ID_RE, LEAVES_PER_SET, MAX_PROPERTIES,
                                                  MAX_WEIGHT, RULE_KEYS, SELECTORS, SEVERITIES, Rule, leaves)
from advisor.judgement.knowledge.texts import _PlainText, _template_refs, _TemplateSyntax


# --- effects --------------------------------------------------------------------------------------

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
            if "proxy" in v and (k != "prefer" or not isinstance(v["proxy"], bool)):
                col.add("proxy: true|false is for prefer only (a preference that stands for cost or speed, "
                        "which a cheaper and faster plan beats)", kline, f"then.{k}.proxy")
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
                if s not in SELECTORS + ("weight", "reason", "proxy"):
                    col.add(f"unknown key '{s}' (known: weight, reason, proxy, {', '.join(SELECTORS)})", kline, f"then.{k}")
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


# --- rules: each one, then the set (ids, replacements, scopes, strata, texts) ---------------------

def check_rules(raw_rules: list[tuple], shipped_files: set[str],
                vocab: dict | None = None) -> tuple[list[Rule], dict, list[Problem]]:
    """Parse and check the rules of every file, given as (file, line, raw rule) in load order: the
    rules in force (a later file's rule may replace a shipped one), the derived facts with their
    scope, and every problem found."""
    problems: list[Problem] = []
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
    return kb_rules, derived, problems


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
    examples = check_examples(r, col, line, vocab)
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
