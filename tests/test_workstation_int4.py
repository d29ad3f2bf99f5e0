"""Workstation (issue 46 item 7): a single user or small team gets 4-bit weights (AWQ/GPTQ) weighed, with
the quality caveat cited (K10)."""
from conftest import decide

CODER = {"name": "workstation-coder", "mode": "inference", "model": "qwen2.5-32b", "concurrency": 1,
         "prompt_tokens": 4000, "output_tokens": 500, "constraints": {"deployment": "workstation"}}


def test_the_workstation_coder_gets_a_4_bit_option_with_its_quality_caveat(catalog, kb):
    # before: 1 x RTX PRO 6000 in BF16 and only an FP8 suggestion; 4-bit weights never weighed
    d = decide(catalog, kb, CODER)
    four = [s for s in d.record["suggestions"] if s["change"].startswith("precision: int4")]
    assert four, [s["change"] for s in d.record["suggestions"]]
    s = four[0]
    assert "AWQ or GPTQ" in s["change"] and "check it on your own tasks, K10" in s["change"]
    assert s["saving"] >= 0.25 and s["plan"]["count"] == 1


def test_a_large_service_is_not_offered_4_bit_unasked(catalog, kb):
    d = decide(catalog, kb, {**CODER, "concurrency": 64, "constraints": {}})
    assert not [s for s in d.record["suggestions"] if s["change"].startswith("precision: int4")]
