"""The command line: `gpu-advisor estimate|...`. Input errors print one line each and exit 2."""
from __future__ import annotations

import argparse
import json
import sys

from advisor.errors import InputError

EXIT_INPUT = 2


def _catalog(args):
    from advisor import catalog
    cat = catalog.default()
    if getattr(args, "prices", None):
        cat = cat.with_prices(args.prices)
    return cat


def _workload(args, cat):
    from advisor import workload
    w = workload.load(args.workload, cat)
    if getattr(args, "gpu", None):
        w = workload.with_gpus(w, [cat.gpu(g, "--gpu").id for g in args.gpu])
    return w


def cmd_estimate(args) -> int:
    from advisor import estimator, report
    cat = _catalog(args)
    est = estimator.estimate(_workload(args, cat), cat)
    if args.format == "json":
        print(json.dumps(est.as_dict(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.estimate_text(est))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from advisor import __version__
    p = argparse.ArgumentParser(prog="gpu-advisor", description="Which accelerator to rent or buy for an ML workload, how many, and why.")
    p.add_argument("--version", action="version", version=f"gpu-advisor {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    e = sub.add_parser("estimate", help="memory ledger, compute and a table of candidate GPUs for a workload file")
    e.add_argument("workload", metavar="WORKLOAD.yaml")
    e.add_argument("--gpu", action="append", metavar="ID", help="consider only this GPU (repeatable)")
    e.add_argument("--format", choices=("text", "json"), default="text")
    e.add_argument("--prices", metavar="FILE", help="extra or replacement price quotes (YAML, see catalog/prices.yaml)")
    e.set_defaults(func=cmd_estimate)
    return p




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
            print(f"gpu-advisor: error: {problem}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("gpu-advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
