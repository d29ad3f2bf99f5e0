"""Owned first (issue 46 item 3): with `fleet:`, the team's own cards serve whole replicas at their running
cost and rented replicas (another GPU type allowed) carry the rest; the memo shows both parts and their cost."""
import json

from conftest import decide

A100_FLEET = {"name": "fleet-a100-600", "mode": "inference", "model": "llama-3.3-70b", "precision": "bf16",
              "context_tokens": 8192, "prompt_tokens": 2000, "output_tokens": 500, "concurrency": 600,
              "fleet": [{"gpu": "a100-80gb-sxm", "count": 32, "nodes": 4, "location": "own data centre",
                         "interconnect": "NVLink + InfiniBand HDR"}]}


def test_a_32_a100_fleet_serves_its_share_of_600_users(catalog, kb):
    # before: 48 x h100-sxm rented for all 600 users, "the team's 32 x a100-80gb-sxm stay out of this plan"
    d = decide(catalog, kb, A100_FLEET)
    r = d.estimate.candidate(d.winner)
    first = r.price["owned_first"]
    owned = first["owned"][0]
    assert (owned["gpu"], owned["cards"], owned["replicas"], owned["layout"]) == ("a100-80gb-sxm", 32, 4, "TP 8")
    assert owned["users"] == 150 and first["rented_users"] == 450 and first["users"] == 600
    assert r.gpu.id != "a100-80gb-sxm" and r.count == 40          # 40 H100 for the other 450, not 48 for all
    # the plan's cost is both parts: the owned running cost and the rented replicas
    assert abs(r.usd_per_hour - (first["owned_usd_per_hour"] + first["rented_usd_per_hour"])) < 0.01
    assert 1 < first["owned_usd_per_hour"] < 10
    # the plan meets the service level on both parts: the slower one's time per token is the plan's
    assert r.tpot_ms <= 40 and r.misses is None


def test_the_memo_shows_both_parts_and_the_cost_of_each(tmp_path, capsys):
    from advisor.shell.cli import main
    import yaml
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(A100_FLEET))
    assert main(["recommend", str(f), "--format", "text", "--full"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "stay out of this plan" not in flat
    assert ("The team's own cards serve first: 32 of its 32 a100-80gb-sxm (4 x TP 8) serve 150 of the 600 users at $5.72/h "
            "running cost; 40 x h100-sxm rented serve the other 450 at $51.60/h") in flat
    assert main(["recommend", str(f), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert round(rec["recommendation"]["usd_per_hour"], 2) == 57.32
    assert any(n["rule"] == "fleet-serves-first" for n in rec["warnings"])


def test_a_fleet_that_holds_everything_plans_on_its_own(catalog, kb):
    # 64 owned A100 for 150 users: the fleet GPU's own plan carries all of them; no rented part is added
    d = decide(catalog, kb, {**A100_FLEET, "concurrency": 150,
                             "fleet": [{**A100_FLEET["fleet"][0], "count": 64, "nodes": 8}]})
    r = d.estimate.candidate(d.winner)
    assert r.gpu.id == "a100-80gb-sxm"
    assert r.price["kind"] == "owned" and "owned_first" not in r.price
