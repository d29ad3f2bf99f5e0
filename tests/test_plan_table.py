"""The planner's plan table (advisor/numbers/plantable.py): the layouts it weighed for a GPU as named
rows, the chosen one first and each other with why it lost; the record keeps the first ranks' tables
and `explain --why-not GPU` prints them."""
import json

import pytest

from advisor.inputs import workload
from advisor.judgement import record
from advisor.judgement.advise import advise, setup
from advisor.numbers.estimate import estimate
from advisor.numbers.plantable import KEEP_ROWS, PlanRow, Tried
from advisor.shell.cli import main

from conftest import EXAMPLES


@pytest.fixture(scope="module")
def llama70b(catalog):
    """Llama 3.1 70B for 128 users at 50 ms per output token (examples/llama-70b-128-users.yaml)."""
    return estimate(workload.load(EXAMPLES / "llama-70b-128-users.yaml", catalog), catalog)


def test_the_table_says_why_each_h100_layout_lost(llama70b):
    plan = llama70b.candidate("h100-sxm")
    table = plan.table.rows
    assert all(isinstance(r, PlanRow) for r in table) and 2 <= len(table) <= KEEP_ROWS
    chosen = table[0]
    # the chosen row is the plan: TP 8 on one node of 8, its own cost per million output tokens
    assert chosen.chosen and (chosen.layout.tp, chosen.count) == (plan.tp, plan.count) == (8, 8)
    assert chosen.unit_cost == pytest.approx(plan.usd_per_million_tokens) and chosen.met
    lost = {(r.layout.tp, r.layout.dp): r for r in table[1:]}
    assert all(r.lost for r in lost.values())
    # TP 4 on 4 cards is cheaper per token but misses the 50 ms target, and says by how much
    short = lost[(4, 1)]
    assert not short.met and short.tpot_ms > 50 and short.lost.startswith("misses: time per output token")
    assert short.unit_cost < chosen.unit_cost
    # TP 4 x DP 2 on the same 8 cards costs more per token
    same = lost[(4, 2)]
    assert same.met and same.count == 8 and same.unit_cost > chosen.unit_cost
    assert same.lost == f"${same.unit_cost:.3g} against the chosen's ${chosen.unit_cost:.3g} per million output tokens"
    # a third replica holds the target too, on 12 cards the smallest rental does not need
    assert lost[(4, 3)].lost == "rents 12 GPUs where 8 hold it"
    assert plan.layouts_considered >= len(table)


def test_search_rows_are_named(catalog):
    """The planner's search keeps named rows (plantable.Tried), read by name, not by position."""
    assert Tried._fields == ("key", "order", "plan", "layout", "workload", "ledger")


def test_a_training_table_names_the_recompute_it_did_not_pay_for(catalog):
    """13B full fine-tune, activation checkpointing left to the planner: on B200 the plan without it
    wins, and the same layout with it lost on cost (its ~30% recompute, C06)."""
    est = estimate(workload.load(EXAMPLES / "llama-13b-full-finetune.yaml", catalog), catalog)
    table = est.candidate("b200").table.rows
    assert table[0].activation_checkpointing is False
    recomputed = [r for r in table[1:] if r.activation_checkpointing]
    assert recomputed and all(r.unit_cost > table[0].unit_cost and "against the chosen's" in r.lost for r in recomputed)


def test_the_record_keeps_the_first_ranks_tables_and_explain_prints_them(catalog, tmp_path, capsys):
    s = setup(None, None)
    rec = advise(workload.load(EXAMPLES / "llama-70b-128-users.yaml", s.catalog), s).record
    ranked = {c["gpu"] for c in rec["candidates"] if c.get("rank") and c["rank"] <= record.TABLE_RANKS}
    assert set(rec["plan_tables"]) == ranked and rec["recommendation"]["gpu"] in ranked
    h100 = rec["plan_tables"]["h100-sxm"]
    assert h100["unit"] == "per million output tokens"
    assert h100["rows"][0]["layout"] == {"tp": 8, "pp": 1, "dp": 1, "ep": 1, "attention_dp": 1} and "lost" not in h100["rows"][0]
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(record.compact(rec), default=str))
    assert main(["explain", str(path), "--why-not", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert f"layouts weighed for h100-sxm ({len(h100['rows'])} of {h100['tried']} tried, the chosen first):" in out
    assert "    chosen: TP 8 x PP 1 x DP 1: 8 cards" in out
    assert "      lost: misses: time per output token" in out
    # a GPU outside the first ranks: no table in the record, none printed
    other = next(c["gpu"] for c in rec["candidates"] if c["gpu"] not in ranked)
    assert main(["explain", str(path), "--why-not", other]) == 0
    assert "layouts weighed" not in capsys.readouterr().out
