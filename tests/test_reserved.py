"""The reserved tier (issue 21, item 2): a training cluster beyond any listing's on-demand capacity is
booked as the cheapest sourced commitment whose term covers the job. A two-week job that a published
reservation (AWS EC2 Capacity Blocks) holds is priced and labelled `reserved` for the days it books,
not as a 12-month contract; a cluster larger than any reservation sold stays a contract; a job longer
than every reservation on a GPU without a contract rate is price unknown, not guessed."""
import pytest

from advisor.numbers.capacity import billed_days
from advisor.shell.cli import main
from conftest import decide

# 600B tokens of a 70B model in two weeks on H100: more instances than one listing rents on demand
# (16), fewer than the 256 Capacity Blocks sell one customer at once
import dataclasses


@pytest.fixture
def current(catalog):
    """The catalog as if AWS's Capacity Block rates of 2024-12 were still current: the shipped ones are
    past their stated validity (valid_until 2025-01-01) and kept aside, never priced (review 10, F8)."""
    cap = {**catalog.capacity, "reserved": catalog.capacity["expired"], "expired": {}}
    return dataclasses.replace(catalog, capacity=cap)


def without_market(catalog):
    """The catalog without the reservation sold for any length (SF Compute's market, issue 45 item 3)."""
    keep = {g: [t for t in ts if not t["provider"].startswith("SF Compute")] for g, ts in catalog.capacity["reserved"].items()}
    return dataclasses.replace(catalog, capacity={**catalog.capacity, "reserved": {g: ts for g, ts in keep.items() if ts}})


def test_a_rate_past_its_stated_validity_is_not_priced(catalog, kb):
    d = decide(without_market(catalog), kb, TWO_WEEKS_70B)
    p = d.record["recommendation"]["price"]
    assert p["kind"] == "contract" and p["usd_per_gpu_hour"] == 2.35 and p["reserved_tiers"] == []
    # on the shipped catalog the two weeks are booked at the market's current rate, never AWS's expired one
    p = decide(catalog, kb, TWO_WEEKS_70B).record["recommendation"]["price"]
    assert p["kind"] == "reserved" and p["provider"].startswith("SF Compute") and p["term_days"] == 14
    assert [t["provider"] for t in catalog.capacity["reserved"]["h100-sxm"]] == ["SF Compute (reserved at market rate)"]
    assert catalog.capacity["as_of"] == "2026-12-01"
    assert {t["valid_until"] for ts in catalog.capacity["expired"].values() for t in ts} == {"2025-01-01"}

TWO_WEEKS_70B = {"mode": "training", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 4096,
                 "micro_batch": 1, "training_tokens": 600e9, "constraints": {"deadline_hours": 336, "gpus": ["h100-sxm"]}}


def test_a_two_week_job_beyond_on_demand_capacity_books_a_two_week_capacity_block(current, kb):
    d = decide(current, kb, TWO_WEEKS_70B)
    r = d.record["recommendation"]
    p = r["price"]
    hours = d.estimate.candidate("h100-sxm").training_hours
    assert 13 * 24 < hours <= 14 * 24
    assert p["kind"] == "reserved" and p["provider"] == "AWS EC2 Capacity Blocks for ML" and p["instance"] == "p5.48xlarge"
    assert "Capacity Blocks for ML Pricing" in p["source"] and p["date"] == "2024-12"
    # beyond on demand: more instances than one listing rents, no more than the blocks sell
    assert p["on_demand_offer"]["instances_needed"] > p["capacity_instances"] == 16
    assert p["instances"] == r["count"] // 8 <= 256
    # the block is bought for the days that cover the job, at the published $39.33 per instance-hour
    assert p["term_days"] == 14 and p["usd_per_instance_hour"] == 39.33
    assert p["usd_per_gpu_hour"] == pytest.approx(4.916, abs=1e-3)
    assert r["usd_per_hour"] == pytest.approx(p["instances"] * 39.33)
    assert r["usd_per_job"] == pytest.approx(p["instances"] * 39.33 * 14 * 24)
    # the 12-month contract would have committed far more for the same job
    alt = p["contract_alternative"]
    assert alt["usd_per_gpu_hour"] == 2.35 and alt["term_months"] == 12
    assert alt["term_usd"] == pytest.approx(p["instances"] * 8 * 2.35 * 12 * 730)
    assert alt["term_usd"] > 10 * r["usd_per_job"]
    # the risk names the reservation to make, with its rate and who sells it
    warn = [x for x in d.candidate_warnings.get("h100-sxm", []) if x["rule"] == "capacity-needs-a-reservation"]
    assert warn and "priced as a 14-day reservation at $4.92/GPU-h (AWS EC2 Capacity Blocks for ML p5.48xlarge, 2024-12)" in warn[0]["text"]
    assert not [x for x in d.candidate_warnings.get("h100-sxm", []) if x["rule"] == "capacity-needs-a-contract"]


def test_the_memo_prices_the_two_weeks_from_a_current_rate(capsys, tmp_path):
    f = tmp_path / "70b.yaml"
    f.write_text("name: llama-70b-two-weeks\nmode: training\nmodel: llama-3.1-70b\nprecision: bf16\ncontext_tokens: 4096\n"
                 "micro_batch: 1\ntraining_tokens: 600e9\nconstraints: {deadline_hours: 336, gpus: [h100-sxm]}\n")
    assert main(["recommend", str(f)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    # (a contracted cluster before the reservation sold for any length, issue 45 item 3)
    assert "needs a reservation" in text and "$2.11/GPU-h" in text and "$4.92/GPU-h" not in text and "2024-12" not in text


def test_a_cluster_larger_than_any_reservation_sold_stays_a_contract(catalog, kb):
    d = decide(catalog, kb, {"mode": "training", "model": "llama-3.1-405b", "precision": "bf16", "context_tokens": 8192,
                             "training_tokens": 15.6e12, "constraints": {"deadline_hours": 120 * 24}})
    p = d.record["recommendation"]["price"]
    assert p["kind"] == "contract" and p["instances"] > 256
    assert p["reserved_tiers"] == []            # no published block holds thousands of instances


def test_without_a_contract_rate_a_reservation_prices_the_cluster_while_its_term_covers_the_job(current, kb):
    short = {**TWO_WEEKS_70B, "training_tokens": 300e9, "constraints": {"deadline_hours": 336, "gpus": ["a100-40gb-sxm"]}}
    d = decide(current, kb, short)
    p = d.record["recommendation"]["price"]
    assert p["kind"] == "reserved" and p["instance"] == "p4d.24xlarge" and p["usd_per_gpu_hour"] == pytest.approx(1.844, abs=1e-3)
    assert p["term_days"] == 14 and "contract_alternative" not in p
    # 6T tokens on the same GPUs: longer than the longest block (182 days), no contract rate: unknown
    long = {**short, "training_tokens": 6e12, "constraints": {"deadline_hours": 8000, "gpus": ["a100-40gb-sxm"]}}
    c = decide(current, kb, long).estimate.candidate("a100-40gb-sxm")
    assert c.usd_per_hour is None
    assert "longer than the longest reservation on sale (182 days" in c.price_unknown


@pytest.mark.parametrize("hours, days", [(1, 1), (30, 2), (14 * 24, 14), (14 * 24 + 1, 21), (182 * 24, 182), (182 * 24 + 1, None)])
def test_a_block_is_sold_by_the_day_up_to_two_weeks_then_by_the_week_up_to_182_days(hours, days):
    tier = {"term_days": {"min": 1, "max": 182, "daily_up_to": 14, "step_beyond": 7}}
    assert billed_days(tier, hours) == days


def test_a_reserved_listing_of_a_price_file_is_priced_as_listed_not_as_a_block():
    from advisor.numbers.capacity import reserve_for_job
    # a `kind: reserved` row of prices.yaml (or --prices) is an hourly listing: no term to fit
    listing = {"kind": "reserved", "provider": "Lambda", "instances": 2, "gpus_per_instance": 8, "idle_gpus": 0}
    assert reserve_for_job(listing, 500.0, 16) is None
