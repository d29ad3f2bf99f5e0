"""The layout is one frozen value (issue 43, item 1; issue 46, item 10): its dimensions declared once
(advisor.inputs.parallel), no function taking them as loose integers, and the serving engines' own
notations for one layout (vLLM's dp x tp with expert parallelism, SGLang's DP attention, TensorRT-LLM's
attention DP) read into the same Layout and the same plan."""
import ast
from pathlib import Path

import pytest

import advisor
from advisor.base.errors import InputError
from advisor.inputs import parallel, workload
from advisor.inputs.parallel import DIMS, Layout
from advisor.numbers import estimate as estimator

PACKAGE = Path(advisor.__file__).parent
# the declared dimensions' names, and the short local names the code has used for them
DIM_NAMES = {d.field for d in DIMS} | {"adp"}


def loose_dimension_parameters() -> list[str]:
    """Every function (and lambda) of the package with two or more layout dimensions as parameters."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                hit = [n for n in names if n in DIM_NAMES]
                if len(hit) >= 2:
                    out.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {getattr(node, 'name', 'lambda')}({', '.join(hit)})")
    return out


def test_no_function_takes_the_layouts_dimensions_as_separate_parameters():
    assert loose_dimension_parameters() == []


def test_the_scan_finds_a_function_that_does():
    # the scan itself, on a function written the old way
    tree = ast.parse("def serving_times(sh, tp, pp, ep=1): pass")
    names = [x.arg for x in tree.body[0].args.args]
    assert [n for n in names if n in DIM_NAMES] == ["tp", "pp", "ep"]


def test_every_declared_dimension_is_a_layout_field_with_its_words_and_engine_flags():
    assert parallel.declared_fields() == ("tp", "pp", "dp", "ep", "attention_dp", "cfg", "sp")
    for d in DIMS:
        assert d.notation and d.name and "{n}" in d.meaning
        assert set(d.engines) == {"vllm", "sglang", "trtllm"}
    assert parallel.define("tp", 8) == "tensor parallelism (TP): each layer split over 8 cards"
    assert parallel.POOL_FIELDS == ("tp", "pp", "ep", "attention_dp", "replicas")


def test_the_layout_checks_its_divisions_from_the_table():
    assert Layout(8, 1, 1, ep=8, attention_dp=8).problems() == []
    assert Layout(1, 1, 8, ep=8).problems() == [("ep", "ep 8 must divide tp 1: its ranks split the TP group's cards")]
    # training draws its EP ranks from TP x DP (Megatron-Core)
    assert Layout(1, 1, 8, ep=8).problems(training=True) == []


def test_notation_and_record_forms():
    dep = Layout(8, 1, 2, ep=8, attention_dp=8)
    assert parallel.notation(dep) == "TP 8 x PP 1 x DP 2, EP 8, attention DP 8"
    assert parallel.from_record(dep.as_dict()) == Layout(8, 1, 2, ep=8, attention_dp=8)
    assert dep.inputs() == {"tp": 8, "pp": 1, "dp": 2, "ep": 8, "attention_dp": 8}
    assert Layout(4, 1, 2).inputs() == {"tp": 4, "pp": 1, "dp": 2}


SPELLINGS = {
    "vllm": "{dp: 8, tp: 1, ep: 8}",                                  # --data-parallel-size 8 --enable-expert-parallel
    "vllm-switch": "{dp: 8, tp: 1, enable_expert_parallel: true}",
    "sglang": "{tp: 8, dp: 8, ep: 8, enable_dp_attention: true}",     # --tp 8 --dp 8 --ep-size 8 --enable-dp-attention
    "trtllm": "{tp: 8, ep: 8, attention_dp: 8}",                      # tp_size 8, moe_expert_parallel_size 8
    "trtllm-switch": "{tp: 8, ep: 8, enable_attention_dp: true}",     # enable_attention_dp
}


@pytest.fixture
def load(tmp_path, catalog):
    def run(layout, mode="inference"):
        f = tmp_path / "w.yaml"
        extra = "concurrency: 256\n" if mode == "inference" else "training_tokens: 1.0e+9\n"
        f.write_text(f"mode: {mode}\nmodel: gpt-oss-120b\n{extra}layout: {layout}\nconstraints: {{gpus: [h200]}}\n")
        return workload.load(f, catalog)
    return run


@pytest.mark.parametrize("engine", sorted(SPELLINGS))
def test_each_engines_spelling_of_dep8_is_the_same_layout(load, engine):
    w = load(SPELLINGS[engine])
    assert w.layout == Layout(8, 1, 1, ep=8, attention_dp=8)


def test_the_three_engines_spellings_give_the_same_plan_figures(load, catalog):
    plans = {e: estimator.estimate(load(SPELLINGS[e]), catalog).candidate("h200-sxm") for e in ("vllm", "sglang", "trtllm")}
    first = plans["trtllm"]
    assert first.fits and first.layout.as_dict() == {"tp": 8, "pp": 1, "dp": 1, "ep": 8, "attention_dp": 8}
    for e, p in plans.items():
        assert (p.count, p.tpot_ms, p.ttft_ms, p.usd_per_hour, p.per_card_gb) == \
               (first.count, first.tpot_ms, first.ttft_ms, first.usd_per_hour, first.per_card_gb), e


def test_the_reading_of_an_engines_notation_is_stated(load):
    w = load(SPELLINGS["vllm"])
    assert any("vLLM's --data-parallel-size 8 --tensor-parallel-size 1 --enable-expert-parallel" in n
               and n.endswith("TP 8 x PP 1 x DP 1, EP 8, attention DP 8") for n in w.notes)
    assert not any("layout" in n for n in load(SPELLINGS["trtllm"]).notes)


def test_vllm_dp_x_tp_groups_read_as_one_dep_group(load):
    # 2 DP ranks of TP 4 with the experts over all 8 (vLLM flattens the MoE group over dp x tp)
    assert load("{dp: 2, tp: 4, enable_expert_parallel: true}").layout == Layout(8, 1, 1, ep=8, attention_dp=2)


def test_training_keeps_megatrons_reading_of_ep_over_tp_x_dp(load):
    # Megatron-Core draws the EP ranks from TP x DP: 8 replicas, the experts over 8 of their cards
    assert load("{dp: 8, tp: 1, ep: 8}", mode="training").layout == Layout(1, 1, 8, ep=8)


@pytest.mark.parametrize("layout, message", [
    ("{tp: 8, dp: 3, enable_dp_attention: true}", "dp 3 must divide tp 8 with enable_dp_attention"),
    ("{tp: 4, dp: 2, ep: 4, enable_expert_parallel: true}", "ep 4 with enable_expert_parallel: vLLM puts the experts over all dp x tp = 8 ranks"),
    ("{tp: 8, enable_dp_attention: yes please}", "layout.enable_dp_attention: must be true or false"),
    ("{dp: 8, tp: 2, ep: 8}", "layout.ep: ep 8 must divide tp 2"),     # not dp x tp: no engine's notation
])
def test_a_notation_that_contradicts_itself_is_refused_with_the_field(load, layout, message):
    with pytest.raises(InputError) as exc:
        load(layout)
    assert message in str(exc.value)


def test_the_memo_words_of_a_layout_come_from_the_declared_dimensions():
    dep = Layout(16, 1, 1, ep=16, attention_dp=16)
    assert parallel.describe(dep, gpus_per_node=8) == (
        "attention run as 16 data-parallel ranks, each with its own sequences and KV cache (attention DP: attention data "
        "parallelism); the experts spread over 16 cards, an all-to-all per MoE layer (EP: expert parallelism, across nodes)")
    assert parallel.describe(dep, short=True) == "attention data-parallel over 16 ranks, experts over 16 cards"
    # a training MoE layout: its DP ranks hold the experts in TP x DP / EP copies (Megatron-Core)
    moe = Layout(1, 4, 24, ep=8)
    assert "24 data-parallel ranks sharing the work (DP: data parallelism; the dense layers on each, the experts in 3 copies of 8 cards)" \
        in parallel.describe(moe, gpus_per_node=8, training=True)
    assert parallel.describe(Layout(1, 1, 1), 8) == "the whole model on one card"


def test_no_other_module_words_a_dimension_again():
    """Each dimension's meaning is worded in advisor/inputs/parallel.py alone: the memo, summary, record
    and alternatives read it from there."""
    phrases = [d.meaning.split("{n}")[0].strip() or d.meaning.split("{n}")[1].strip() for d in DIMS]
    phrases += ["(tensor-parallel, inside", "(data-parallel)", "(expert-parallel, an all-to-all"]      # the old memo words
    found = [(p.name, ph) for p in PACKAGE.rglob("*.py") if p.name != "parallel.py"
             for ph in phrases if ph in p.read_text(encoding="utf-8")]
    assert found == []
