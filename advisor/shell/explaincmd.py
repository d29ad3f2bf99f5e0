"""`gpu-advisor explain DECISION.json [--why-not GPU]`: a saved decision record explained again, with
the rules and prices it was made with (or today's, said so); --json for scripts."""
from __future__ import annotations

import sys

from advisor.base.errors import InputError


def run(args) -> int:
    from advisor.judgement import explain
    rec = explain.read_record(args.decision)          # problems reported in this order: record, GPU, rules
    args.rules, args.prices, notes, same_files, unloaded = explain.recorded_inputs(rec, args.rules, args.prices)
    from advisor.judgement import advise
    cat = advise.load_catalog(args.prices)
    gid = cat.gpu(args.why_not, "--why-not").id if args.why_not else None
    s = advise.setup(args.rules, args.prices, catalog=cat)
    v = rec.get("versions") or {}
    if s.kb.digest != v.get("rules_sha256") and same_files and v.get("shipped_rules_sha256") == _shipped_digest():
        # the same files under other names (the folder named from another directory): the same rules
        rec = {**rec, "versions": {**v, "rules_sha256": s.kb.digest}}
        notes.append("(The rule folders are named differently than when the decision was made; their files are the same.)")
    try:
        text = explain.explain_record(rec, gid, s, unloaded)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, StopIteration) as exc:
        from advisor.base.errors import Problem
        raise InputError(Problem(f"not a complete decision record ({type(exc).__name__}: {str(exc)[:80]})",
                                 args.decision)) from None
    if args.format == "json":
        from advisor.shell import jsonflag, jsonviews
        jsonflag.dump(jsonviews.explanation(rec, gid, text, notes))
        return 0
    sys.stdout.write(text + "".join(n + "\n" for n in notes))
    return 0


def _shipped_digest() -> str:
    from advisor.judgement import knowledge
    return knowledge.folder_digest(knowledge.RULES_DIR)
