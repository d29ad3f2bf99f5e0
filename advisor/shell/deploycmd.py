"""`gpu-advisor deploy WORKLOAD.yaml --out DIR`: the recommended plan (or `--candidate N`, another row
of its GPU's plan table; `--gpu` as `recommend` takes it) written as launch files (advisor/shell/deploy/),
and `recommend --deploy DIR`, the same beside the memo."""
from __future__ import annotations

import sys

EXIT_NO_PLAN = 3        # as `recommend` (cli.EXIT_NO_PLAN): valid input that no plan meets


def add_arguments(d, common) -> None:
    from advisor.shell import workloadflags
    d.add_argument("workload", metavar="WORKLOAD.yaml", nargs="?", help="the workload file (or give --model and other flags)")
    d.add_argument("--out", required=True, metavar="DIR", help="the folder to write (refused when it exists and is not "
                   "empty, unless --force)")
    d.add_argument("--force", action="store_true", help="write into a folder that is not empty: files an earlier "
                   "deploy wrote there are replaced, any other file is kept (and one in the way refuses the write)")
    d.add_argument("--gpu", action="append", metavar="GPU", help="consider only this GPU, as `recommend --gpu` "
                   "(an id or alias, GPU:N, a memory size) (repeatable)")
    d.add_argument("--candidate", type=int, metavar="N", help="row N of the recommended GPU's plan table (1: the "
                   "recommended layout; the memo's plan table lists them)")
    workloadflags.add_arguments(d)
    d.add_argument("--fleet", metavar="FLEET.yaml", help="the GPUs the team owns or has reserved, as `recommend --fleet`")
    d.add_argument("--api-prices", metavar="FILE", help="per-token API prices to compare with, as `recommend --api-prices`")
    common(d, rules=True, prices=True)
    d.set_defaults(func=cmd_deploy)


def add_recommend_flag(r) -> None:
    r.add_argument("--deploy", metavar="DIR", help="also write the plan's launch files into DIR (as `gpu-advisor deploy`; "
                   "with --force-deploy into a folder that is not empty)")
    r.add_argument("--force-deploy", action="store_true", help=argparse_suppress())


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


def cmd_deploy(args) -> int:
    from dataclasses import replace

    from advisor.inputs import workload
    from advisor.judgement import advise
    from advisor.shell import workloadflags
    s = advise.setup(args.rules, args.prices, api_prices=args.api_prices)
    w = workloadflags.load(args, s.catalog)             # as `recommend` reads it (cli._workload)
    if args.gpu:
        w = workloadflags.with_gpu_flags(w, args, s.catalog)
    if args.fleet:
        w = replace(w, fleet=workload.load_fleet(args.fleet, s.catalog))
    rec = advise.advise(w, s, why_none=True).record
    if rec["recommendation"] is None:
        print("gpu-advisor: no plan meets the workload, so there is nothing to launch: "
              + " ".join(rec["no_plan"]["text"].split()), file=sys.stderr)
        return EXIT_NO_PLAN
    _write(rec, s.catalog, w, args.out, args.force, args.candidate)
    return 0


def _write(rec, catalog, w, out, force, candidate=None) -> None:
    from advisor.shell import deploy
    plan, written = deploy.write(rec, catalog, w, out, force, candidate)
    print(f"wrote the launch files of {plan.count} x {plan.gpu_name} ({plan.notation}) to {out}: "
          + ", ".join(p.name for p in written), file=sys.stderr)


def after_recommend(args, rec, catalog, w) -> str | None:
    """`recommend --deploy DIR`: the folder written after the memo; the line the summary ends with."""
    if not getattr(args, "deploy", None) or rec.get("recommendation") is None:
        return None
    _write(rec, catalog, w, args.deploy, args.force_deploy)
    return f"Launch files: {args.deploy} (README.md there says which file to run where)."
