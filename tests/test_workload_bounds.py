"""Workloads a practitioner would see as contradictory are refused with one line naming the field (a
reviewer's cases): a prompt longer than the context, a context far past the model's, a tensor-parallel
width the attention heads cannot split into, more replicas than the stated global batch feeds; and the
planner never plans more replicas than the global batch feeds (the limit it ran into is stated)."""
import json

import yaml

from advisor.shell.cli import main
from conftest import refuse


def _file(tmp_path, doc):
    p = tmp_path / "w.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(p)


def test_a_prompt_longer_than_the_context_is_refused(tmp_path, capsys):
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 8192, "prompt_tokens": 9000})
    refuse(capsys, ["recommend", f], "prompt_tokens: 9,000 prompt tokens do not fit the 8,192-token context_tokens")
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 8192, "prompt_tokens": 8000,
                         "output_tokens": 1000})
    refuse(capsys, ["recommend", f], "output_tokens: prompt 8,000 + output 1,000 tokens exceed the 8,192-token context_tokens")


def test_a_context_past_the_models_is_noted_up_to_rope_scaling_and_refused_beyond(tmp_path, capsys):
    # Llama 3.1 8B: 131,072 tokens; x4 (YaRN) is the most accepted
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 1_000_000})
    refuse(capsys, ["recommend", f], "context_tokens: 1,000,000 tokens is beyond llama-3.1-8b's 131,072-token context")
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 262_144})
    assert main(["recommend", f]) == 0
    assert "needs RoPE scaling (e.g. YaRN)" in " ".join(capsys.readouterr().out.split())


def test_tensor_parallelism_must_split_the_attention_heads(tmp_path, capsys):
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "layout": {"tp": 3}})
    refuse(capsys, ["recommend", f], "layout.tp: tp 3 does not divide llama-3.1-8b's 32 attention heads")
    # 8 KV heads: TP 16 copies each KV head on two cards (allowed); 64 heads of Llama 70B over TP 16 split evenly
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-70b", "layout": {"tp": 16}})
    assert main(["estimate", f, "--format", "json"]) == 0
    capsys.readouterr()


def test_replicas_beyond_the_global_batch_are_refused_and_never_planned(tmp_path, capsys):
    doc = {"mode": "training", "model": "llama-3.1-8b", "context_tokens": 8192, "micro_batch": 2, "global_batch": 64,
           "training_tokens": 2e11, "layout": {"tp": 1, "pp": 1, "dp": 64}}
    refuse(capsys, ["recommend", _file(tmp_path, doc)],
           "layout.dp: 64 data-parallel replicas x micro_batch 2 need 128 sequences a step, more than global_batch 64")
    # without a layout, a deadline that would want hundreds of replicas gets at most 64 / 2 = 32 of them,
    # and the record says the batch is what bound it
    del doc["layout"]
    doc["constraints"] = {"deadline_hours": 24, "gpus": ["h100-sxm"]}
    assert main(["recommend", _file(tmp_path, doc), "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)
    c = next(c for c in r["estimate"]["candidates"] if c["gpu"] == "h100-sxm")
    assert c["layout"]["dp"] * doc["micro_batch"] <= doc["global_batch"]
    assert any(x["limit"] == "global_batch" and x["value"] == 64 for x in (c.get("limits") or []))


def test_with_a_budget_an_unpriced_plan_is_not_recommended_as_within_it(tmp_path, capsys):
    # 70B at $0.50/h: every priced plan is over it; a B300 with no known price used to win as "meeting" it
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-70b", "constraints": {"budget_usd_per_hour": 0.5}})
    assert main(["recommend", f, "--format", "json"]) == 3          # valid input, no plan meets it
    r = json.loads(capsys.readouterr().out)
    assert r["recommendation"] is None
    b300 = next(c for c in r["candidates"] if c["gpu"] == "b300")
    assert [e["rule"] for e in b300["excluded_by"]] == ["budget-unverifiable"]
    assert "has no known price, so the budget of $0.50/h cannot be checked" in b300["excluded_by"][0]["reason"]


def test_the_kv_cache_is_sized_by_the_requests_when_they_are_stated(tmp_path, capsys):
    # Llama 3.1 70B, 128 users of 2,000 + 500 tokens on an 8,192-token context: paged-KV engines hold each
    # request's own 2,500 tokens (80 layers x 8 KV heads x 128 x 2 x 2 B = 327,680 B a token), not 8,192
    doc = {"mode": "inference", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 8192,
           "prompt_tokens": 2000, "output_tokens": 500, "concurrency": 128}
    assert main(["estimate", _file(tmp_path, doc), "--format", "json"]) == 0
    led = json.loads(capsys.readouterr().out)["ledger"]
    assert led["kv_cache_gb"] == round(128 * 2500 * 327_680 / 1e9, 4)
    # without stated requests, each sequence is sized at the context
    del doc["prompt_tokens"], doc["output_tokens"]
    assert main(["estimate", _file(tmp_path, doc), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ledger"]["kv_cache_gb"] == round(128 * 8192 * 327_680 / 1e9, 4)


def test_a_replica_sized_by_the_requests_must_still_admit_one_full_context_request(tmp_path, capsys):
    # Llama 3.1 8B FP8 on one L40S for 160 requests of 1,000 + 200 tokens with a 131,072-token context: the KV
    # of the 160 fits (25.2 GB, 35.9 GB a card), but one request of the full context (131,072 x 131,072 B =
    # 17.2 GB of KV) does not fit beside the other 159
    doc = {"mode": "inference", "model": "llama-3.1-8b", "precision": "fp8", "context_tokens": 131_072, "prompt_tokens": 1000,
           "output_tokens": 200, "concurrency": 160, "layout": {"tp": 1}, "constraints": {"gpus": ["l40s"]}}
    assert main(["recommend", _file(tmp_path, doc), "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)
    est = next(c for c in r["estimate"]["candidates"] if c["gpu"] == "l40s")
    assert est["long_request_fits"] is False
    warn = next(w for w in next(c for c in r["candidates"] if c["gpu"] == "l40s")["warnings"] if w["rule"] == "long-request-beside-the-others")
    assert "sized for requests of 1,200 tokens" in warn["text"] and "131,072-token context" in warn["text"]
    # the same requests on an 8,192-token context: it fits
    doc["context_tokens"] = 8192
    assert main(["estimate", _file(tmp_path, doc), "--format", "json"]) == 0
    assert next(c for c in json.loads(capsys.readouterr().out)["candidates"] if c["gpu"] == "l40s")["long_request_fits"] is True


def test_a_reviewers_odd_inputs_are_refused_where_they_are_written(tmp_path, capsys):
    # QLoRA's base is 4-bit: a bf16 precision beside it contradicted the ledger (int4) the memo used
    f = _file(tmp_path, {"mode": "fine-tuning", "model": "llama-3.1-8b", "method": "qlora", "precision": "bf16"})
    refuse(capsys, ["recommend", f], "w.yaml:4: precision: QLoRA keeps the frozen base weights in 4 bits: give precision: int4")
    # a provider no price row answers to left every GPU unpriced (exit 0); now refused, the known ones named
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "constraints": {"providers": ["NoSuchCloud"]}})
    refuse(capsys, ["recommend", f], "constraints.providers: no price row names provider 'NoSuchCloud'; known: AWS,")
    # a top-level list is named as a list, not by the loader's class name
    p = tmp_path / "l.yaml"
    p.write_text("- mode: inference\n- model: x\n")
    refuse(capsys, ["recommend", str(p)], "l.yaml:1: a workload must be a mapping of fields, not a list")


def test_a_whole_number_in_exponent_form_is_read_as_the_number(tmp_path, capsys):
    # YAML 1.1 reads 32e3 as text: an integer field takes it as 32,000 (a float field already did)
    p = tmp_path / "e.yaml"
    p.write_text("mode: inference\nmodel: llama-3.1-8b\ncontext_tokens: 32e3\n")
    assert main(["estimate", str(p), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["context_tokens"] == 32000
    p.write_text("mode: inference\nmodel: llama-3.1-8b\nconcurrency: 1.5e0\n")
    refuse(capsys, ["estimate", str(p)], "concurrency: must be a whole number (got 1.5)")


def test_a_global_batch_of_part_micro_batches_is_refused(tmp_path, capsys):
    # a reviewer's case: 7 sequences a step in micro-batches of 2 printed "global batch 7 (as given)" and ran 6
    doc = {"mode": "training", "model": "llama-3.1-8b", "training_tokens": 1e9, "global_batch": 7, "micro_batch": 2}
    refuse(capsys, ["recommend", _file(tmp_path, doc)],
           "global_batch: 7 sequences per step is not a whole number of micro-batches of 2 (give a multiple of 2)")
    doc.update(global_batch=16, layout={"tp": 1, "pp": 1, "dp": 3})
    refuse(capsys, ["recommend", _file(tmp_path, doc)], "global_batch: 16 sequences per step is not a whole number of "
           "micro-batches of 2 on each of the layout's 3 data-parallel replicas (give a multiple of 6)")
    doc["global_batch"] = 18
    assert main(["estimate", _file(tmp_path, doc), "--format", "json"]) == 0
    capsys.readouterr()


def test_a_deadline_on_serving_and_a_fleet_of_more_nodes_than_cards_are_refused(tmp_path, capsys):
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "constraints": {"deadline_hours": 10}})
    refuse(capsys, ["recommend", f], "constraints.deadline_hours: a deadline applies to a job with a volume (training, fine-tuning, or an offline batch job")
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "fleet": [{"gpu": "h100-sxm", "count": 4, "nodes": 8}]})
    refuse(capsys, ["recommend", f], "fleet[0].nodes: 4 cards cannot fill 8 nodes")


def test_concurrency_beside_an_arrival_rate_is_said_not_to_size_the_plan(tmp_path, capsys):
    f = _file(tmp_path, {"mode": "inference", "model": "llama-3.1-8b", "concurrency": 4, "requests_per_s": 50,
                         "prompt_tokens": 1000, "output_tokens": 1000, "constraints": {"gpus": ["h100-sxm"]}})
    assert main(["recommend", f]) == 0
    assert "concurrency 4 does not size the plan" in " ".join(capsys.readouterr().out.split())
