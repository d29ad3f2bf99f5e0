"""The command line: `gpu-advisor estimate|...`. Input errors print one line each and exit 2."""
from __future__ import annotations

import argparse
import json
import os
import sys

from advisor.base.errors import InputError

EXIT_INPUT = 2
EXIT_NO_PLAN = 3      # valid input, but no plan meets it (the message says what it needs and which constraint binds)
EXIT_OUTPUT = 120     # the output could not be written (what Python itself exits with then)
EXIT_CODES = ("exit codes: 0 a recommendation; 1 rules test or replay failed, or ask's input ended (answers saved); "
              "2 invalid input; 3 valid input but no plan meets it (what it needs and the constraint that binds are said); "
              "120 the output could not be written; 130 interrupted")


def _catalog(args):
    from advisor.judgement import advise
    return advise.load_catalog(getattr(args, "prices", None), getattr(args, "api_prices", None))


def _setup(args):
    from advisor.judgement import advise
    return advise.setup(getattr(args, "rules", None), getattr(args, "prices", None), api_prices=getattr(args, "api_prices", None))


def _workload(args, cat):
    from advisor.inputs import workload
    from advisor.shell import workloadflags       # a file, flags over it, or flags alone; --gpu H100:8, 80GB+
    w = workloadflags.load(args, cat)
    if getattr(args, "gpu", None):
        w = workloadflags.with_gpu_flags(w, args, cat)
    if getattr(args, "fleet", None):
        # the file's fleet replaces the workload's own `fleet:` (one list of what the team holds)
        from dataclasses import replace
        w = replace(w, fleet=workload.load_fleet(args.fleet, cat))
    return w


def cmd_estimate(args) -> int:
    from advisor.kinds import estimate
    from advisor.shell import report
    from advisor.judgement.advise import catalog_for
    cat = _catalog(args)
    w = _workload(args, cat)
    est = estimate(w, catalog_for(w, cat))          # with the workload's own api_prices: file
    if args.format == "json":
        print(json.dumps(est.as_dict(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.estimate_text(est))
    return 0


def cmd_recommend(args) -> int:
    from advisor.base.files import write_atomic
    from advisor.judgement.advise import advise
    s = _setup(args)
    w = _workload(args, s.catalog)
    d = advise(w, s, why_none=True)
    rec = d.record
    from advisor.shell import deploycmd, terminal
    deployed = deploycmd.after_recommend(args, rec, s.catalog, w)      # --deploy DIR: the launch files
    if terminal.wants_summary(args):        # a terminal: the summary, the whole memo in a file (terminal.py)
        code = terminal.show(rec, s.catalog, args.workload)
        print(deployed or "", end="\n" if deployed else "")
        return _no_plan(rec) if rec["recommendation"] is None else code
    args.format = args.format or "text"
    if args.format == "json":
        text = json.dumps(rec, indent=2, ensure_ascii=False, default=str) + "\n"
    elif args.format == "summary":
        from advisor.shell.report import SUMMARY_WIDTH, summary_text
        text = summary_text(rec, s.catalog, SUMMARY_WIDTH) + (deployed + "\n" if deployed else "")
    elif not (args.out and args.format == "md"):
        from advisor.shell import memo
        colour = args.format == "text" and not args.out and not args.template and sys.stdout.isatty() \
            and not os.environ.get("NO_COLOR")
        text = memo.render(rec, s.catalog, args.format, args.template, colour=colour and not args.full)
    if args.out and args.format == "md":
        # the Markdown memo's charts go beside it as SVG files, which it links (memo.write)
        from advisor.shell import memo
        written = memo.write(rec, s.catalog, args.format, args.out, args.template)
        print(f"wrote {args.out}" + (f" and its charts {', '.join(str(p) for p in written[1:])}" if written[1:] else ""),
              file=sys.stderr)
    elif args.out:
        write_atomic(args.out, text)        # refused when it is any file the command read
        print(f"wrote {args.out}", file=sys.stderr)
    elif args.full:
        terminal.page(text)
    else:
        sys.stdout.write(text)
    return _no_plan(rec) if rec["recommendation"] is None else 0


def _no_plan(rec: dict) -> int:
    """Valid input that no plan meets: one line on stderr with what it needs and what binds, exit 3."""
    print("gpu-advisor: no plan meets the workload: " + one_line(rec["no_plan"]["text"]), file=sys.stderr)
    return EXIT_NO_PLAN


def cmd_facts(args) -> int:
    if args.format == "json":
        from advisor.shell import jsonflag, jsonviews
        jsonflag.dump(jsonviews.facts())
        return 0
    from advisor.shell import ruletables          # rich's table (rulestools.facts_text padded by hand)
    sys.stdout.write(ruletables.facts_table())
    return 0


def cmd_explain(args) -> int:
    from advisor.shell import explaincmd
    return explaincmd.run(args)


def cmd_ask(args) -> int:
    from advisor.shell import dialogue
    from advisor.inputs import workload
    s = _setup(args)
    cat = s.catalog
    out_dir = args.out_dir or "."
    if args.out_dir:
        # created (or refused) before the first question: answers typed into a folder that does not exist
        # were lost at Ctrl-C ("cannot write: No such file or directory")
        from advisor.shell.session import ready_out_dir
        ready_out_dir(args.out_dir)
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
    code = dialogue.run_lines(dlg, sys.stdin, print) if piped else dialogue.run_interactive(dlg)
    # the session ended as asked, on a decision without a plan: exit 3, as `recommend` does
    no_plan = code == 0 and dlg.decision is not None and dlg.decision.record["recommendation"] is None
    return EXIT_NO_PLAN if no_plan else code


def cmd_replay(args) -> int:
    from advisor.shell import dialogue
    s = _setup(args)
    failed, results = 0, []
    for path in args.transcripts:
        try:
            same, diffs = dialogue.replay(path, s)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
            from advisor.base.errors import Problem
            raise InputError(Problem(f"not a transcript this version can replay ({type(exc).__name__}: {str(exc)[:80]})",
                                     path)) from None
        results.append({"transcript": path, "same": same, "differences": list(diffs)})
        failed += not same
        if args.format == "json":
            continue
        print(f"{'ok  ' if same else 'FAIL'} {path}")
        for d in diffs:
            print(f"     {d}")
    if args.format == "json":
        from advisor.shell import jsonflag
        jsonflag.dump({"transcripts": results, "passed": len(results) - failed, "failed": failed})
        return 1 if failed else 0
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
    if args.format == "json":
        from advisor.shell import jsonflag
        jsonflag.dump({"decided": written, "combinations": total, "table": args.out, "summary": args.summary,
                       "columns": list(fields or [])})
        return 0
    print(f"{written} combinations decided; wrote {args.out}" + (f" and {args.summary}" if args.summary else ""),
          file=sys.stderr)
    return 0


def _prices_args(pr) -> None:
    from advisor.shell import pricescmd
    pricescmd.add_arguments(pr, _common)


def _gpus_args(g) -> None:
    from advisor.shell import gpuscmd
    gpuscmd.add_arguments(g, _common)


def _deploy_args(d) -> None:
    from advisor.shell import deploycmd
    deploycmd.add_arguments(d, _common)


def _completion_args(c) -> None:
    from advisor.shell import completion
    completion.add_arguments(c, build_parser)


def _common(parser, rules: bool, prices: bool) -> None:
    """The options every command that decides shares, defined once."""
    if rules:
        parser.add_argument("--rules", action="append", metavar="DIR",
                            help="add a rules directory (later files override shipped rules by id)")
    if prices:
        parser.add_argument("--prices", metavar="FILE", help="extra or replacement price quotes (YAML, see catalog/prices.yaml)")


def _api_prices_arg(parser) -> None:
    parser.add_argument("--api-prices", metavar="FILE", help="per-token API prices to compare with, as `prices import-api "
                        "--out FILE` writes them (beside catalog/api-prices.yaml)")


def _estimate_args(e) -> None:
    from advisor.shell import jsonflag, workloadflags
    e.add_argument("workload", metavar="WORKLOAD.yaml", nargs="?", help="the workload file (or give --model and other flags)")
    e.add_argument("--gpu", action="append", metavar="GPU", help="consider only this GPU: an id or alias, GPU:N for at most N "
                   "cards (H100:8), or a memory size (80GB, 80GB+: at least 80 GB) (repeatable)")
    workloadflags.add_arguments(e)
    jsonflag.add(e)
    _api_prices_arg(e)
    _common(e, rules=False, prices=True)
    e.set_defaults(func=cmd_estimate)


def _recommend_args(r) -> None:
    from advisor.shell import deploycmd, workloadflags
    r.add_argument("workload", metavar="WORKLOAD.yaml", nargs="?", help="the workload file (or give --model and other flags)")
    r.add_argument("--gpu", action="append", metavar="GPU", help="consider only this GPU: an id or alias, GPU:N for at most N "
                   "cards (H100:8), or a memory size (80GB, 80GB+: at least 80 GB) (repeatable)")
    workloadflags.add_arguments(r)
    r.add_argument("--fleet", metavar="FLEET.yaml", help="the GPUs the team owns or has reserved (fleet: [{gpu, count, ...}]): "
                   "owned cards cost their running cost; the plan says what to rent or buy on top")
    r.add_argument("--format", choices=("text", "md", "html", "json", "summary"),
                   help="text: the memo for the terminal (the default; on a terminal only its summary is shown and "
                   "the whole memo goes to NAME-memo.md); md, html: the memo; json: the decision record; summary: a few lines")
    r.add_argument("--full", action="store_true", help="on a terminal: the whole text memo, through a pager")
    from advisor.shell import jsonflag
    jsonflag.add(r, formats=())                 # --json: the decision record, as --format json
    r.add_argument("--out", metavar="FILE", help="write to FILE atomically instead of stdout")
    r.add_argument("--template", metavar="FILE", help="render the memo with this Jinja template (sandboxed)")
    deploycmd.add_recommend_flag(r)
    _api_prices_arg(r)
    _common(r, rules=True, prices=True)
    r.set_defaults(func=cmd_recommend)


def _facts_args(f) -> None:
    from advisor.shell import jsonflag
    jsonflag.add(f)
    f.set_defaults(func=cmd_facts)


def _rules_args(rl) -> None:
    from advisor.shell import rulescmd
    rulescmd.add_arguments(rl, _common)


def _ask_args(a) -> None:
    a.add_argument("--from", dest="from_file", metavar="WORKLOAD.yaml", help="start from a workload file; ask only what is missing")
    a.add_argument("--resume", metavar="FILE", help="continue a dialogue saved on Ctrl-C / Ctrl-D / quit")
    a.add_argument("--out-dir", metavar="DIR", help="where the memo, decision record, transcript and resume file go")
    _api_prices_arg(a)
    _common(a, rules=True, prices=True)
    a.set_defaults(func=cmd_ask)


def _replay_args(rp) -> None:
    from advisor.shell import jsonflag
    jsonflag.add(rp)
    rp.add_argument("transcripts", nargs="+", metavar="TRANSCRIPT.yaml")
    _common(rp, rules=True, prices=True)
    rp.set_defaults(func=cmd_replay)


def _sweep_args(sw) -> None:
    from advisor.shell import jsonflag
    jsonflag.add(sw)
    sw.add_argument("grid", metavar="GRID.yaml")
    sw.add_argument("--out", required=True, metavar="TABLE.csv")
    sw.add_argument("--summary", metavar="FILE.md|FILE.html", help="a summary with a chart of the recommended GPU")
    sw.add_argument("--jobs", type=int, metavar="N", help="worker processes (default: all cores)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    _common(sw, rules=True, prices=True)
    sw.set_defaults(func=cmd_sweep)


def _explain_args(x) -> None:
    from advisor.shell import jsonflag
    jsonflag.add(x)
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
    "gpus": ("the GPUs with their memory and cheapest offers, sorted and filtered (like `sky show-gpus`)", _gpus_args),
    "deploy": ("the plan's launch files: engine commands, SkyPilot and Kubernetes, the benchmark that checks it", _deploy_args),
    "completion": ("a shell completion script: gpu-advisor completion bash|zsh|tcsh", _completion_args),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or, when the command is known, only that command's (argparse builds every
    subcommand's parser up front, which costs a start more than the command itself)."""
    from advisor import __version__
    from advisor.shell.helpformat import Formatter as _Formatter
    p = argparse.ArgumentParser(prog="gpu-advisor", description="Which accelerator to rent or buy for an ML workload, how many, and why.",
                                formatter_class=_Formatter, epilog=EXIT_CODES)
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
        from advisor.shell import jsonflag
        jsonflag.resolve(args)                 # --json: the same as --format json, on every command
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
