"""The scale-out network of a rental listing (catalog/fabric.yaml, issue 46): RDMA or not, GPU-direct or
not, its bandwidth and source. A listing no row matches has no stated fabric (`NOT_STATED`)."""
from __future__ import annotations

import re
from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.inputs.figures import is_number
from advisor.inputs.prices import provider_key

FABRIC_FILE = "fabric.yaml"

#: a listing whose provider states no network between its instances
NOT_STATED = {"kind": "not stated by the listing", "rdma": False, "gpu_direct": False, "gbps": None,
              "src": "no row of catalog/fabric.yaml matches this listing", "date": None}


def load_fabric(path: Path) -> list[dict]:
    """The rows of a fabric file, each {provider, instance (a compiled pattern's text), kind, rdma,
    gpu_direct, gbps, src, date}; one problem per bad field, with its line."""
    col = Collector(str(path))
    data = yamlio.load(path)
    rows = data.get("offers") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        col.add("expected a mapping with offers: [{provider, kind, rdma, gpu_direct, src, date}]", getattr(data, "line", 1))
        col.raise_if_any()
    out = []
    for i, e in enumerate(rows):
        at = getattr(e, "line", None) or yamlio.line_of(data, "offers", 1)
        if not isinstance(e, dict):
            col.add("each row is a mapping", at, f"offers[{i}]")
            continue
        bad = [k for k in ("provider", "kind", "src", "date") if not e.get(k)] + \
              [k for k in ("rdma", "gpu_direct") if not isinstance(e.get(k), bool)]
        if e.get("gbps") is not None and not (is_number(e["gbps"]) and e["gbps"] > 0):
            bad.append("gbps")
        pattern = e.get("instance")
        if pattern is not None:
            try:
                re.compile(str(pattern))
            except re.error:
                bad.append("instance")
        if e.get("rdma") is True and e.get("gpu_direct") is False:
            bad.append("gpu_direct")        # RDMA is GPU-direct
        for k in bad:
            col.add(f"'{k}' is missing or not valid", yamlio.line_of(e, k, at), f"offers[{i}].{k}")
        if not bad:
            out.append({"provider": str(e["provider"]), "instance": None if pattern is None else str(pattern),
                        "kind": str(e["kind"]), "rdma": e["rdma"], "gpu_direct": e["gpu_direct"],
                        "gbps": e.get("gbps"), "src": str(e["src"]), "date": str(e["date"])})
    col.raise_if_any()
    return out


def of(rows: list[dict], provider: str, instance: str | None) -> dict:
    """The fabric a listing states: the first row of its provider whose pattern matches the instance
    whole (re keeps the few patterns compiled)."""
    key = provider_key(provider or "")
    for r in rows:
        if provider_key(r["provider"]) == key and (r["instance"] is None or re.fullmatch(r["instance"], instance or "", re.I)):
            return dict(r)
    return dict(NOT_STATED)


def words(net: dict, instances: int, provider: str, instance: str | None) -> str:
    """A plan across instances priced on a listing with a GPU-direct network: which, and its source."""
    return (f"the plan's traffic crosses {instances} instances: priced only on listings with a GPU-direct network "
            f"between them; {provider} {instance or ''}: {net['kind']}" + (f", {net['gbps']:g} Gbps" if net["gbps"] else "")
            + f" ({net['src']})").replace(" :", ":")


def refusal(gpu_id: str, refused: list, rows: list[dict]) -> str:
    """Why a plan whose traffic crosses instances has no price, in a few words (the rule
    fabric-needed-not-offered says the rest; the record repeats this in every trace): the cheapest
    listing per GPU refused and its network, and how many listings were."""
    cheapest = min(refused, key=lambda p: (p.usd_per_hour / p.gpus_per_instance, -p.gpus_per_instance))
    net = of(rows, cheapest.provider, cheapest.instance)
    return f"{cheapest.provider}, {net['kind'].split(' (')[0]}; {len(refused)} listing{'s' if len(refused) > 1 else ''}"


def joined(usable: list, rows: list[dict], gpu_id: str) -> tuple[list, str | None]:
    """The listings with a GPU-direct network between their instances, and why none when none."""
    kept = [p for p in usable if of(rows, p.provider, p.instance)["gpu_direct"]]
    return kept, None if kept else refusal(gpu_id, usable, rows)


def stated(rows: list[dict], p, instances: int) -> tuple[dict, str]:
    """An offer's network as the record keeps it, and in words for a plan whose traffic crosses it."""
    net = of(rows, p.provider, p.instance)
    # the source in the words only (a record lists every candidate's offer: its size is kept small)
    return {k: net[k] for k in ("kind", "rdma", "gpu_direct", "gbps")}, words(net, instances, p.provider, p.instance)
