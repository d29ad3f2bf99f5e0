"""Hostile and broken input: every case answers with a clear message naming the place, exit code 2,
no traceback, and runs nothing it was smuggled."""
import json
import shutil
import string
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from advisor import catalog as catalog_mod
from advisor import decision, estimator, knowledge, workload, yamlio
from advisor.cli import main
from advisor.errors import InputError

from conftest import EXAMPLES, ROOT


def refuse(capsys, argv, expected):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert expected in err, err
    assert "Traceback" not in err and all(line.startswith("gpu-advisor: error: ") for line in err.strip().splitlines())
    return err


# --- workload files -------------------------------------------------------------------------------

def test_alias_bomb_is_refused(capsys, tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\nmode: inference\nmodel: gpt-oss-20b\n")
    refuse(capsys, ["estimate", str(f)], "alias bomb")


def test_python_tags_run_nothing(capsys, tmp_path):
    marker = tmp_path / "pwned"
    f = tmp_path / "w.yaml"
    f.write_text(f"mode: inference\nmodel: gpt-oss-20b\nname: !!python/object/apply:os.system ['touch {marker}']\n")
    refuse(capsys, ["recommend", str(f)], "w.yaml:3: tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed")
    assert not marker.exists()


@pytest.mark.parametrize("field, value, expected", [
    ("concurrency", "0", "concurrency: must be at least 1"),
    ("context_tokens", "0", "context_tokens: must be at least 1"),
    ("training_tokens", "-1", "training_tokens: must be at least 1"),
    ("zero_stage", "7", "zero_stage: must be at most 3"),
    ("activation_checkpointing", "maybe", "must be true or false"),
    ("precision", "fp3", "'fp3' is not one of"),
    ("constraints", "[1, 2]", "constraints: must be a mapping"),
    ("concurrency", ".nan", "must be a finite number"),
    ("concurrency", "2.5", "must be a whole number"),
])
def test_wrong_values(capsys, tmp_path, field, value, expected):
    f = tmp_path / "w.yaml"
    base = "mode: training\nmodel: llama-3.1-8b\n" if field in ("training_tokens", "zero_stage", "activation_checkpointing") \
        else "mode: inference\nmodel: gpt-oss-20b\n"
    f.write_text(base + f"{field}: {value}\n")
    refuse(capsys, ["estimate", str(f)], expected)


def test_model_mapping_checks(capsys, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: {params_b: 10, active_params_b: 20, layerz: 3}\n")
    refuse(capsys, ["estimate", str(f)], "model.layerz: unknown model field; did you mean 'layers'?")
    f.write_text("mode: inference\nmodel: {layers: 3}\n")
    refuse(capsys, ["estimate", str(f)], "model.params_b: a model given as a mapping needs params_b")
    f.write_text("mode: inference\nmodel: {params_b: 10, active_params_b: 20}\n")
    refuse(capsys, ["estimate", str(f)], "model.active_params_b: cannot exceed params_b")


def test_model_by_parameter_count_says_it_used_the_50_percent_rule(capsys, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: {params_b: 30}\n")
    assert main(["estimate", str(f), "--gpu", "h200"]) == 0
    assert "50%-of-weights rule (K05)" in capsys.readouterr().out


# --- rule files --------------------------------------------------------------------------------------

def test_rule_text_failing_when_it_fires(capsys, tmp_path):
    (tmp_path / "r.yaml").write_text(
        "- id: divide-by-nothing\n  title: t\n  source: [ours]\n  when: {candidate.count: {gt: 0}}\n"
        "  then: {note: {text: \"{{ candidate.count / 0 }}\"}}\n")
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path)],
           "r.yaml:1: then.note.text: template failed when the rule fired")


def test_rule_the_engine_could_not_run_safely_is_refused(capsys, tmp_path):
    many = ", ".join(f"g{i}" for i in range(70))
    (tmp_path / "r.yaml").write_text(f"- id: too-wide\n  title: t\n  source: [ours]\n  when: {{candidate.gpu: {{not_in: [{many}]}}}}\n"
                                     "  then: {note: {text: x}}\n")
    refuse(capsys, ["rules", "lint", str(tmp_path)], "too complex to run safely on the engine: 70 tests")


def test_too_many_derived_facts_are_refused(capsys, tmp_path):
    lines = ["rules:"]
    for i in range(200):
        lines += [f"  - id: derive-{i}", "    title: t", "    source: [ours]", "    when: {workload.mode: inference}",
                  f"    then: {{derive: {{fact_{i}: true}}}}"]
    (tmp_path / "r.yaml").write_text("\n".join(lines) + "\n")
    refuse(capsys, ["rules", "lint", str(tmp_path)], "200 derived facts: with the")


def test_rules_that_exclude_everything_name_the_rules(capsys, tmp_path):
    (tmp_path / "r.yaml").write_text(
        "- id: nothing-is-good-enough\n  title: t\n  source: [ours]\n  when: {candidate.fits: true}\n"
        "  then: {exclude: {reason: too expensive for us}}\n")
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path), "--format", "summary"]) == 0
    out = capsys.readouterr().out
    assert "No GPU can be recommended: every candidate was excluded." in out
    assert "  h200-sxm: excluded by nothing-is-good-enough" in out
    assert "  rubin: excluded by announced-not-shipping, nothing-is-good-enough" in out


def test_a_missing_rules_directory(capsys, tmp_path):
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path / "nope")],
           "no such rules directory")


# --- catalog and price files -------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("prices:\n  - {gpu: h100, gpus_per_instance: 1, usd_per_hour: 2.0, provider: X, date: 2026-11}\n", "q.yaml:2: source: required field is missing"),
    ("prices:\n  - {gpu: h100, gpus_per_instance: 1, usd_per_hour: 2.0, provider: X, source: s}\n", "q.yaml:2: date: required field is missing"),
    ("prices:\n  - {gpu: h100, gpus_per_instance: 1, usd_per_hour: -2.0, provider: X, date: 2026-11, source: s}\n", "usd_per_hour: must be a positive number"),
    ("prices:\n  - {gpu: h1000, gpus_per_instance: 1, usd_per_hour: 2.0, provider: X, date: 2026-11, source: s}\n", "gpu: unknown GPU 'h1000'; did you mean"),
    ("prices:\n  - {gpu: h100, gpus_per_instance: 0, usd_per_hour: 2.0, provider: X, date: 2026-11, source: s}\n", "gpus_per_instance: must be a whole number >= 1"),
    ("prices:\n  - {gpu: h100, gpus_per_instance: 1, usd_per_hour: 2.0, provider: X, date: 2026-11, source: s}\n"
     "  - {gpu: H100, gpus_per_instance: 1, usd_per_hour: 3.0, provider: x, date: 2026-11, source: s}\n", "duplicate price for h100-sxm x1 from x"),
    ("nonsense: true\n", "expected a mapping with a 'prices' list"),
])
def test_bad_price_files(capsys, tmp_path, text, expected):
    f = tmp_path / "q.yaml"
    f.write_text(text)
    refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml"), "--prices", str(f)], expected)


@pytest.fixture
def broken_catalog(tmp_path, monkeypatch):
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(d))
    catalog_mod._CACHE.clear()
    yield d
    catalog_mod._CACHE.clear()


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_catalog_negative_figure(capsys, broken_catalog):
    _edit(broken_catalog / "gpus.yaml", "memory_gb: {v: 80, src: [MLENG_ACC, HPCTECH_H100]", "memory_gb: {v: -80, src: [MLENG_ACC, HPCTECH_H100]")
    refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], "gpus.yaml:")
    refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], "memory_gb: must not be negative (got -80)")


def test_catalog_duplicate_id(capsys, broken_catalog):
    _edit(broken_catalog / "gpus.yaml", "- id: h100-pcie", "- id: h100-sxm")
    refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], "duplicate GPU id 'h100-sxm'")


def test_catalog_missing_field_and_source(capsys, broken_catalog):
    text = (broken_catalog / "gpus.yaml").read_text()
    i = text.index("- id: h200-sxm")
    j = text.index("bandwidth_tb_s:", i)
    k = text.index("\n", j)
    text = text[:j] + "# bandwidth removed" + text[k:]
    t = text.index("tdp_w: {v: 700, src: [MLPERF_V41_H200_SYS]", i)
    text = text[:t] + "tdp_w: {v: 700" + text[t + len("tdp_w: {v: 700, src: [MLPERF_V41_H200_SYS]"):]
    (broken_catalog / "gpus.yaml").write_text(text)
    err = refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], "h200-sxm.bandwidth_tb_s: required number is missing")
    assert "h200-sxm.tdp_w: figure has no source" in err


def test_catalog_folder_incomplete(capsys, broken_catalog):
    (broken_catalog / "models.yaml").unlink()
    refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], "the catalog folder has no models.yaml")


# --- the dialogue ---------------------------------------------------------------------------------------

GARBAGE = ["", " ", "???", "-1", "1e999", "nan", "0x10", "yes please", "🙂" * 3, "a" * 300, "\x1b[31m", "DROP TABLE;"]


def _advance_to(d, qid):
    """Answer with Enter (or a valid value where Enter is refused) until question `qid` is asked."""
    valid = {"mode": "inference", "params_b": "10"}
    for _ in range(60):
        if d.stage != "questions" or d.current().id == qid:
            return
        p = d.current().id
        d.submit(valid.get(p, ""))
    raise AssertionError(f"never reached {qid}")


def test_every_question_survives_garbage(catalog):
    from advisor import dialogue
    kb = knowledge.load()
    for q in dialogue.load_questions():
        d = dialogue.Dialogue(catalog, kb, dry_run=True)
        if q.field != "mode":
            d.answers["mode"] = "training" if "training" in str(q.when) else "inference"
        if q.when.get("model_in_catalog") is False:
            d.answers["model"] = "other"
        if "constraints.deployment" in q.when:
            d.answers["constraints.deployment"] = "on-prem"
        d.preset = set(d.answers)
        _advance_to(d, q.id)
        assert d.stage == "questions" and d.current().id == q.id, q.id
        for g in GARBAGE:
            messages = d.submit(g)
            assert all(isinstance(m, str) for m in messages)
            if d.stage != "questions" or d.current().id != q.id:   # an acceptable answer moved on: come back
                if d.stage == "questions":
                    d.submit("back")
                else:
                    break
                _advance_to(d, q.id)


@pytest.mark.parametrize("stop", range(0, 16))
def test_ctrl_c_at_every_step_keeps_the_answers(catalog, tmp_path, stop):
    from advisor import dialogue
    kb = knowledge.load()
    d = dialogue.Dialogue(catalog, kb, out_dir=tmp_path)
    answers = ["inference", "gpt-oss-120b"] + [""] * 20
    given = 0
    for a in answers[:stop]:
        if d.stage != "questions":
            break
        d.submit(a)
        given += 1
    path = d.save_resume()                     # what Ctrl-C does
    again = dialogue.Dialogue.resume(path, catalog, kb, out_dir=tmp_path)
    assert again.answers == d.answers and again.asked == d.asked and len(again.steps) == given


# --- properties over the workload schema -----------------------------------------------------------------

values = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**7), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(string.printable, max_size=12), st.lists(st.integers(), max_size=3))
fields = st.sampled_from(list(workload.FIELDS) + ["bogus", "gpus"])
models = st.one_of(st.sampled_from(["gpt-oss-120b", "llama-3.1-8b", "deepseek-v3", "kimi-k3", "nope"]),
                   st.fixed_dictionaries({"params_b": st.floats(0.001, 3000)}, optional={
                       "layers": st.integers(1, 200), "kv_heads": st.integers(1, 128), "head_dim": st.integers(1, 256),
                       "hidden_size": st.integers(64, 20000), "active_params_b": st.floats(0.001, 3000)}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.dictionaries(fields, values, max_size=6), mode=st.sampled_from(["inference", "training", "fine-tuning", "x"]),
       model=models)
def test_estimate_and_recommend_answer_or_refuse(catalog, data, mode, model):
    doc = {**data, "mode": mode, "model": model, "constraints": {"gpus": ["h100-sxm", "h200-sxm", "l40s", "mi300x"]}}
    try:
        w = workload.parse(doc, catalog, "hypothesis")
    except InputError as exc:
        assert exc.problems and all(p.message for p in exc.problems)
        return
    est = estimator.estimate(w, catalog)
    d = decision.decide(est, knowledge.load(), catalog)
    json.dumps(d.record, default=str)
    for c in est.candidates:
        if c.fits:
            assert c.tp * c.pp * c.dp == c.count and c.tp <= c.gpu.gpus_per_node
            led = est.ledger
            if w.training and c.activation_checkpointing != w.activation_checkpointing:   # the planner turned it on
                led = estimator.training_ledger(replace(w, activation_checkpointing=c.activation_checkpointing))
            assert c.count * c.per_card_gb * 1e9 >= led.bytes("total_gb") * (1 - 1e-9)
    r = d.record["recommendation"]
    if r:
        assert r["gpu"] in d.ranking


def test_yaml_cache_round_trips_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "w.yaml"
    f.write_text("a: 1\nb:\n  - x\n  - {c: 2}\n")
    first, second = yamlio.load(f), yamlio.load(f)         # the second read comes from the cache
    assert list((tmp_path / "cache" / "yaml").iterdir())
    assert first == second and second.line_of("b") == 2 and second["b"].line_of(1) == 4 and second["b"][1].line_of("c") == 4
    for p in (tmp_path / "cache" / "yaml").iterdir():
        p.write_text("{corrupt")
    assert yamlio.load(f) == first                            # a corrupt cache entry is ignored
