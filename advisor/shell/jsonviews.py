"""The JSON the commands print with --json (or --format json) where their text is not a record
already: facts, rules list/lint/test/coverage, explain, replay and sweep. Each is the figures the
text shows, keyed by name, for scripts; the text stays the command's default."""
from __future__ import annotations


def facts() -> list[dict]:
    from advisor.judgement.facts import FACTS
    return [{"fact": name, "type": f.type, "unit": f.unit, "meaning": f.meaning} for name, f in FACTS.items()]


def rule(r) -> dict:
    return {"id": r.id, "title": r.title, "group": r.group, "source": list(r.source), "file": r.file, "line": r.line,
            "scope": r.scope, "examples": len(r.examples), "replaces": r.replaces}


def rules(action: str, kb, own, args) -> dict:
    """`rules ACTION --json`: the rules checked and what was found. `kb` is every rule in force, `own`
    the rules of the folder named (all when none is)."""
    from advisor.shell import rulestools
    if action == "list":
        return {"rules": [rule(r) for r in own.rules if not args.group or r.group == args.group]}
    if action == "lint":
        return {"rules": len(own.rules), "files": len(own.files), "rules_in_force": len(kb.rules), "problems": [],
                "warnings": [f"{u}: no examples" for u in rulestools.untested_rules(own)]}
    if action == "test":
        run = rulestools.run_examples(own, kb)
        return {"rules": len(own.rules), "rules_with_examples": run.rules, "examples": run.examples,
                "verdicts": run.verdicts, "passed": run.examples - len(run.failures), "failed": len(run.failures),
                "failures": run.failures, "problems": run.problems, "untested": run.untested, "ok": run.ok}
    if action == "coverage":
        from advisor.inputs import catalog
        rows, missing = rulestools.coverage(kb, catalog.default())
        return {"covered": [{"id": k, "where": w} for k, w in rows], "missing": missing}
    raise ValueError(action)


def exit_code(action: str, got: dict) -> int:
    """The exit code the text form gives for the same finding: 1 when a test failed or a heuristic is
    uncited."""
    return 1 if (action == "test" and not got["ok"]) or (action == "coverage" and got["missing"]) else 0


def explanation(rec: dict, gid: str | None, text: str, notes: list[str]) -> dict:
    r = rec.get("recommendation") or {}
    alt = next((a for a in rec.get("alternatives") or [] if a.get("gpu") == gid), None) if gid else None
    return {"recommendation": {k: r.get(k) for k in ("gpu", "name", "count", "nodes", "usd_per_hour")} if r else None,
            "decisive_rule": (rec.get("decisive_rule") or {}).get("id"), "why_not": gid, "alternative": alt,
            "explanation": text.rstrip("\n").split("\n"), "notes": notes}
