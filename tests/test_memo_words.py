"""Memo words a reader understands (issue 42, item 7): units written as units, power for what is rented,
each price per million tokens saying what it counts, no internal names of the estimator, and sources a
reader can open (a public address or the catalog entry, never a path of the build)."""
import re

import pytest

from advisor.shell.cli import main
from advisor.shell.memowords import field_words, readable

from conftest import EXAMPLES

EVERY = sorted(p.stem for p in EXAMPLES.glob("*.yaml") if p.stem != "grid")


def memo(capsys, name, fmt="md"):
    assert main(["recommend", str(EXAMPLES / f"{name}.yaml"), "--format", fmt]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", EVERY)
def test_no_internal_name_build_path_or_lower_case_unit_in_any_memo(capsys, name):
    text = memo(capsys, name)
    for bad in ("MAMF", "AIC_OP_SUM", "shared/reference", "../shared", "/work/", "via the snapshot in prices/", "find_string"):
        assert bad not in text, bad
    assert not re.search(r"\bUsd\b|\busd per\b|\bkwh\b", text)


@pytest.mark.parametrize("name", EVERY)
def test_every_catalog_source_and_price_can_be_opened(capsys, name):
    md = memo(capsys, name)
    sources = md.split("Catalog sources of the recommended GPU and the model:")[1].split("\nPrices:")[0]
    for line in re.findall(r"^- (.+)$", sources, re.M):
        assert "http" in line or "catalog entry" in line or line.startswith(("none", "unverified")), line
    prices = md.split("\nPrices:")[1].split("## Audit")[0]
    for line in re.findall(r"^- (.+)$", prices, re.M):
        # a quote from a public catalog or page carries its address; an owned fleet's row is the user's own file
        assert "http" in line or "fleet" in line or "none known" in line, line


def test_units_are_written_as_units():
    assert field_words("usd_per_million_tokens") == "USD per million tokens"
    assert field_words("hosting_usd_per_kw_month") == "Hosting USD per kW month"
    assert field_words("usd_per_kwh") == "USD per kWh"


def test_the_estimators_names_are_worded_and_sources_are_addresses():
    assert readable("TP 2 x measured MAMF 794.5 TFLOPS bf16") == "TP 2 x measured matmul rate 794.5 TFLOPS bf16"
    assert readable("reads at 3.35 TB/s x 0.92 (separate kernels, AIC_OP_SUM)") == (
        "reads at 3.35 TB/s x 0.92 (weights and KV cache read by separate kernels, their times added)")
    assert readable("skypilot-org/skypilot-catalog catalogs/v7/runpod/vms.csv (via the snapshot in prices/)") == (
        "https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v7/runpod/vms.csv")


def test_memo_words_in_the_chat_assistant_memo(capsys):
    md = memo(capsys, "chat-assistant")
    # the figure's name with its unit: was "Usd per million tokens: $2.58/h / ..."
    assert "- Cost per million output tokens: $2.58/h / (3,687 tokens/s x 3600) x 10^6" in md
    assert "measured matmul rate 794.5 TFLOPS" in md
    # a rented 2-GPU instance: its own power, not the 10.2 kW of the 8-GPU system it is cut from
    assert "| Power | about 2.5 kW for each 2-GPU instance (one instance rented, 1,275 W per card" in md
    assert "10.2 kW per node" not in md
    # the two prices per million tokens say what they count: output tokens, and tokens in + out
    assert "| Per unit of work | $0.19 per million output tokens" in md or "$0.19 per million output tokens" in md
    assert ("An API: $0.10 per million tokens in + out (wandb, 2026-12-01; cheapest of 29, median $0.38); "
            "this plan $0.097 in + out at 637 million a day") in md
    # the source of the GPU's figures: a page a reader can open
    assert "- MLENG_ACC: https://github.com/stas00/ml-engineering/blob/744d01e18b79/compute/accelerator/README.md:" in md


def test_bought_cards_keep_the_power_per_node_and_units_in_the_workload(capsys):
    md = memo(capsys, "on-prem-70b-serving")
    assert "| Power | about 7.5 kW per node (8 x 750 W x 1.25 host factor" in md
    assert "| USD per kWh | 0.08 |" in md and "| Hosting USD per kW month | 185 |" in md


# --- explain's words -----------------------------------------------------------------------------------

def _explain(capsys, tmp_path, *extra):
    path = tmp_path / "d.json"
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json", "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["explain", str(path), *extra]) == 0
    return capsys.readouterr().out


def test_explain_why_not_answers_first_with_the_need_against_the_cards_capacity(capsys, tmp_path):
    text = _explain(capsys, tmp_path, "--why-not", "h200")
    lines = text.splitlines()
    # the answer is the first line, before the table of 38 candidates (it came after it)
    assert lines[0] == "Why not h200-sxm:"
    assert text.index("Why not h200-sxm:") < text.index("Candidates, best first") < text.index("  t4 ")
    # one card, its need against its own 141 GB: was "1 cards, 98.6 GB per card"
    assert "  figures: 1 card, needs 98.6 GB of its 141 GB, $2.45/h" in lines[:8]
    assert "it lost because it costs 31% more, the rules in its favour are worth 21%, less than that" in text


def test_explain_defines_score_premium_and_effective_cost_as_the_ranking_computes_them(capsys, tmp_path):
    text = _explain(capsys, tmp_path)
    head = " ".join(text.split("  h100-sxm")[0].split())
    assert "Score: the sum of the weights of the rules that fired for it (prefer +, avoid -)." in head
    assert "Premium: the score as a share of the cost (1% per point)" in head
    assert ("Effective cost: the cost per million output tokens divided by (1 + premium), or multiplied by "
            "(1 + |premium|) when the premium is negative; the lowest effective cost ranks first.") in head
    # the arithmetic shown is the ranking's: $0.194 x 1.10 = $0.2138 for score -10; $0.254 / 1.10 for +10 (the record keeps the effective cost)
    assert "h100-sxm         rank 1, score -10, premium -10%, effective cost $0.194 x 1.10 = $0.2138" in text
    assert "h200-sxm         rank 2, score 10, premium +10%, effective cost $0.254 / 1.10 = $0.2306" in text
