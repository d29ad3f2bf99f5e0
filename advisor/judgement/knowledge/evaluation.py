"""Conditions evaluated in Python, with the engine's semantics: the why-not evaluator (`failing`
says which test failed and what the fact holds), which doubles as the engine's differential test;
the `matches` pattern dialect both run alike; and how a rule file's numbers are read and bounded.
"""
from __future__ import annotations

import re

from advisor.judgement.facts import prop
from advisor.judgement.knowledge.language import MAX_NUMBER, MAX_PATTERN, MAX_QUANTIFIERS, SYMBOL, Node

NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")   # YAML 1.1 reads 1e11 as text


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
