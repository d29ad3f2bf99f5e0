"""The site a plan on premises runs at: the data-centre figures (amortisation, power price, PUE, hosting,
busy share) from the workload's constraints or catalog/purchase.yaml's sourced defaults, a desk's when
the deployment is a workstation, and the purchase unit of a GPU. Split from advisor.numbers.cost.
"""
from __future__ import annotations

#: a workstation's site: wall power with no cooling plant, no colocation, no server chassis around the card
WORKSTATION_SITE = {"pue": 1.0, "hosting_usd_per_kw_month": 0.0, "server_overhead": 1.0}

#: workload constraint -> the purchase.yaml site figure it overrides
SITE_KEYS = {"amortisation_years": "amortisation_years", "usd_per_kwh": "usd_per_kwh", "pue": "pue",
             "hosting_usd_per_kw_month": "hosting_usd_per_kw_month", "busy_share": "utilisation"}


def purchase_unit(gpu, catalog) -> int | None:
    e = catalog.purchase.get("gpus", {}).get(gpu.id) if catalog.purchase else None
    return int(e.get("unit_gpus", 1)) if e else None


def site_figures(catalog, w) -> dict:
    """The data-centre figures: the workload's overrides, else purchase.yaml's sourced defaults."""
    site = (catalog.purchase or {}).get("site", {})
    out = {}
    for key, figure in SITE_KEYS.items():
        fig = site.get(figure, {})
        mine = getattr(w.constraints, key, None)
        out[figure] = {"v": mine if mine is not None else fig.get("v"), "range": None if mine is not None else fig.get("range"),
                    "source": "workload file" if mine is not None else f"{fig.get('src')} ({fig.get('date')})"}
    for key in ("server_overhead", "maintenance_share_per_year"):
        fig = site.get(key, {})
        out[key] = {"v": fig.get("v"), "range": fig.get("range"), "source": f"{fig.get('src')} ({fig.get('date')})"}
    if w.constraints.deployment == "workstation":
        # a desk pays the household tariff, not the industrial one a data centre negotiates
        home = site.get("workstation_usd_per_kwh", {})
        if w.constraints.usd_per_kwh is None and home.get("v") is not None:
            out["usd_per_kwh"] = {"v": home["v"], "range": home.get("range"), "source": f"{home.get('src')} ({home.get('date')})"}
        for key, v in WORKSTATION_SITE.items():
            if key == "pue" or getattr(w.constraints, key, None) is None:
                out[key] = {"v": v, "range": None, "source": "a workstation: wall power, no cooling plant, colocation or server chassis"}
    return out
