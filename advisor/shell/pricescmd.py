"""`gpu-advisor prices list|import|import-api`: the known quotes, sorted and filtered; SkyPilot's
catalog (vms.csv) as a price file; LiteLLM's per-token price table as an api-prices file."""
from __future__ import annotations

import json
import sys

from advisor.base.errors import InputError, Problem
from advisor.shell import jsonflag


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
    return _list(args)


def _list(args) -> int:
    """`prices list`: the quotes sorted by GPU, then by price per GPU-hour; filtered by --gpu (any
    selector: H100, H100:8 for 8-GPU instances, 80GB+), --kind and --provider."""
    for flag in ("out", "skip", "date", "commit"):       # the import's: refused, not ignored (review 14)
        if getattr(args, flag, None):
            raise InputError(Problem("is for `prices import`; `prices list` prints to stdout", None, None, f"--{flag}"))
    from advisor.judgement import advise
    cat = advise.load_catalog(getattr(args, "prices", None))
    rows = filtered(cat, args.gpu, args.kind, args.provider)
    if jsonflag.wanted(args):
        keys = ("gpu", "gpus_per_instance", "kind", "usd_per_hour", "usd_per_hour_median", "provider", "instance",
                "regions", "region_count", "date", "commit", "source", "tier", "note")
        out = [{k: (list(getattr(p, k)) if k == "regions" else getattr(p, k)) for k in keys}
               | {"usd_per_gpu_hour": round(p.usd_per_hour / p.gpus_per_instance, 4), "file": p.file, "line": p.line}
               for p in rows]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    from advisor.shell import tables
    t = tables.table(("GPU", "left"), ("kind", "left"), ("$/GPU-h", "right"), ("GPUs", "right"), ("$/h", "right"),
                     ("provider", "left"), ("instance", "cut"), ("quoted", "left"))
    for p in rows:
        t.add_row(p.gpu, p.kind, f"{p.usd_per_hour / p.gpus_per_instance:.2f}", str(p.gpus_per_instance),
                  f"{p.usd_per_hour:.2f}", p.provider, p.instance or "", p.date + (f" @{p.commit[:8]}" if p.commit else ""))
    sys.stdout.write(tables.render(t))
    print(f"{len(rows)} quotes for {len({p.gpu for p in rows})} GPUs; GPUs without any: "
          + (", ".join(g for g in cat.gpus if not cat.prices_for(g)) or "none"))
    return 0


def filtered(cat, gpus, kind, providers) -> list:
    """The catalog's quotes for these GPU selectors (GPU:N keeps the N-GPU instances), of this kind and
    these providers (case-insensitive), by GPU then price per GPU-hour."""
    from advisor.inputs.names import select_gpus
    rows = list(cat.prices)
    if gpus:
        wanted: dict[str, set] = {}
        for g in gpus:
            ids, n = select_gpus(g, cat, "--gpu")
            for i in ids:
                wanted.setdefault(i, set()).add(n)
        rows = [p for p in rows if p.gpu in wanted and (None in wanted[p.gpu] or p.gpus_per_instance in wanted[p.gpu])]
    if kind:
        rows = [p for p in rows if p.kind == kind]
    if providers:
        want = {x.lower() for x in providers}
        rows = [p for p in rows if p.provider.lower() in want]
    return sorted(rows, key=lambda p: (p.gpu, p.usd_per_hour / p.gpus_per_instance, p.kind, p.provider, p.instance or ""))


def _import_api(args) -> int:
    import datetime
    from pathlib import Path
    from advisor.inputs import apiprices
    from advisor.base.files import write_atomic
    if len(args.paths) != 1:
        raise InputError(Problem("give one LiteLLM model_prices_and_context_window.json", None, None, "FILE"))
    date = args.date or datetime.date.today().isoformat()
    source = args.source or f"BerriAI/litellm model_prices_and_context_window.json ({Path(args.paths[0]).name})"
    from advisor.judgement import advise
    skipped: list[str] = []
    text, rows, unmapped = apiprices.import_api_prices(args.paths[0], advise.load_catalog(getattr(args, "prices", None)),
                                                       date, source, skipped)
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


def add_arguments(pr, common) -> None:
    pr.add_argument("action", choices=("list", "import", "import-api"))
    pr.add_argument("paths", nargs="*", metavar="PATH", help="import: skypilot-catalog catalogs/v7 folder, ~/.sky/catalogs/v7, a vms.csv")
    pr.add_argument("--gpu", action="append", metavar="GPU", help="list: only this GPU (an id, GPU:N for N-GPU instances, "
                    "80GB+) (repeatable)")
    pr.add_argument("--provider", action="append", metavar="NAME", help="list: only this provider (repeatable)")
    pr.add_argument("--kind", choices=("on-demand", "spot", "reserved", "endpoint"), help="list: only this kind")
    jsonflag.add(pr)
    pr.add_argument("--out", metavar="FILE", help="import: write the price file here (default: stdout); use it with --prices FILE "
                    "(import-api: with --api-prices FILE)")
    pr.add_argument("--skip", action="append", metavar="CLOUD", help="import: leave out this cloud (repeatable)")
    pr.add_argument("--date", help="import: the retrieval date to record (default: the source's, else today)")
    pr.add_argument("--commit", help="import: the catalog commit to record (default: read from the checkout)")
    pr.add_argument("--source", help="import-api: the source to record on every row (repository, version or commit)")
    common(pr, rules=False, prices=True)
    pr.set_defaults(func=cmd_prices)

