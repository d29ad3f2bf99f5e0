"""Work the planner and the judgement hoisted out of their loops (built once per GPU shape, per
search or per knowledge base instead of once per layout or candidate) must give exactly what the
loop built before: each shortcut is compared here with the computation it replaces."""
from dataclasses import replace

from advisor.inputs import workload
from advisor.numbers import calibration, layouts, planner, replicas
from advisor.numbers.ledger import inference_ledger, training_ledger
from advisor.inputs.parallel import Layout

from conftest import EXAMPLES

SERVING = ["chat-assistant", "kimi-k3-serving", "llama-70b-fp16-serving", "gpt-oss-120b-one-user"]
TRAINING = ["mistral-7b-lora", "llama-13b-full-finetune", "gpt-oss-120b-training"]


def test_gpus_of_one_shape_share_the_layouts_they_would_each_enumerate(catalog):
    shapes = set()
    for name in SERVING + TRAINING:
        w = workload.load(EXAMPLES / f"{name}.yaml", catalog)
        for wv, led in planner.knob_variants(w, training_ledger(w) if w.training else inference_ledger(w)):
            for gpu in catalog.gpus.values():
                shapes.add((gpu.memory_gb, gpu.gpus_per_node))
                if w.training:
                    got = layouts.training_layouts(wv, led, gpu, 4096, layouts.ZERO_STAGES)
                    fresh = layouts._training_layouts(wv, led, gpu, 4096, layouts.ZERO_STAGES)
                else:
                    got = layouts.inference_layouts(wv, led, gpu, 4096)
                    fresh = layouts._inference_layouts(wv, led, gpu, 4096)
                assert got == fresh, (name, gpu.id)
    assert len(shapes) < len(catalog.gpus)       # some GPUs do share a shape: the shortcut is taken


def test_a_gpu_of_another_memory_or_node_size_gets_its_own_layouts(catalog):
    w = workload.load(EXAMPLES / "llama-70b-fp16-serving.yaml", catalog)
    led = inference_ledger(w)
    h100 = catalog.gpus["h100-sxm"]
    small = replace(h100, figures={**h100.figures, "memory_gb": replace(h100.fig("memory_gb"), value=40)})
    four = replace(h100, figures={**h100.figures, "gpus_per_node": replace(h100.fig("gpus_per_node"), value=4)})
    shape = lambda gpu: sorted((b.count, b.tp, b.pp) for b in layouts.inference_layouts(w, led, gpu, 4096))
    assert shape(h100) == [(4, 4, 1), (8, 8, 1)]        # 140 GB of weights + the KV cache on 80 GB cards
    assert shape(small) == [(8, 8, 1)]                  # on 40 GB cards only a whole node holds it
    assert shape(four) == [(4, 4, 1)]                   # a 4-GPU node has no TP 8
    assert shape(h100) == [(4, 4, 1), (8, 8, 1)]


def test_an_engine_runs_a_layout_by_which_of_its_dimensions_exceed_one(catalog):
    # the planner keeps Engine.runs per (PP, DP, EP, attention DP > 1) of a search
    from itertools import product
    engines = {e.id: e for g in catalog.gpus.values() for name in ("chat-assistant", "kimi-k3-serving")
               for e in [calibration.engine_for(catalog, g, workload.load(EXAMPLES / f"{name}.yaml", catalog).model)[0]] if e}
    assert len(engines) >= 2
    for e in engines.values():
        for tp, pp, dp, ep, adp in product((1, 2, 8), (1, 2, 4), (1, 3), (1, 8), (1, 8)):
            flags = (pp > 1, dp > 1, ep > 1, adp > 1)
            assert e.runs(Layout(tp, pp, dp, ep=ep, attention_dp=adp)) == e.runs(Layout(1, 1 + flags[0], 1 + flags[1], ep=1 + flags[2], attention_dp=1 + flags[3]))


def test_replica_counts_depend_on_a_bases_model_parallel_cards_its_cards_and_fewest_replicas(catalog):
    # the planner asks replicas.dp_options once per (TP x PP, cards, fewest replicas) of a variant's search
    w = workload.load(EXAMPLES / "mistral-7b-lora.yaml", catalog)
    led = training_ledger(w)
    gpu = catalog.gpus["h100-sxm"]
    sizes = [1, 2, 4, 8]
    for base in layouts.training_layouts(w, led, gpu, 4096, layouts.ZERO_STAGES):
        want = replicas.dp_options(w, gpu, base, sizes, 4096)
        for other in (replace(base, zero_stage=3 - (base.zero_stage or 0), per_card_bytes=1.0, ep=2),
                      replace(base, tp=base.pp, pp=base.tp)):
            assert replicas.dp_options(w, gpu, other, sizes, 4096) == want


def test_a_layout_the_search_only_orders_has_the_figures_of_the_plan_kept(catalog):
    # evaluate(explain=False) skips the texts, the memory figures and the ideal hours; the figures the
    # search orders plans by must be those of the full evaluation
    from advisor.numbers import objective, speed
    from advisor.numbers.calibration import engine_for
    checked = 0
    for name in SERVING + TRAINING:
        w = workload.load(EXAMPLES / f"{name}.yaml", catalog)
        led = training_ledger(w) if w.training else inference_ledger(w)
        unit = objective.unit_of_work(w)
        for gpu_id in ("h100-sxm", "a100-80gb-sxm", "l40s"):
            gpu = catalog.gpus[gpu_id]
            engine = None if w.training else engine_for(catalog, gpu, w.model, w.engine)[0]
            cp = speed.compute_precision(w, gpu, led.sized)
            rate = speed.achievable_tflops(catalog, gpu, cp)
            lays = (layouts.training_layouts(w, led, gpu, 4096, (w.zero_stage,)) if w.training
                    else layouts.inference_layouts(w, led, gpu, 4096))
            for lay in lays[:4]:
                lean = planner.evaluate(w, led, gpu, catalog, lay, cp, rate, {}, engine, explain=False)
                full = planner.evaluate(w, led, gpu, catalog, lay, cp, rate, None, engine)
                for figure in ("usd_per_hour", "usd_per_million_tokens", "usd_per_job", "tpot_ms", "ttft_ms",
                               "training_hours", "tokens_per_s", "misses", "count", "price"):
                    assert getattr(lean, figure) == getattr(full, figure), (name, gpu_id, figure)
                assert objective.plan_key(w, lean, unit, 2.0) == objective.plan_key(w, full, unit, 2.0)
                assert lean.memory is None and full.memory is not None
                checked += 1
    assert checked > 20


def test_the_disaggregation_settings_of_another_efficiency_table_are_its_own(catalog):
    eff = {**catalog.efficiency, "disaggregation": {"search_when": {"prompt_tokens_at_least": {"v": 2048}}}}
    other = replace(catalog, efficiency=eff)
    assert planner.disaggregation_settings(other) == (2048, 50, 0.8)
    assert planner.disaggregation_settings(catalog) == (8192, 25, 0.8)


def test_a_fact_cut_down_to_a_few_properties_is_the_whole_fact_normalised_then_cut(catalog):
    # engine.normalise_fact looks up a small `keep` (a later stratum's few properties) instead of
    # scanning the fact: the same values as keeping them from the whole normalised fact
    from advisor.judgement import engine, facts, knowledge
    from advisor.numbers import estimate as estimator
    run = engine.runner(knowledge.load())
    est = estimator.estimate(workload.load(EXAMPLES / "kimi-k3-serving.yaml", catalog), catalog)
    _, cands = facts.facts_for(est, catalog)
    few = [keep for keep in run.props.values() if len(keep) * 8 < len(cands[0])]
    assert few                  # the shipped knowledge base has such a stratum
    for keep in few + [frozenset(["c_tp", "c_gpu", "w_model", "c_no_such_property"])]:
        for c in cands:
            whole = engine.normalise_fact(c)
            assert engine.normalise_fact(c, keep) == {k: v for k, v in whole.items() if k in keep}


def test_the_enumeration_sizes_each_training_layout_as_training_per_card_does_alone(catalog):
    # _training_layouts hands each stage's _training_split to training_per_card instead of it splitting again
    checked = 0
    for name in TRAINING:
        w = workload.load(EXAMPLES / f"{name}.yaml", catalog)
        for wv, led in planner.knob_variants(w, training_ledger(w)):
            for gpu in (catalog.gpus["h100-sxm"], catalog.gpus["l40s"]):
                for b in layouts._training_layouts(wv, led, gpu, 4096, layouts.ZERO_STAGES):
                    assert b.per_card_bytes == layouts.training_per_card(led, b, b.zero_stage)
                    checked += 1
    assert checked > 50
