"""Review 15 (a helper ran 29 serving workloads as a senior engineer would), the findings fixed."""
import pytest

from advisor.inputs import workload
from advisor.judgement import decision
from advisor.numbers import estimate as estimator
from conftest import EXAMPLES


def test_owned_hardware_costs_its_tokens_over_the_busy_hours_only(catalog, kb):
    # F2: owned GPUs are paid for every hour and make tokens in the busy ones: the on-prem 70B (busy 80%)
    # read $0.80 per million output tokens where its own figures give $0.99; the workstation (busy 30%)
    # $0.94 where they give $3.15
    for name, busy, usd in (("on-prem-70b-serving", 0.8, 0.99), ("workstation-gemma-27b", 0.3, 3.15)):
        w = workload.load(EXAMPLES / f"{name}.yaml", catalog)
        d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
        c = d.estimate.candidate(d.winner)
        assert c.price["kind"] == "purchase" and c.tco["inputs"]["utilisation"]["value"] == busy
        assert c.usd_per_million_tokens == pytest.approx(c.usd_per_hour / (c.tokens_per_s * 3600 * busy) * 1e6)
        assert round(c.usd_per_million_tokens, 2) == usd
        assert f"x {busy:.0%} busy: owned, paid for every hour" in c.why["usd_per_million_tokens"]
