"""Review 18 (the session's own runs and a helper's workloads, read as a senior engineer would), the findings fixed."""
import conftest
from advisor.shell import memo as memo_mod


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_an_engine_that_cannot_run_on_the_only_gpu_names_the_engines_that_can(catalog, kb):
    # TensorRT-LLM asked on MI300X alone: the memo said only that TensorRT-LLM runs on CUDA, its WHY section was
    # a bare heading and its risks an empty one; the way out (vLLM or SGLang, both on ROCm) was nowhere
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-70b", "engine": "trtllm", "concurrency": 32,
                                      "constraints": {"gpus": ["mi300x"]}})
    assert d.winner is None
    text = _flat(memo_mod.render(d.record, catalog, "text"))
    assert "TensorRT-LLM does not run on AMD Instinct MI300X 192GB: vLLM and SGLang do." in text
    assert "WHY No rule chose a GPU: every candidate was excluded" in text
    assert "RISKS AND PREREQUISITES None raised by the rules. ASSUMPTIONS" in text
    md = _flat(memo_mod.render(d.record, catalog, "md"))
    assert "## Why No rule chose a GPU" in md and "## Risks and prerequisites None raised by the rules." in md
