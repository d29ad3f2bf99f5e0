"""The command line: `gpu-advisor estimate|...`. Input errors print one line each and exit 2."""
from __future__ import annotations

import argparse
import json
import os
import sys

from advisor.base.errors import InputError, Problem

EXIT_INPUT = 2
EXIT_OUTPUT = 120     # the output could not be written (what Python itself exits with then)


def _catalog(args):
    from advisor.judgement import advise
    return advise.load_catalog(getattr(args, "prices", None))


def _setup(args):
    from advisor.judgement import advise
    return advise.setup(getattr(args, "rules", None), getattr(args, "prices", None))


def _workload(args, cat):
    from advisor.inputs import workload
    w = workload.load(args.workload, cat)
    if getattr(args, "gpu", None):
        w = workload.with_gpus(w, [cat.gpu(g, "--gpu").id for g in args.gpu])
    if getattr(args, "fleet", None):
        # the file's fleet replaces the workload's own `fleet:` (one list of what the team holds)
        from dataclasses import replace
        w = replace(w, fleet=workload.load_fleet(args.fleet, cat))
    return w


def cmd_estimate(args) -> int:
    from advisor.numbers.estimate import estimate
    from advisor.shell import report
    cat = _catalog(args)
    est = estimate(_workload(args, cat), cat)
    if args.format == "json":
        print(json.dumps(est.as_dict(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.estimate_text(est))
    return 0


def _kb(args):
    from advisor.judgement import advise, knowledge
    return knowledge.load(advise.rule_dirs(getattr(args, "rules", None)))


def cmd_recommend(args) -> int:
    from advisor.base.files import write_atomic
    from advisor.judgement.advise import advise
    s = _setup(args)
    d = advise(_workload(args, s.catalog), s)
    rec = d.record
    if args.format == "json":
        text = json.dumps(rec, indent=2, ensure_ascii=False, default=str) + "\n"
    elif args.format == "summary":
        from advisor.shell.report import summary_text
        text = summary_text(rec, s.catalog)
    elif not (args.out and args.format == "md"):
        from advisor.shell import memo
        colour = args.format == "text" and not args.out and not args.template and sys.stdout.isatty() \
            and not os.environ.get("NO_COLOR")
        text = memo.render(rec, s.catalog, args.format, args.template, colour=colour)
    if args.out and args.format == "md":
        # the Markdown memo's charts go beside it as SVG files, which it links (memo.write)
        from advisor.shell import memo
        written = memo.write(rec, s.catalog, args.format, args.out, args.template)
        print(f"wrote {args.out}" + (f" and its charts {', '.join(str(p) for p in written[1:])}" if written[1:] else ""),
              file=sys.stderr)
    elif args.out:
        write_atomic(args.out, text)        # refused when it is any file the command read
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_facts(args) -> int:
    from advisor.shell import rulestools
    sys.stdout.write(rulestools.facts_text())
    return 0


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
    return knowledge.KnowledgeBase(own, [f for f in kb.files if not f.startswith("rules/")], kb.digest, kb.derived)


def cmd_rules(args) -> int:
    from advisor.shell import rulestools
    kb = _kb_for_rules_cmd(args)
    if args.action == "lint":
        if args.dir:
            own = _own_rules(args, kb)
            print(f"{len(own.rules)} rules in {len(own.files)} files, checked with the shipped knowledge base "
                  f"({len(kb.rules)} rules in force): no problems")
        else:
            print(f"{len(kb.rules)} rules in {len(kb.files)} files: no problems")
        return 0
    if args.action == "list":
        sys.stdout.write(rulestools.list_text(_own_rules(args, kb), args.group))
        return 0
    if args.action == "test":
        kb = _own_rules(args, kb) if args.dir else kb
        checked, failures = rulestools.run_examples(kb)
        for f in failures:
            print(f"FAIL {f}")
        print(f"{checked} examples of {len(kb.rules)} rules: {checked - len([f for f in failures if 'example' in f])} passed, {len(failures)} failed")
        return 1 if failures else 0
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
    return EXIT_INPUT


def cmd_explain(args) -> int:
    from advisor.judgement import explain
    rec = explain.read_record(args.decision)          # problems reported in this order: record, GPU, rules
    args.rules, args.prices, notes, same_files, unloaded = explain.recorded_inputs(rec, args.rules, args.prices)
    from advisor.judgement import advise
    cat = _catalog(args)
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
    sys.stdout.write(text + "".join(n + "\n" for n in notes))
    return 0


def _shipped_digest() -> str:
    from advisor.judgement import knowledge
    return knowledge.folder_digest(knowledge.RULES_DIR)


def cmd_ask(args) -> int:
    from advisor.shell import dialogue
    from advisor.inputs import workload
    s = _setup(args)
    cat = s.catalog
    out_dir = args.out_dir or "."
    if args.resume:
        try:
            dlg = dialogue.Dialogue.resume(args.resume, s, out_dir=out_dir)
            dlg.current()                          # the state it restores must be one the dialogue can continue
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
            from advisor.base.errors import Problem
            raise InputError(Problem(f"not a resume file this version can continue ({type(exc).__name__}: "
                                     f"{str(exc)[:80]})", args.resume)) from None
    else:
        answers = {}
        if args.from_file:
            data = workload.yamlio.load(args.from_file)
            workload.parse(data, cat, args.from_file)          # refuse an invalid file up front
            answers = dialogue.answers_from(data, cat, args.from_file)
        dlg = dialogue.Dialogue(s, answers=answers, out_dir=out_dir)
    piped = os.environ.get("GPU_ADVISOR_PIPE") == "1"
    if not sys.stdin.isatty() and not piped:
        print("gpu-advisor: error: `ask` is an interactive dialogue and needs a terminal; for a workload file use "
              "`gpu-advisor recommend WORKLOAD.yaml`", file=sys.stderr)
        return EXIT_INPUT
    if piped:
        return dialogue.run_lines(dlg, sys.stdin, print)
    return dialogue.run_interactive(dlg)


def cmd_replay(args) -> int:
    from advisor.shell import dialogue
    s = _setup(args)
    failed = 0
    for path in args.transcripts:
        try:
            same, diffs = dialogue.replay(path, s)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
            from advisor.base.errors import Problem
            raise InputError(Problem(f"not a transcript this version can replay ({type(exc).__name__}: {str(exc)[:80]})",
                                     path)) from None
        print(f"{'ok  ' if same else 'FAIL'} {path}")
        for d in diffs:
            print(f"     {d}")
        failed += not same
    print(f"{len(args.transcripts) - failed} passed, {failed} failed")
    return 1 if failed else 0


def cmd_sweep(args) -> int:
    from pathlib import Path

    from advisor.shell import sweep
    written, total, interrupted, fields = sweep.run(args.grid, args.out, args.rules, args.prices, args.jobs,
                                                    progress=not args.quiet and sys.stderr.isatty(), summary=args.summary)
    if interrupted:
        print(f"gpu-advisor: interrupted: {written} of {total} rows decided and kept in {args.out}", file=sys.stderr)
        return 128 + int(interrupted)      # 130 after Ctrl-C, 143 after SIGTERM, as a shell reports a signal
    if args.summary:
        sweep.write_summary(Path(args.out), fields, Path(args.summary))
    print(f"{written} combinations decided; wrote {args.out}" + (f" and {args.summary}" if args.summary else ""),
          file=sys.stderr)
    return 0


def cmd_prices(args) -> int:
    """`prices import PATH...`: SkyPilot vms.csv files -> a price file; `prices import-api FILE`: LiteLLM's
    per-token price table -> an api-prices file; `prices list`: the known quotes."""
    if args.action == "import-api":
        return _import_api(args)
    if args.action == "import":
        from advisor.inputs import catalog, skypilot
        from advisor.base.files import write_atomic
        if not args.paths:
            raise InputError(Problem("give a skypilot-catalog catalogs/v7 folder, ~/.sky/catalogs/v7 or a vms.csv", None, None, "PATH"))
        cat = catalog.default()
        imp = skypilot.import_prices(args.paths, args.skip or (), args.date, args.commit, cat)
        if args.out:
            write_atomic(args.out, imp.text)     # refused when it is any file the import read (base.files)
        else:
            sys.stdout.write(imp.text)
        gpus = len({r["gpu"] for r in imp.rows})
        print(f"{len(imp.rows)} price rows for {gpus} catalog GPUs" + (f"; wrote {args.out}" if args.out else ""), file=sys.stderr)
        for line in imp.summary():
            print(line, file=sys.stderr)
        return 0
    for flag in ("out", "skip", "date", "commit"):       # the import's: refused, not ignored (review 14)
        if getattr(args, flag, None):
            raise InputError(Problem("is for `prices import`; `prices list` prints to stdout", None, None, f"--{flag}"))
    cat = _catalog(args)
    rows = cat.prices
    if args.gpu:
        want = {cat.gpu(g, "--gpu").id for g in args.gpu}
        rows = [p for p in rows if p.gpu in want]
    if args.kind:
        rows = [p for p in rows if p.kind == args.kind]
    rows = sorted(rows, key=lambda p: (p.gpu, p.kind, p.usd_per_hour / p.gpus_per_instance, p.provider, p.instance or ""))
    if args.format == "json":
        keys = ("gpu", "gpus_per_instance", "kind", "usd_per_hour", "usd_per_hour_median", "provider", "instance",
                "regions", "region_count", "date", "commit", "source", "tier", "note")
        out = [{k: (list(getattr(p, k)) if k == "regions" else getattr(p, k)) for k in keys} | {"file": p.file, "line": p.line}
               for p in rows]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(f"{'gpu':<15} {'kind':<9} {'$/GPU-h':>8} {'GPUs':>4} {'$/h':>9}  provider / instance / date")
    for p in rows:
        when = p.date + (f" @{p.commit[:8]}" if p.commit else "")
        print(f"{p.gpu:<15} {p.kind:<9} {p.usd_per_hour / p.gpus_per_instance:>8.2f} {p.gpus_per_instance:>4} {p.usd_per_hour:>9.2f}  "
              f"{p.provider}{' ' + p.instance if p.instance else ''} ({when})")
    print(f"{len(rows)} quotes for {len({p.gpu for p in rows})} GPUs; GPUs without any: "
          + (", ".join(g for g in cat.gpus if not cat.prices_for(g)) or "none"))
    return 0


def _import_api(args) -> int:
    import datetime
    from pathlib import Path
    from advisor.inputs import apiprices
    from advisor.base.files import write_atomic
    if len(args.paths) != 1:
        raise InputError(Problem("give one LiteLLM model_prices_and_context_window.json", None, None, "FILE"))
    date = args.date or datetime.date.today().isoformat()
    source = args.source or f"BerriAI/litellm model_prices_and_context_window.json ({Path(args.paths[0]).name})"
    skipped: list[str] = []
    text, rows, unmapped = apiprices.import_api_prices(args.paths[0], _catalog(args), date, source, skipped)
    if args.out:
        write_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    print(f"{len(rows)} API price rows for {len({r['model'] for r in rows})} catalog models"
          + (f"; wrote {args.out}" if args.out else ""), file=sys.stderr)
    if unmapped:
        print(f"not mapped to a catalog model (no row written), {len(unmapped)} ids of catalog model families: "
              + ", ".join(unmapped), file=sys.stderr)
    if skipped:
        print(f"left out for a price that is no number (no row written), {len(skipped)}: " + ", ".join(skipped), file=sys.stderr)
    return 0


def _prices_args(pr) -> None:
    pr.add_argument("action", choices=("list", "import", "import-api"))
    pr.add_argument("paths", nargs="*", metavar="PATH", help="import: skypilot-catalog catalogs/v7 folder, ~/.sky/catalogs/v7, a vms.csv")
    pr.add_argument("--gpu", action="append", metavar="ID", help="list: only this GPU (repeatable)")
    pr.add_argument("--kind", choices=("on-demand", "spot", "reserved", "endpoint"), help="list: only this kind")
    pr.add_argument("--format", choices=("text", "json"), default="text")
    pr.add_argument("--out", metavar="FILE", help="import: write the price file here (default: stdout); use it with --prices FILE")
    pr.add_argument("--skip", action="append", metavar="CLOUD", help="import: leave out this cloud (repeatable)")
    pr.add_argument("--date", help="import: the retrieval date to record (default: the source's, else today)")
    pr.add_argument("--commit", help="import: the catalog commit to record (default: read from the checkout)")
    pr.add_argument("--source", help="import-api: the source to record on every row (repository, version or commit)")
    _common(pr, rules=False, prices=True)
    pr.set_defaults(func=cmd_prices)


def _common(parser, rules: bool, prices: bool) -> None:
    """The options every command that decides shares, defined once."""
    if rules:
        parser.add_argument("--rules", action="append", metavar="DIR",
                            help="add a rules directory (later files override shipped rules by id)")
    if prices:
        parser.add_argument("--prices", metavar="FILE", help="extra or replacement price quotes (YAML, see catalog/prices.yaml)")


def _estimate_args(e) -> None:
    e.add_argument("workload", metavar="WORKLOAD.yaml")
    e.add_argument("--gpu", action="append", metavar="ID", help="consider only this GPU (repeatable)")
    e.add_argument("--format", choices=("text", "json"), default="text")
    _common(e, rules=False, prices=True)
    e.set_defaults(func=cmd_estimate)


def _recommend_args(r) -> None:
    r.add_argument("workload", metavar="WORKLOAD.yaml")
    r.add_argument("--gpu", action="append", metavar="ID", help="consider only this GPU (repeatable)")
    r.add_argument("--fleet", metavar="FLEET.yaml", help="the GPUs the team owns or has reserved (fleet: [{gpu, count, ...}]): "
                   "owned cards cost their running cost; the plan says what to rent or buy on top")
    r.add_argument("--format", choices=("text", "md", "html", "json", "summary"), default="text",
                   help="text: the memo for the terminal (default); md, html: the memo; json: the decision record; summary: a few lines")
    r.add_argument("--out", metavar="FILE", help="write to FILE atomically instead of stdout")
    r.add_argument("--template", metavar="FILE", help="render the memo with this Jinja template (sandboxed)")
    _common(r, rules=True, prices=True)
    r.set_defaults(func=cmd_recommend)


def _facts_args(f) -> None:
    f.set_defaults(func=cmd_facts)


def _rules_args(rl) -> None:
    rl.add_argument("action", choices=("lint", "test", "list", "coverage", "doc"))
    rl.add_argument("dir", nargs="?", help="a rules directory instead of the shipped one")
    _common(rl, rules=True, prices=False)
    rl.add_argument("--group", help="list: only this group")
    rl.add_argument("--check", action="store_true", help="doc: fail when docs/knowledge-base.md is stale")
    rl.add_argument("--out", metavar="FILE", help="doc: write the reference to FILE ('-': stdout; the default with DIR)")
    rl.set_defaults(func=cmd_rules)


def _ask_args(a) -> None:
    a.add_argument("--from", dest="from_file", metavar="WORKLOAD.yaml", help="start from a workload file; ask only what is missing")
    a.add_argument("--resume", metavar="FILE", help="continue a dialogue saved on Ctrl-C / Ctrl-D / quit")
    a.add_argument("--out-dir", metavar="DIR", help="where the memo, decision record, transcript and resume file go")
    _common(a, rules=True, prices=True)
    a.set_defaults(func=cmd_ask)


def _replay_args(rp) -> None:
    rp.add_argument("transcripts", nargs="+", metavar="TRANSCRIPT.yaml")
    _common(rp, rules=True, prices=True)
    rp.set_defaults(func=cmd_replay)


def _sweep_args(sw) -> None:
    sw.add_argument("grid", metavar="GRID.yaml")
    sw.add_argument("--out", required=True, metavar="TABLE.csv")
    sw.add_argument("--summary", metavar="FILE.md|FILE.html", help="a summary with a chart of the recommended GPU")
    sw.add_argument("--jobs", type=int, metavar="N", help="worker processes (default: all cores)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    _common(sw, rules=True, prices=True)
    sw.set_defaults(func=cmd_sweep)


def _explain_args(x) -> None:
    x.add_argument("decision", metavar="DECISION.json")
    x.add_argument("--why-not", metavar="GPU")
    _common(x, rules=True, prices=True)
    x.set_defaults(func=cmd_explain)


COMMANDS = {
    "estimate": ("memory ledger, compute and a table of candidate GPUs for a workload file", _estimate_args),
    "recommend": ("which GPU, how many and why: a memo (text, md, html) or the decision record (json)", _recommend_args),
    "facts": ("every fact name a rule may test, with type, unit and meaning", _facts_args),
    "rules": ("lint, test, list, document or check coverage of the knowledge base", _rules_args),
    "ask": ("a guided dialogue in the terminal that ends with a memo", _ask_args),
    "replay": ("replay recorded dialogue transcripts; fail when questions or decision changed", _replay_args),
    "sweep": ("decide every combination of a grid of workloads (CSV, optional summary)", _sweep_args),
    "explain": ("explain a saved decision record", _explain_args),
    "prices": ("list the known price quotes, or import SkyPilot's catalog (vms.csv) as a price file", _prices_args),
}


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, told the terminal width up front: left to itself it imports shutil
    (and with it bz2 and lzma) at every start just to ask."""

    def __init__(self, prog, **kw):
        if kw.get("width") is None:
            kw["width"] = _columns() - 2          # what argparse does with shutil.get_terminal_size()
        super().__init__(prog, **kw)


def _columns() -> int:
    """shutil.get_terminal_size().columns: COLUMNS if positive, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or, when the command is known, only that command's (argparse builds every
    subcommand's parser up front, which costs a start more than the command itself)."""
    from advisor import __version__
    p = argparse.ArgumentParser(prog="gpu-advisor", description="Which accelerator to rent or buy for an ML workload, how many, and why.",
                                formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"gpu-advisor {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (text, add_args) in COMMANDS.items():
        if command in (None, name):
            add_args(sub.add_parser(name, help=text, formatter_class=_Formatter))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # argparse prints its own one-line usage error
        return EXIT_INPUT if exc.code not in (0, None) else 0
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_INPUT
    try:
        return args.func(args)
    except InputError as exc:
        for problem in exc.problems:
            print(f"gpu-advisor: error: {one_line(str(problem))}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_INPUT)      # base.files.WriteFailed: EXIT_OUTPUT
    except KeyboardInterrupt:
        print("gpu-advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:          # an I/O failure no command expects: one line, no traceback
        if exc.filename is None:    # writing the output (a full disk, say)
            _say(f"gpu-advisor: error: cannot write the output: {exc.strerror or exc}")
            return EXIT_OUTPUT
        _say(f"gpu-advisor: error: {exc.filename}: {exc.strerror or exc}")
        return 1


def one_line(text: str) -> str:
    """A message as one line of plain text: line breaks become spaces, control characters (a
    terminal escape from a file, say) are shown escaped instead of acting on the terminal."""
    text = " ".join(text.splitlines())
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


ONE_SHOT = {"estimate", "recommend", "facts", "rules", "explain"}


def entry() -> None:
    """The `gpu-advisor` command. After a one-shot command has written its output (flushed here),
    the process ends without the interpreter's teardown, which frees every object one by one and
    costs a start about 15 ms; nothing is pending by then (files are written and closed, no threads
    or child processes run). The dialogue and sweeps end the usual way."""
    code = main()
    watched = sys.gettrace() is not None or sys.getprofile() is not None or "coverage" in sys.modules
    if len(sys.argv) > 1 and sys.argv[1] in ONE_SHOT and not watched:   # a profiler or coverage writes at exit
        if code == EXIT_OUTPUT:      # said already; what is left in the buffer cannot be written either
            os._exit(code)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:      # the output's reader left, which is not an error here
            pass
        except OSError as exc:       # a full disk, say: as Python itself reports a failed flush at exit
            _say(f"gpu-advisor: error: cannot write the output: {exc.strerror or exc}")
            os._exit(EXIT_OUTPUT)
        os._exit(code)
    sys.exit(code)
