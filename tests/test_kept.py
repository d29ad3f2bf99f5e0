"""The one cache facility (advisor/base/kept.py): keys are values, never identities, bounded, cleared
in one place; a price kept for one workload is never handed to a workload that differs in a field the
price reads."""
import dataclasses

from advisor.base import kept
from advisor.inputs import workload
from advisor.numbers import cost
from advisor.numbers.estimate import estimate

A100 = "a100-80gb-sxm"


def _w(catalog, **over):
    data = {"mode": "fine-tuning", "model": "llama-3.1-8b", "training_tokens": 1e8, **over}
    return workload.parse(data, catalog, "w")


def test_two_workloads_that_differ_in_what_a_price_reads_get_their_own_prices(catalog):
    """Spot allowed or not, one provider or any, in one process: each gets its own hourly price, the
    same a fresh process would give it."""
    gpu = catalog.gpus[A100]
    asks = {"on-demand": _w(catalog), "spot": _w(catalog, constraints={"spot": True}),
            "GCP": _w(catalog, constraints={"providers": ["GCP"]})}
    first = {k: cost.price(gpu, catalog, 2, 1, 2, w) for k, w in asks.items()}
    assert first["spot"].price["kind"] == "spot" and first["on-demand"].price["kind"] == "on-demand"
    assert first["spot"].usd_per_hour < first["on-demand"].usd_per_hour
    assert first["GCP"].price["provider"] == "GCP"
    assert len({c.usd_per_hour for c in first.values()}) == 3
    kept.clear()
    again = {k: cost.price(gpu, catalog, 2, 1, 2, w) for k, w in asks.items()}
    assert {k: c.usd_per_hour for k, c in again.items()} == {k: c.usd_per_hour for k, c in first.items()}


def test_a_catalog_copy_with_other_prices_is_priced_from_its_own(catalog):
    """`dataclasses.replace` keeps the loaded catalog's digest; the key reads the prices themselves."""
    gpu = catalog.gpus[A100]
    w = _w(catalog)
    shipped = cost.price(gpu, catalog, 2, 1, 2, w).usd_per_hour
    dearer = dataclasses.replace(catalog, prices=[dataclasses.replace(p, usd_per_hour=p.usd_per_hour * 2)
                                                  for p in catalog.prices])
    assert cost.price(gpu, dearer, 2, 1, 2, w).usd_per_hour == 2 * shipped
    assert cost.price(gpu, catalog, 2, 1, 2, w).usd_per_hour == shipped


class _Reads:
    """A workload that records the name of every field read (and of its constraints')."""

    def __init__(self, w, seen, prefix=""):
        self._w, self._seen, self._prefix = w, seen, prefix

    def __getattr__(self, name):
        self._seen.add(self._prefix + name)
        value = getattr(self._w, name)
        return _Reads(value, self._seen, "constraints.") if name == "constraints" else value


def test_the_price_key_holds_every_workload_field_a_rental_reads(catalog):
    """cost._price_key is the key of a rented plan's Cost: recorded over serving and training, spot,
    providers, one card to past every listing's capacity, each field the pricing reads is in it."""
    in_key = {"constraints.spot", "constraints.providers", "constraints.regions", "training"}
    seen: set = set()
    kept.clear()            # every price computed here, not found kept by an earlier test
    shapes = [_w(catalog), _w(catalog, constraints={"spot": True}), _w(catalog, constraints={"providers": ["GCP"]}),
              workload.parse({"mode": "inference", "model": "llama-3.1-8b", "concurrency": 8}, catalog, "w")]
    for w in shapes:
        for gid in (A100, "h100-sxm", "l40s"):
            gpu = catalog.gpus[gid]
            for count, nodes, group in ((1, 1, 1), (8, 1, 8), (64, 8, 8), (4096, 512, 8)):
                cost._plan_cost(gpu, catalog, count, nodes, group, _Reads(w, seen), None)
    # read before the key is made: a fleet's card or a purchase is not priced from the kept rentals
    assert seen - {"constraints", "fleet", "constraints.deployment"} <= in_key, seen
    assert "constraints.spot" in seen and "training" in seen


def test_fingerprints_are_values_and_tables_are_bounded(catalog):
    one, same, other = _w(catalog), _w(catalog), _w(catalog, training_tokens=2e8)
    assert one is not same and kept.fingerprint(one) == kept.fingerprint(same)
    assert kept.fingerprint(other) != kept.fingerprint(one)
    t = kept.Kept("test table", 3)
    for i in range(5):
        assert t.get(("k", i), lambda: i * 10) == i * 10
    assert len(t) == 3 and t.get(("k", 0), lambda: "made again") == "made again"
    assert t in kept.tables()
    kept.clear()
    assert len(t) == 0


def test_an_estimate_after_clear_gives_the_same_plans(catalog):
    w = workload.load("examples/chat-assistant.yaml", catalog)
    before = [(p.gpu.id, p.count, p.usd_per_hour) for p in estimate(w, catalog).candidates]
    kept.clear()
    assert [(p.gpu.id, p.count, p.usd_per_hour) for p in estimate(w, catalog).candidates] == before
