"""Serving engines (catalog/engines.yaml, numbers.calibration.engine_for) and the prefix cache
(speed.prefill_tokens): the engine each GPU gets, what its batch cap and KV share do to
`concurrency: max`, the layouts it runs, and the prefill a cached prefix saves, by hand."""
import shutil
from dataclasses import replace

import pytest

from advisor.base.errors import InputError
from advisor.inputs import catalog as catalog_mod
from advisor.inputs import workload
from advisor.numbers import estimate as estimator
from advisor.numbers import speed
from advisor.numbers.calibration import engine_for
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import inference_ledger
from conftest import refuse

MODEL = {"params_b": 8, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8, "head_dim": 128}


def _plan(catalog, gpus, **doc):
    w = workload.parse({"mode": "inference", "model": "llama-3.1-8b", "constraints": {"gpus": gpus}, **doc}, catalog)
    return estimator.estimate(w, catalog)


@pytest.mark.parametrize("gpu, model, engine", [
    ("h100-sxm", "llama-3.1-70b", "trtllm"),      # NVIDIA data-centre part
    ("a100-80gb-sxm", "llama-3.1-70b", "trtllm"),
    ("l40s", "llama-3.1-70b", "trtllm"),
    ("t4", "llama-3.1-8b", "vllm"),               # Turing: not a TensorRT-LLM generation any more
    ("rtx-4090", "llama-3.1-8b", "vllm"),         # consumer card
    ("rtx-pro-6000", "llama-3.1-70b", "vllm"),    # workstation card
    ("mi300x", "llama-3.1-70b", "vllm"),          # ROCm
    ("gaudi-3", "llama-3.1-70b", "vllm"),
    ("h200-sxm", "deepseek-v3", "sglang"),        # MLA model: SGLang's DP attention
    ("mi300x", "deepseek-v3", "sglang"),
    ("ascend-910c", "deepseek-v3", "vllm"),       # no SGLang rule for CANN: vLLM (vllm-ascend)
])
def test_the_default_engine_per_gpu_and_model(catalog, gpu, model, engine):
    got, cannot = engine_for(catalog, catalog.gpus[gpu], catalog.models[model])
    assert cannot is None and got.id == engine
    assert got.why.startswith("the default: ")


def test_an_engine_the_gpu_cannot_run_excludes_it_with_the_reason(catalog):
    est = _plan(catalog, ["mi300x", "h100-sxm"], engine="trtllm")
    amd, nv = est.candidate("mi300x"), est.candidate("h100-sxm")
    assert not amd.fits and amd.reason.startswith("TensorRT-LLM does not run on AMD Instinct MI300X")
    assert "rocm" in amd.reason and nv.fits and nv.engine == "trtllm"


def test_candidates_carry_their_engine_in_the_record(catalog):
    est = _plan(catalog, ["h100-sxm", "mi300x"])
    rows = {c["gpu"]: c for c in est.as_dict()["candidates"]}
    assert rows["h100-sxm"]["engine"] == "trtllm" and rows["mi300x"]["engine"] == "vllm"
    assert "TensorRT-LLM, the default" in est.candidate("h100-sxm").why["engine"]


def test_the_batch_cap_sets_concurrency_max_and_its_throughput(catalog):
    # Llama 3.1 8B bf16, 128 + 128 tokens: 256 tokens x 131,072 B = 33.6 MB of KV per sequence, room for
    # thousands on one H200, so each engine's cap binds: vLLM 1,024 (max_num_seqs on a card of >= 70 GB),
    # TensorRT-LLM and SGLang 2,048
    doc = dict(concurrency="max", prompt_tokens=128, output_tokens=128, context_tokens=256, precision="bf16")
    got = {e: _plan(catalog, ["h200-sxm"], engine=e, **doc).candidate("h200-sxm") for e in ("vllm", "trtllm", "sglang")}
    per_replica = {e: p.concurrency // p.dp for e, p in got.items()}
    assert per_replica == {"vllm": 1024, "trtllm": 2048, "sglang": 2048}
    # at 1,024 sequences an 8B decode step is already compute-bound (16 TFLOP a step against 3.5 ms of weight
    # reads): twice the batch gives 2% more tokens/s and half the speed per user
    assert got["trtllm"].dp == got["vllm"].dp == 1
    assert got["trtllm"].tokens_per_s / got["vllm"].tokens_per_s == pytest.approx(1.023, abs=0.005)
    assert got["trtllm"].tokens_per_s_per_user / got["vllm"].tokens_per_s_per_user == pytest.approx(0.51, abs=0.01)
    assert "engine batch limit 2048" in got["trtllm"].why["concurrency"]
    # on a 24 GB card vLLM keeps its 256 default (get_batch_defaults)
    small, _ = engine_for(catalog, catalog.gpus["rtx-4090"], catalog.models["llama-3.1-8b"])
    assert small.max_batch == 256


def test_kv_share_of_the_free_memory_for_tensorrt_llm_and_of_the_card_for_sglang_by_tp(catalog):
    # 16 GB of weights on a 141 GB H200, 2,000-token sequences (262 MB of KV each, bf16):
    # TensorRT-LLM: (141 - 16 - activations) x 0.9; SGLang at TP 1: 141 x 0.88 - 16 - activations
    doc = dict(concurrency="max", prompt_tokens=1000, output_tokens=1000, context_tokens=2000, precision="bf16")
    for eng, budget in (("trtllm", lambda fixed: (141e9 - fixed) * 0.9), ("sglang", lambda fixed: 141e9 * 0.88 - fixed)):
        est = _plan(catalog, ["h200-sxm"], engine=eng, **doc)
        c = est.candidate("h200-sxm")
        fixed = est.ledger.bytes("weights_gb") + est.ledger.bytes("activations_gb")
        assert c.tp == 1 and c.concurrency // c.dp == int(budget(fixed) // est.ledger.kv.bytes_per_sequence(2000))
    cal = speed.calibration(catalog)
    sg, _ = engine_for(catalog, catalog.gpus["h200-sxm"], catalog.models["deepseek-v3"])
    assert [cal.for_engine(sg).kv_share(t) for t in (1, 2, 4, 8, 16, 32)] == [0.88, 0.87, 0.85, 0.81, 0.79, 0.79]


def test_a_layout_the_engine_has_no_flag_for_is_not_offered(tmp_path):
    folder = tmp_path / "catalog"
    shutil.copytree(catalog_mod.CATALOG_DIR, folder)
    text = (folder / "engines.yaml").read_text()
    # a catalog whose vLLM had no pipeline parallelism
    (folder / "engines.yaml").write_text(text.replace("layouts: {v: [tp, pp, dp, ep, attention_dp], src: [VLLM_PARALLELISM]",
                                                      "layouts: {v: [tp, dp, ep, attention_dp], src: [VLLM_PARALLELISM]"))
    cat = catalog_mod.load(folder)
    w = workload.parse({"mode": "inference", "model": "llama-3.1-405b", "precision": "bf16", "engine": "vllm",
                        "constraints": {"gpus": ["a100-80gb-sxm"]}}, cat)
    p = estimator.estimate(w, cat).candidate("a100-80gb-sxm")
    assert not p.fits                        # 810 GB of weights need two 8 x 80 GB nodes: PP, which this vLLM lacks
    given = estimator.estimate(replace(w, layout=Layout(8, 2, 1)), cat).candidate("a100-80gb-sxm")
    assert not given.fits and given.reason.startswith("vLLM does not run the given layout (TP 8 x PP 2 x DP 1")
    shipped = estimator.estimate(workload.parse({**w.inputs(), "model": "llama-3.1-405b", "engine": "trtllm"}, cat), cat)
    assert shipped.candidate("a100-80gb-sxm").pp == 2    # TensorRT-LLM runs it with pipeline stages


def test_a_bad_engines_file_is_one_line_with_file_line_and_field(tmp_path):
    folder = tmp_path / "catalog"
    shutil.copytree(catalog_mod.CATALOG_DIR, folder)
    text = (folder / "engines.yaml").read_text()
    (folder / "engines.yaml").write_text(text.replace("kv_share: {v: 0.9, of: free", "kv_share: {v: 1.9, of: free"))
    with pytest.raises(InputError) as e:
        catalog_mod.load(folder)
    msg = str(e.value)
    assert "engines.yaml:" in msg and "engines.trtllm.kv_share" in msg and len(msg.splitlines()) == 1


def test_a_bad_engine_name_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: llama-3.1-8b\nengine: tensorrt\n")
    err = refuse(capsys, ["recommend", str(f)], f"{f}:3")
    assert "engine" in err and "vllm, sglang, trtllm" in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def cal(catalog):
    """Round factors (tests/test_speed.py's), so the prefill below can be done by hand."""
    return replace(speed.calibration(catalog), bw_share=0.6, compute_share=0.5, layer_us=31.25, seq_us=0.0, allreduce_us=10.0,
                   moe_half_tokens=0.0, moe_half_width=0.0, request_ms=0.0, link_share=1.0, _links={})


def test_a_cached_prefix_cuts_the_prefill_by_hand(catalog, cal):
    def ttft(hit):
        w = workload.parse({"mode": "inference", "model": MODEL, "precision": "bf16", "prompt_tokens": 1000,
                            "output_tokens": 1000, "concurrency": 1, "prefix_cache_hit": hit}, catalog)
        led = inference_ledger(w)
        g = catalog.gpus["h100-sxm"]
        rate = speed.achievable_tflops(catalog, g, "bf16")
        return speed.inference_speed(w, led, g, Layout(1, 1, 1, 0.0), rate, cal), led

    R = 794.5e12 * 0.5                                            # H100 bf16 MAMF x the test's share
    # 75% cached: 250 tokens computed, attending to all 1,000: 2 x 8B per token + 2 x 32 layers x (1000^2 - 750^2) x 4096
    flops = 250 * 2 * 8e9 + 2 * 32 * (1000 ** 2 - 750 ** 2) * 4096
    assert flops / R > 16e9 / (3.35e12 * 0.6)                     # still compute-bound (weights read in 7.96 ms)
    hit, led = ttft(0.75)
    assert hit.ttft_ms == pytest.approx((flops / R + 32 * 31.25e-6) * 1e3, rel=1e-3) == pytest.approx(11.36, abs=0.01)
    cold, _ = ttft(0)
    assert cold.ttft_ms == pytest.approx(41.94, abs=0.01)          # tests/test_speed.py's uncached figure
    assert "750 of the 1,000 prompt tokens read from the prefix cache" in hit.why["prefill_ms"]
    # the cached prefix's KV stays: the ledger holds the whole prompt per sequence either way
    assert led.bytes("kv_cache_gb") == inference_ledger(workload.parse(
        {"mode": "inference", "model": MODEL, "precision": "bf16", "prompt_tokens": 1000, "output_tokens": 1000}, catalog)).bytes("kv_cache_gb")
    # all of it cached: the last token is still computed (its logits give the first output token)
    assert speed.prefill_tokens(1000, 1.0) == (1.0, 999.0) and speed.prefill_tokens(1000, 0) == (1000.0, 0.0)


def _mtp(catalog, gpu, model, precision, conc, prompt, output, tokens=None, dep=1):
    doc = {"mode": "inference", "model": model, "precision": precision, "prompt_tokens": prompt, "output_tokens": output,
           "concurrency": conc}
    if tokens:
        doc["speculative"] = {"method": "mtp", "tokens": tokens}
    w = workload.parse(doc, catalog)
    led = inference_ledger(w)
    g = catalog.gpus[gpu]
    rate = speed.achievable_tflops(catalog, g, speed.compute_precision(w, g, led.sized))
    lay = Layout(8, 1, 1, 0.0, ep=dep, attention_dp=dep) if dep > 1 else Layout(8, 1, 1, 0.0)
    return speed.inference_speed(w, led, g, lay, rate, speed.calibration(catalog)), w


def test_mtp_gains_at_one_sequence_as_published_and_loses_at_saturation(catalog):
    # TensorRT-LLM's B200 blog: DeepSeek-R1 NVFP4 on 8 x B200 at batch 1, 1,024 + 2,048 tokens: 111 tokens/s
    # per user without MTP, 253 with 3 drafted tokens (x2.28); the model, with 2.59 tokens accepted a step
    # (SGLang's Ascend best practice), gives x2.23
    plain, _ = _mtp(catalog, "b200", "deepseek-r1", "nvfp4", 1, 1024, 2048)
    mtp, w = _mtp(catalog, "b200", "deepseek-r1", "nvfp4", 1, 1024, 2048, tokens=3)
    assert w.speculative == ("mtp", 3, 2.59, ("SGLANG_ASCEND_BP",))
    assert plain.tpot_ms / mtp.tpot_ms == pytest.approx(2.28, rel=0.05)
    assert mtp.speed_explained["speculative"]["value"] == pytest.approx(plain.tpot_ms / mtp.tpot_ms)
    assert w.inputs()["speculative"] == {"method": "mtp", "tokens": 3}
    # at saturation each step verifies 4 tokens of every sequence for 2.59 kept: compute-bound, it loses.
    # On 8 x H200 as DeepSeek-V3 is served there (DEP8: each attention rank keeps its own sequences' MLA
    # cache), 4,096 sequences run at 16,460 tokens/s without MTP and 13,150 with it (x0.80); at 256 it
    # still gains (x1.44). Under TP 8 the MLA cache is copied onto every card, so the step is bound by
    # KV reads that the 4 verified tokens share: there MTP gains (x1.05), which is why the layout is DEP.
    big, _ = _mtp(catalog, "h200-sxm", "deepseek-v3", "fp8", 4096, 1000, 1000, dep=8)
    big_mtp, _ = _mtp(catalog, "h200-sxm", "deepseek-v3", "fp8", 4096, 1000, 1000, tokens=3, dep=8)
    assert big.speed_explained["step_compute_ms"]["value"] > big.speed_explained["weights_and_kv_read_ms"]["value"]
    assert big_mtp.tokens_per_s / big.tokens_per_s == pytest.approx(0.80, abs=0.03)
    small, _ = _mtp(catalog, "h200-sxm", "deepseek-v3", "fp8", 256, 1000, 1000, dep=8)
    small_mtp, _ = _mtp(catalog, "h200-sxm", "deepseek-v3", "fp8", 256, 1000, 1000, tokens=3, dep=8)
    assert small_mtp.tokens_per_s / small.tokens_per_s == pytest.approx(1.44, abs=0.05)
    # the prefill is not speculative: the first token comes as fast
    assert mtp.prefill_ms == pytest.approx(plain.prefill_ms)


def test_mtp_module_weights_are_in_the_ledger(catalog):
    # DeepSeek-V3's MTP module (num_nextn_predict_layers 1): one MoE decoder layer (attention 187.1M, 256 + 1
    # shared experts of 3 x 7168 x 2048, router 1.84M, norms 14.3k) + eh_proj 2 x 7168^2 + 3 norms + its own
    # embedding and head 2 x 129,280 x 7168 = 13.46B; with the main model's 671.03B: 684.5B, the 685B
    # DeepSeek's README gives for the checkpoint
    m = catalog.models["deepseek-v3"]
    assert m.num("mtp_params_b") == pytest.approx(13.4634, abs=1e-4)
    assert m.num("params_b") + m.num("mtp_params_b") == pytest.approx(685, abs=0.6)
    doc = {"mode": "inference", "model": "deepseek-v3", "concurrency": 8}
    plain = inference_ledger(workload.parse(doc, catalog))
    mtp = inference_ledger(workload.parse(dict(doc, speculative={"method": "mtp", "tokens": 1}), catalog))
    # FP8 checkpoint: 1 byte per parameter
    assert mtp.bytes("weights_gb") - plain.bytes("weights_gb") == pytest.approx(13.4634e9, rel=1e-4)
    assert "MTP module 13.46B" in mtp.terms["weights_gb"].formula
    assert mtp.bytes("total_gb") > plain.bytes("total_gb")


def test_mtp_without_a_published_acceptance_is_refused_in_one_line(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: deepseek-v3\nspeculative: {method: mtp, tokens: 2}\n")
    err = refuse(capsys, ["recommend", str(f)], f"{f}:3")
    assert "speculative.tokens" in err and "no published MTP acceptance for 2 drafted token(s) (published: 1, 3)" in err
    f.write_text("mode: inference\nmodel: llama-3.1-70b\nspeculative: {method: mtp, tokens: 1}\n")
    err = refuse(capsys, ["recommend", str(f)], "no MTP measurement for this model")
    assert len(err.strip().splitlines()) == 1
