"""Probe 11 - what one rule may ask of the engine before it crashes or never returns (issue 13).

Each case runs in a child process with a time limit, because the failures are a segfault (exit
-11) and a loop that ignores Ctrl-C. For each shape the probe bisects the largest size that still
compiles and answers within the limit:

  A. `matches` with N repeated `.*` segments (the regex compiler of durable_rules: 127 crash);
  B. `matches` with a literal pattern of N characters;
  C. `matches` with N `[a-z]` classes;
  D. an `in` list of N values, compiled as `$or` of N equalities (~508 loops forever);
  E. a `not_in` list of N values, compiled as `$and` of N inequalities;
  F. N rules in one ruleset, each an `in` list of 100 values (lint's largest), all matching one fact.

Run: .venv/bin/python bench/durable-probes/p11_rule_limits.py [timeout_seconds]
The limits lint enforces (advisor/knowledge.py: MAX_PATTERN, MAX_PATTERN_WILDCARDS, MAX_LIST) sit
well below what this prints.
"""
import json
import subprocess
import sys

CHILD = r"""
import json, sys
from durable.engine import Host
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "A":
    cond = {"$mt": {"s": ".*" * n}}
    fact = {"s": "x" * 40}
elif kind == "B":
    cond = {"$mt": {"s": "a" * n}}
    fact = {"s": "a" * n}
elif kind == "C":
    cond = {"$mt": {"s": "[a-z]" * n}}
    fact = {"s": "q" * n}
elif kind == "D":
    cond = {"$or": [{"s": "v%d" % i} for i in range(n)]}
    fact = {"s": "v%d" % (n - 1)}
elif kind == "E":
    cond = {"$and": [{"$neq": {"s": "v%d" % i}} for i in range(n)]}
    fact = {"s": "zz"}
fired = []
h = Host()
if kind == "F":
    h.set_rulesets({"rs": {"r%d" % j: {"all": [{"m": {"$or": [{"s": "v%d" % i} for i in range(100)]}}],
                                       "run": lambda c: fired.append(1)} for j in range(n)}})
    h.assert_fact("rs", {"s": "v99", "id": 1})
    print(json.dumps({"fired": int(len(fired) == n)}))
    sys.exit(0)
h.set_rulesets({"rs": {"r": {"all": [{"m": cond}], "run": lambda c: fired.append(1)}}})
h.assert_fact("rs", dict(fact, id=1))
print(json.dumps({"fired": len(fired)}))
"""


def run(kind: str, n: int, timeout: float) -> str:
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, kind, str(n)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang"
    if p.returncode < 0:
        return f"signal {-p.returncode}"
    if p.returncode != 0:
        return "error: " + (p.stderr.strip().splitlines() or ["?"])[-1][:80]
    return "ok" if json.loads(p.stdout)["fired"] == 1 else "no match"


def largest_ok(kind: str, lo: int, hi: int, timeout: float) -> tuple[int, str]:
    """The largest n in [lo, hi] that answers 'ok' (assuming monotone failure), and how hi fails."""
    top = run(kind, hi, timeout)
    if top == "ok":
        return hi, "ok"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run(kind, mid, timeout) == "ok":
            lo = mid
        else:
            hi = mid
    return lo, run(kind, hi, timeout)


def main():
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    for kind, what, lo, hi in (("A", "matches '.*' x N", 1, 200), ("B", "matches literal of N chars", 1, 5000),
                               ("C", "matches '[a-z]' x N", 1, 2000), ("D", "in list of N values", 1, 1200),
                               ("E", "not_in list of N values", 1, 1200), ("F", "N rules with a 100-value in list", 1, 300)):
        n, fail = largest_ok(kind, lo, hi, timeout)
        print(f"{kind}. {what}: largest that answers: {n}" + ("" if fail == "ok" else f"; {n + 1} gives: {fail}"), flush=True)


if __name__ == "__main__":
    main()
