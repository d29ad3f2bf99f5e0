"""Invariants of the estimator over random workloads (hypothesis)."""
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from advisor.inputs import workload
from advisor.numbers import estimate as estimator, layouts

GB = 1e9
MODELS = ["gpt-oss-120b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "kimi-k3"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

inference = st.fixed_dictionaries({
    "mode": st.just("inference"),
    "model": st.sampled_from(MODELS),
    # at least one request of the default 1,000 + 1,000 tokens: a shorter context is refused (issue 42)
    "context_tokens": st.integers(2_000, 131_072),
    "concurrency": st.integers(1, 512),
    "latency": st.sampled_from(["interactive", "batch"]),
    "constraints": st.just({"gpus": ["h100-sxm", "h200-sxm", "l40s", "b200", "a100-80gb-sxm"]}),
})
training = st.fixed_dictionaries({
    "mode": st.sampled_from(["training", "fine-tuning"]),
    "model": st.sampled_from(MODELS[:6]),
    "method": st.sampled_from(["full", "lora", "qlora"]),
    "optimizer": st.sampled_from(["adamw", "adamw-8bit", "sgd"]),
    "zero_stage": st.integers(0, 3),
    "activation_checkpointing": st.booleans(),
    "context_tokens": st.integers(128, 32_768),
    "concurrency": st.integers(1, 16),
    "constraints": st.just({"gpus": ["h100-sxm", "h200-sxm", "l40s", "b200"]}),
})


def run(catalog, data):
    return estimator.estimate(workload.parse(data, catalog, "hypothesis"), catalog)


def check_invariants(est):
    led = est.ledger
    assert all(led.terms[k].value >= 0 for k in estimator.LEDGER_KEYS)
    for c in est.candidates:
        if not c.fits:
            continue
        pools = c.layout.pools
        # every card is in a replica: tp x pp x dp, or the two pools' replicas of a disaggregated plan
        assert c.count == (pools.prefill.count + pools.decode.count if pools else c.tp * c.pp * c.dp)
        # no tensor split leaves a node (K14); a DEP group (attention DP = EP = its cards) may span nodes
        assert c.layout.split_width <= c.gpu.gpus_per_node
        assert c.per_card_gb <= c.gpu.memory_gb + 1e-9
        # the chosen cards together hold the whole need: count x per-card need covers the ledger
        assert c.count * c.per_card_gb * GB >= led.bytes("total_gb") * (1 - 1e-9)


@SETTINGS
@given(data=inference)
def test_inference_invariants(catalog, data):
    check_invariants(run(catalog, data))


@SETTINGS
@given(data=training)
def test_training_invariants(catalog, data):
    check_invariants(run(catalog, data))


@SETTINGS
@given(data=inference, more=st.integers(1, 100_000), field=st.sampled_from(["context_tokens", "concurrency"]))
def test_memory_never_shrinks_when_inference_grows(catalog, data, more, field):
    bigger = dict(data, **{field: data[field] + more})
    limit = catalog.models[data["model"]].num("max_context") if isinstance(data["model"], str) else None
    # a context past x4 the model's (YaRN's RoPE scaling) is refused as input, not a workload to size
    assume(not limit or bigger["context_tokens"] <= workload.ROPE_SCALING_MAX * limit)
    base = run(catalog, data).ledger.bytes("total_gb")
    assert run(catalog, bigger).ledger.bytes("total_gb") >= base


@SETTINGS
@given(data=training, more=st.integers(1, 4096), field=st.sampled_from(["context_tokens", "concurrency"]))
def test_memory_never_shrinks_when_training_grows(catalog, data, more, field):
    base = run(catalog, data).ledger.bytes("total_gb")
    bigger = dict(data, **{field: data[field] + more})
    assert run(catalog, bigger).ledger.bytes("total_gb") >= base


@SETTINGS
@given(params=st.floats(0.1, 2000), extra=st.floats(0.01, 2000), mode=st.sampled_from(["inference", "training"]))
def test_memory_never_shrinks_when_parameters_grow(catalog, params, extra, mode):
    def total(p):
        return run(catalog, {"mode": mode, "model": {"params_b": p, "layers": 32, "hidden_size": 4096, "kv_heads": 8, "head_dim": 128},
                             "constraints": {"gpus": ["h100-sxm"]}}).ledger.bytes("total_gb")
    assert total(params + extra) >= total(params)


@SETTINGS
@given(data=inference)
def test_more_sequences_never_need_fewer_cards(catalog, data):
    base = run(catalog, data)
    bigger = run(catalog, dict(data, concurrency=data["concurrency"] * 2))
    for a, b in zip(base.candidates, bigger.candidates):
        if a.fits and b.fits:
            assert b.count >= a.count
