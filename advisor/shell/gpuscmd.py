"""`gpu-advisor gpus`: the catalog's GPUs with their memory and cheapest offers, sorted, as SkyPilot's
`sky show-gpus` lists accelerators. Named GPUs (`gpus H100 MI300X:8`) also list their offers,
cheapest first; any selector filters (`80GB+`, `48GB`, `GPU:N` for N-GPU instances), as do
--provider and --kind. Figures from the catalog (catalog/gpus.yaml) and the price files
(catalog/prices*.yaml and --prices): nothing here is estimated."""
from __future__ import annotations

import sys

from advisor.shell import jsonflag

#: offers listed per named GPU unless --all
OFFERS_SHOWN = 10
SORTS = ("price", "memory", "name")


def add_arguments(g, common) -> None:
    g.add_argument("selectors", nargs="*", metavar="GPU",
                   help="only these GPUs: an id or alias (H100), GPU:N for N-GPU instances (H100:8), a memory size "
                        "(80GB) or floor (80GB+); a name also lists its offers")
    g.add_argument("--provider", action="append", metavar="NAME", help="only offers of this provider (repeatable)")
    g.add_argument("--kind", choices=("on-demand", "spot", "reserved", "endpoint"), default="on-demand",
                   help="the kind of offer priced (default: on-demand)")
    g.add_argument("--sort", choices=SORTS, default="price",
                   help="price: cheapest per GPU-hour first, unpriced last (default); memory: largest first; name")
    g.add_argument("--all", action="store_true", help="every offer of a named GPU, not the cheapest "
                   f"{OFFERS_SHOWN}; and GPUs without an offer of the kind")
    jsonflag.add(g)
    common(g, rules=False, prices=True)
    g.set_defaults(func=cmd_gpus)


def _rows(cat, args) -> tuple[list[dict], dict[str, list]]:
    """One row per GPU (its cheapest offer of the kind among the filtered ones), and the offers by GPU."""
    from advisor.inputs.names import MEMORY, select_gpus
    from advisor.shell.pricescmd import filtered
    named: list[str] = []
    gpu_ids = list(cat.gpus)
    if args.selectors:
        gpu_ids = []
        for s in args.selectors:
            ids, _ = select_gpus(s, cat, "GPU")
            gpu_ids += [i for i in ids if i not in gpu_ids]
            if not MEMORY.match(s.split(":")[0].strip()):
                named += ids
    offers: dict[str, list] = {g: [] for g in gpu_ids}
    for p in filtered(cat, args.selectors, args.kind, args.provider):
        offers.setdefault(p.gpu, []).append(p)
    rows = []
    for gid in gpu_ids:
        g, best = cat.gpus[gid], (offers.get(gid) or [None])[0]
        if best is None and not (args.all or args.selectors):
            continue              # no offer of the kind: listed with --all or when asked for by name
        rows.append({"gpu": gid, "name": g.name, "memory_gb": g.memory_gb, "vendor": g.vendor,
                     "offers": len(offers.get(gid) or []),
                     "cheapest": None if best is None else _offer(best)})
    key = {"price": lambda r: (r["cheapest"] is None, (r["cheapest"] or {}).get("usd_per_gpu_hour", 0), r["gpu"]),
           "memory": lambda r: (-(r["memory_gb"] or 0), r["gpu"]), "name": lambda r: r["gpu"]}[args.sort]
    return sorted(rows, key=key), {g: offers.get(g) or [] for g in dict.fromkeys(named)}


def _offer(p) -> dict:
    return {"usd_per_gpu_hour": round(p.usd_per_hour / p.gpus_per_instance, 4), "usd_per_hour": p.usd_per_hour,
            "gpus_per_instance": p.gpus_per_instance, "provider": p.provider, "instance": p.instance, "kind": p.kind,
            "regions": list(p.regions), "date": p.date}


def cmd_gpus(args) -> int:
    from advisor.judgement import advise
    cat = advise.load_catalog(getattr(args, "prices", None))
    rows, named = _rows(cat, args)
    if jsonflag.wanted(args):
        jsonflag.dump({"kind": args.kind, "gpus": rows,
                       "offers": {g: [_offer(p) for p in ps] for g, ps in named.items()}})
        return 0
    from advisor.shell import tables
    t = tables.table(("GPU", "left"), ("memory", "right"), ("$/GPU-h", "right"), ("GPUs", "right"),
                     ("cheapest offer", "left"), ("instance", "cut"), ("offers", "right"))
    for r in rows:
        c = r["cheapest"] or {}
        t.add_row(r["gpu"], f"{r['memory_gb']:g} GB" if r["memory_gb"] is not None else "unknown",
                  f"{c['usd_per_gpu_hour']:.2f}" if c else "-", str(c.get("gpus_per_instance", "")),
                  c.get("provider", "none"), c.get("instance") or "", str(r["offers"]))
    out = [tables.render(t)]
    for gid, ps in named.items():
        shown = ps if args.all else ps[:OFFERS_SHOWN]
        o = tables.table(("$/GPU-h", "right"), ("GPUs", "right"), ("$/h", "right"), ("provider", "left"),
                         ("instance", "cut"), ("regions", "right"), ("quoted", "left"))
        for p in shown:
            o.add_row(f"{p.usd_per_hour / p.gpus_per_instance:.2f}", str(p.gpus_per_instance), f"{p.usd_per_hour:.2f}",
                      p.provider, p.instance or "", str(len(p.regions) or p.region_count or "-"), p.date)
        more = f" (the cheapest {len(shown)}; --all for every one)" if len(shown) < len(ps) else ""
        out.append(f"\n{cat.gpus[gid].name} ({gid}): {len(ps)} {args.kind} offer{'s' if len(ps) != 1 else ''}{more}\n")
        if shown:
            out.append(tables.render(o))
    sys.stdout.write("".join(out))
    print(f"{len(rows)} GPU{'s' if len(rows) != 1 else ''}, {args.kind} prices in USD; `gpus NAME` lists a GPU's offers, --json for scripts")
    return 0

