"""`gpu-advisor rules lint|test|list|coverage|doc [DIR]`: the knowledge base a rules command works on
(a user's folder checked together with the shipped rules it joins) and what each action prints; kept
apart from cli.py, which only wires the commands (the work on the rules is advisor/shell/rulestools.py)."""
from __future__ import annotations

import sys

from advisor.shell import jsonflag

EXIT_INPUT = 2        # as cli.EXIT_INPUT (this module is imported by cli, so it does not import it back)


def _kb(args):
    """The knowledge base in force: the shipped rules and any --rules folders."""
    from advisor.judgement import advise, knowledge
    return knowledge.load(advise.rule_dirs(getattr(args, "rules", None)))


def _kb_for_rules_cmd(args):
    """The knowledge base a rules command works on: a user's folder is checked together with the
    shipped rules it joins (their derived facts, the ids it must not reuse, what it replaces)."""
    from advisor.judgement import advise, knowledge
    if args.dir:
        return knowledge.load(advise.rule_dirs([args.dir] + (getattr(args, "rules", None) or [])))
    return _kb(args)


def _own_rules(args, kb):
    """The rules of the folder named on the command line (all rules when none is)."""
    from advisor.judgement import knowledge
    if not args.dir:
        return kb
    own = [r for r in kb.rules if not knowledge.is_shipped(knowledge.HOME / r.file) or r.replaces]
    # its own digest: the engine keeps one compiled runner per digest, and these are not all the rules in force
    return knowledge.KnowledgeBase(own, [f for f in kb.files if not f.startswith("rules/")], f"{kb.digest} own", kb.derived)


def cmd_rules(args) -> int:
    """`rules lint|test|list|coverage|doc [DIR]`: the exit code is 1 when a test, the coverage or the
    --check fails."""
    from advisor.shell import rulestools
    kb = _kb_for_rules_cmd(args)
    if args.format == "json" and args.action != "doc":
        from advisor.shell import jsonviews
        got = jsonviews.rules(args.action, kb, _own_rules(args, kb), args)
        jsonflag.dump(got)
        return jsonviews.exit_code(args.action, got)
    if args.action == "lint":
        own = _own_rules(args, kb)
        untested = rulestools.untested_rules(own)
        for u in untested:
            print(f"warning: {u}: no examples: `rules test` fails a rule it cannot check")
        warned = f", {len(untested)} {'warning' if len(untested) == 1 else 'warnings'}" if untested else ""
        if args.dir:
            print(f"{len(own.rules)} rules in {len(own.files)} files, checked with the shipped knowledge base "
                  f"({len(kb.rules)} rules in force): no problems{warned}")
        else:
            print(f"{len(kb.rules)} rules in {len(kb.files)} files: no problems{warned}")
        return 0
    if args.action == "list":
        from advisor.shell import ruletables      # rich's table (rulestools.list_text padded by hand)
        sys.stdout.write(ruletables.rules_table(_own_rules(args, kb), args.group))
        return 0
    if args.action == "test":
        # a user's rules are tested alone; their verdicts are decided with every rule in force
        tested = rulestools.run_examples(_own_rules(args, kb) if args.dir else kb, kb)
        for f in tested.failures + tested.problems:
            print(f"FAIL {f}")
        print(tested.summary())
        return 0 if tested.ok else 1
    if args.action == "coverage":
        from advisor.inputs import catalog
        rows, missing = rulestools.coverage(kb, catalog.default())
        for k, where in rows:
            print(f"{k}  {where}")
        for k in missing:
            print(f"{k}  MISSING: no rule or estimator function cites it")
        print(f"{len(rows)} of {len(rows) + len(missing)} heuristics covered")
        return 1 if missing else 0
    if args.action == "doc":
        from advisor.judgement import knowledge
        own = _own_rules(args, kb)
        # rules beyond the shipped ones (a folder named, --rules, GPU_ADVISOR_RULES) are never written over the
        # shipped reference (review 14: `rules doc --rules DIR` put the team's rules into docs/knowledge-base.md)
        added = bool(args.dir) or any(not knowledge.is_shipped(knowledge.HOME / r.file) for r in kb.rules)
        text = rulestools.doc_text(own, shipped=not added)
        if args.out or added:
            if not args.out or args.out == "-":
                sys.stdout.write(text)
                return 0
            from advisor.base.files import write_atomic
            write_atomic(args.out, text)
            print(f"wrote {args.out} ({len(_own_rules(args, kb).rules)} rules)")
            return 0
        if args.check:
            current = rulestools.DOC_PATH.read_text() if rulestools.DOC_PATH.exists() else ""
            if current != text:
                print(f"{rulestools.DOC_PATH} is stale: run `gpu-advisor rules doc`")
                return 1
            print(f"{rulestools.DOC_PATH} is up to date")
            return 0
        if not rulestools.DOC_PATH.parent.is_dir():      # an installed package has no docs/ to refresh
            sys.stdout.write(text)
            return 0
        from advisor.base.files import write_atomic
        write_atomic(rulestools.DOC_PATH, text)
        print(f"wrote {rulestools.DOC_PATH} ({len(kb.rules)} rules)")
        return 0
    return EXIT_INPUT      # an action argparse's choices let through and no branch above takes


def add_arguments(rl, common) -> None:
    """`rules`' arguments; `common` adds --rules (cli._common, shared by the commands that decide)."""
    jsonflag.add(rl)
    rl.add_argument("action", choices=("lint", "test", "list", "coverage", "doc"))
    rl.add_argument("dir", nargs="?", help="a rules directory instead of the shipped one")
    common(rl, rules=True, prices=False)
    rl.add_argument("--group", help="list: only this group")
    rl.add_argument("--check", action="store_true", help="doc: fail when docs/knowledge-base.md is stale")
    rl.add_argument("--out", metavar="FILE", help="doc: write the reference to FILE ('-': stdout; the default with DIR)")
    rl.set_defaults(func=cmd_rules)
