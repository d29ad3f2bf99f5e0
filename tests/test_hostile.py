"""Hostile and broken input: every case answers with a clear message naming the place, exit code 2,
no traceback, and runs nothing it was smuggled."""
import os
import json
import shutil
import string
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from advisor.inputs import catalog as catalog_mod
from advisor.judgement.advise import Setup
from advisor.judgement import decision, knowledge
from advisor.inputs import workload
from advisor.base import yamlio
from advisor.numbers import estimate as estimator
from advisor.shell.cli import main
from advisor.base.errors import InputError

from conftest import EXAMPLES, ROOT, refuse


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
        "  then: {note: {text: \"{{ candidate.gpu | gb }}\"}}\n")
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path)],
           "r.yaml:1: then.note.text: template failed when the rule fired")


def test_rule_the_engine_could_not_run_safely_is_refused(capsys, tmp_path):
    many = ", ".join(f"g{i}" for i in range(70))
    (tmp_path / "r.yaml").write_text(f"- id: too-wide\n  title: t\n  source: [ours]\n  when: {{candidate.interconnect: {{not_in: [{many}]}}}}\n"
                                     "  then: {note: {text: x}}\n")
    refuse(capsys, ["rules", "lint", str(tmp_path)], "too complex to run safely on the engine: 70 tests")


def test_too_many_derived_facts_are_refused(capsys, tmp_path):
    lines = ["rules:"]
    for i in range(200):
        lines += [f"  - id: derive-{i}", "    title: t", "    source: [ours]", "    when: {workload.mode: inference}",
                  f"    then: {{derive: {{fact_{i}: true}}}}"]
    (tmp_path / "r.yaml").write_text("\n".join(lines) + "\n")
    refuse(capsys, ["rules", "lint", str(tmp_path)], "201 derived facts: with the")


def test_rules_that_exclude_everything_name_the_rules(capsys, tmp_path):
    (tmp_path / "r.yaml").write_text(
        "- id: nothing-is-good-enough\n  title: t\n  source: [ours]\n  when: {candidate.fits: true}\n"
        "  then: {exclude: {reason: too expensive for us}}\n")
    # valid input, no plan meets it: exit 3 (issue 42), the identical exclusions on one line
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path), "--format", "summary"]) == 3
    out = capsys.readouterr().out
    assert "No GPU can be recommended: every candidate was excluded." in out
    assert all(len(line) <= 100 for line in out.splitlines())           # --format summary wraps at 100
    # the wrapped continuation lines joined back to the group's one line
    unwrapped = out.replace("\n      ", " ")
    grouped = next(line for line in unwrapped.splitlines() if "GPUs excluded by nothing-is-good-enough:" in line)
    assert "h200-sxm" in grouped.split(":", 1)[1].split(", ")
    assert "  rubin excluded by announced-not-shipping, nothing-is-good-enough" in out


def test_a_missing_rules_directory(capsys, tmp_path):
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path / "nope")],
           "nope: no such rules folder or rule file")


def test_a_missing_rule_file_is_named_a_file(capsys, tmp_path):
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path / "mine.yaml")],
           "mine.yaml: no such rule file")


def test_a_fifo_inside_a_rules_folder_is_refused_not_skipped(capsys, tmp_path):
    os.mkfifo(tmp_path / "waits.yaml")     # opening it would wait for a writer forever
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path)],
           "waits.yaml: is a named pipe (FIFO), not a rule file: refusing to read it")


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
    valid = {"mode": "inference", "params_b": "10", "liquid_cooling": "no"}   # no default: liquid cooling must be answered
    for _ in range(60):
        if d.stage != "questions" or d.current().id == qid:
            return
        p = d.current().id
        d.submit(valid.get(p, ""))
    raise AssertionError(f"never reached {qid}")


def test_every_question_survives_garbage(catalog):
    from advisor.shell import dialogue
    kb = knowledge.load()
    for q in dialogue.load_questions():
        d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
        if q.field != "mode":
            d.answers["mode"] = (q.when.get("mode") or ["inference"])[0]      # a mode the question is asked in
        if q.when.get("model_in_catalog") is False:
            d.answers["model"] = "other"
        for key in ("constraints.deployment", "task"):      # an answer the question is asked after
            if key in q.when:
                d.answers[key] = q.when[key][0]
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
    from advisor.shell import dialogue
    kb = knowledge.load()
    d = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    answers = ["inference", "gpt-oss-120b"] + [""] * 20
    given = 0
    for a in answers[:stop]:
        if d.stage != "questions":
            break
        d.submit(a)
        given += 1
    path = d.save_resume()                     # what Ctrl-C does
    again = dialogue.Dialogue.resume(path, Setup(catalog, kb), out_dir=tmp_path)
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
        assert r["gpu"] in d.order


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


# --- issue 13: a hostile-input sweep and a rule author --------------------------------------------------

def rule_file(tmp_path, body: str, name: str = "r.yaml"):
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / name).write_text(body)
    return d


def one_rule(rid="mine", title="t", when="{workload.mode: inference}", then="{note: {text: hi}}", extra=""):
    return f"- id: {rid}\n  title: {title}\n  source: [ours]\n  when: {when}\n  then: {then}\n{extra}"


@pytest.mark.parametrize("when, expected", [
    ("{candidate.gpu: {matches: '" + ".*" * 127 + "'}}", "matches: pattern of 254 characters: at most 200"),
    ("{candidate.gpu: {matches: '" + ".*" * 24 + "Z'}}", "matches: 24 repetitions (* or +): at most 16"),
    ("{candidate.gpu: {in: [" + ", ".join(f"g{i}" for i in range(508)) + "]}}", "in list of 508 values: at most 100"),
    ("{candidate.gpu: {matches: 'h[100'}}", "matches: '[' at position 2 is never closed"),
    ("{candidate.gpu: {matches: 'h**'}}", "one repetition per item"),
    ("{candidate.gpu: {matches: '*h'}}", "repeats nothing"),
    ("{candidate.gpu: {matches: 'h[z-a]'}}", "bad range 'z-a'"),
    ("{candidate.memory_gb: {gt: .nan}}", "nan is not a finite number"),
    ("{candidate.memory_gb: {between: [0, .inf]}}", "inf is not a finite number"),
    ("{candidate.memory_gb: {gt: 1e400}}", "inf is not a finite number"),
    ("{candidate.vendor: AMD}", "'AMD' is not a value candidate.vendor takes; did you mean amd?"),
    ("{candidate.gpu: h100-sxm5}", "'h100-sxm5' is not a value candidate.gpu takes; did you mean h100-sxm"),
    ("{candidate.gpu: {in: [h200-sxm, h20O]}}", "'h20O' is not a value candidate.gpu takes; did you mean h20"),
    ("{workload.mode: inferance}", "did you mean inference?"),
])
def test_lint_refuses_what_the_engine_cannot_run_or_never_fires(capsys, tmp_path, when, expected):
    d = rule_file(tmp_path, one_rule(when=json.dumps(when)[1:-1] if False else when))
    refuse(capsys, ["rules", "lint", str(d)], expected)


@pytest.mark.parametrize("then, expected", [
    ("{prefer: {weight: 1e68, gpu: h200}}", "prefer needs a weight above 0 and at most 1000"),
    ("{prefer: {weight: 1.0e+400, gpu: h200}}", "(got inf)"),
    ("{avoid: {weight: .nan, gpu: h200}}", "(got nan)"),
    ("{prefer: {weight: 5, gpu: h200sxm}}", "then.prefer.gpu: 'h200sxm' is not a gpu of the catalog; did you mean h200-sxm"),
    ("{avoid: {weight: 5, vendor: AMD}}", "then.avoid.vendor: 'AMD' is not a vendor of the catalog; did you mean amd?"),
    ("{note: {text: '{{ 9 ** (9 ** 9) }}'}}", "a rule text holds only text and fields"),
    ("{note: {text: '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}'}}",
     "a rule text holds only text and fields"),
])
def test_lint_refuses_weights_selectors_and_texts(capsys, tmp_path, then, expected):
    d = rule_file(tmp_path, one_rule(then=then))
    refuse(capsys, ["rules", "lint", str(d)], expected)


def test_rule_numbers_read_as_in_workload_files(capsys, tmp_path):
    """YAML 1.1 reads 1e11 as text; a rule file reads it as the number a workload file would."""
    d = rule_file(tmp_path, one_rule(when="{workload.training_tokens: {gt: 5e8}}", then="{note: {text: big job}}")
                  + one_rule(rid="bigger", when="{workload.training_tokens: {gt: 1e11}}", then="{note: {text: bigger}}"))
    assert main(["recommend", str(EXAMPLES / "gpt-oss-120b-training.yaml"), "--rules", str(d), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["inputs"]["training_tokens"] == 1e9
    fired = {t["rule"] for t in rec["trace"]}
    assert "mine" in fired and "bigger" not in fired
    kb = knowledge.load(knowledge.rule_dirs([str(d)]))
    assert kb.rule("bigger").when == knowledge.Leaf("workload.training_tokens", "gt", 1e11)


def test_a_rule_id_cannot_end_in_a_newline(capsys, tmp_path):
    d = rule_file(tmp_path, '- id: "sneaky\\n"\n  title: t\n  source: [ours]\n  when: {workload.mode: inference}\n  then: {note: hi}\n')
    refuse(capsys, ["rules", "lint", str(d)], "id must be kebab-case")


def test_reusing_a_shipped_id_needs_replaces(capsys, tmp_path):
    d = rule_file(tmp_path, one_rule(rid="must-fit-in-memory"))
    refuse(capsys, ["rules", "lint", str(d)], "'must-fit-in-memory' is the id of a shipped rule (rules/memory-fit.yaml:")
    refuse(capsys, ["rules", "lint", str(d)], "add `replaces: must-fit-in-memory`")
    d = rule_file(tmp_path, one_rule(rid="my-fit", extra="  replaces: must-fit-in-memori\n"))
    refuse(capsys, ["rules", "lint", str(d)], "replaces 'must-fit-in-memori', which is not a shipped rule; did you mean must-fit-in-memory")


def test_two_user_files_cannot_share_an_id(capsys, tmp_path):
    rule_file(tmp_path, one_rule(rid="same"), "a.yaml")
    d = rule_file(tmp_path, one_rule(rid="same"), "b.yaml")
    refuse(capsys, ["rules", "lint", str(d)], "b.yaml:1: id: duplicate rule id 'same' (first at ")


def test_replacing_a_shipped_rule_under_another_id_is_named_everywhere(capsys, tmp_path):
    d = rule_file(tmp_path, "- id: rubin-early-access\n  replaces: announced-not-shipping\n  title: We have Rubin early access\n"
                            "  source: [our contract]\n  when: {candidate.status: announced}\n  then: {note: {text: early access}}\n")
    assert main(["rules", "list", str(d)]) == 0
    listed = capsys.readouterr().out
    assert "rubin-early-access" in listed and "(replaces shipped announced-not-shipping, rules/generations.yaml:" in listed
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(d), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert not any(t["rule"] == "announced-not-shipping" for t in rec["trace"])
    t = next(t for t in rec["trace"] if t["rule"] == "rubin-early-access")
    assert t["replaces"] == "announced-not-shipping" and t["overrides"].startswith("rules/generations.yaml:")
    assert rec["versions"]["rule_dirs"][0]["path"] == str(d.resolve()) and len(rec["versions"]["rule_dirs"][0]["sha256"]) == 64
    (tmp_path / "d.json").write_text(json.dumps(rec))
    assert main(["explain", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert "rubin-early-access (" in out and "replaces the shipped rule announced-not-shipping (rules/generations.yaml:" in out
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(d), "--format", "md"]) == 0
    assert "replacing shipped announced-not-shipping of rules/generations.yaml:" in capsys.readouterr().out


def test_lint_sees_the_shipped_knowledge_base(capsys, tmp_path):
    """A user's folder is linted with the rules it joins: it may read a shipped derived fact."""
    d = rule_file(tmp_path, one_rule(when="{derived.short_text_serving: true}", then="{note: {text: short}}"))
    assert main(["rules", "lint", str(d)]) == 0
    assert "1 rules in 1 files, checked with the shipped knowledge base" in capsys.readouterr().out


def test_yml_files_and_a_users_questions_yaml_are_read(capsys, tmp_path):
    rule_file(tmp_path, one_rule(rid="from-yml"), "extra.yml")
    d = rule_file(tmp_path, "questions:\n  - id: q\n", "questions.yaml")
    refuse(capsys, ["rules", "lint", str(d)], "questions.yaml:1: a rule file holds a list of rules")
    (d / "questions.yaml").unlink()
    assert main(["rules", "list", str(d)]) == 0
    assert "from-yml" in capsys.readouterr().out


def test_rules_doc_of_a_folder_never_touches_the_shipped_reference(capsys, tmp_path):
    from advisor.shell import rulestools
    before = rulestools.DOC_PATH.read_bytes()
    d = rule_file(tmp_path, one_rule(rid="documented"))
    assert main(["rules", "doc", str(d)]) == 0
    out = capsys.readouterr().out
    assert "### `documented`: t" in out and "### `must-fit-in-memory`" not in out
    assert main(["rules", "doc", str(d), "--out", str(tmp_path / "mine.md")]) == 0
    assert "### `documented`" in (tmp_path / "mine.md").read_text()
    assert rulestools.DOC_PATH.read_bytes() == before


# --- tracebacks turned into one line ---------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("mode: inference\nmodel:\n", "w.yaml:2: model: required field is empty"),
    ("mode:\nmodel: gpt-oss-20b\n", "w.yaml:1: mode: required field is empty"),
    ("mode: inference\nmodel: gpt-oss-20b\nconcurrency: " + "9" * 400 + "\n", "w.yaml:3: a number of 400 digits"),
    ("mode: inference\nmodel: gpt-oss-20b\nconcurrency: " + "9" * 5000 + "\n", "w.yaml:3: a number of 5000 digits"),
    ("mode: inference\nmodel: gpt-oss-20b\nconcurrency: 99999999999999999999\n", "concurrency: must be at most 1,000,000"),
    ("a: " + "[" * 100 + "]" * 100 + "\n", "nested more than 64 levels deep"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "w.yaml:1: "),
    ("mode: inference\nmodel: {params_b: 10, layers: 10, sliding_window_layers: 20}\n",
     "model.sliding_window_layers: cannot exceed layers (20 > 10)"),
    ("mode: inference\nmodel: {params_b: 10, expert_params_b: 20}\n", "model.expert_params_b: cannot exceed params_b (20 > 10)"),
    ("mode: inference\nmodel: {params_b: 100, expert_params_b: 90, active_params_b: 5}\n",
     "model.active_params_b: is below the parameters outside the experts"),
    ("mode: inference\nmodel: {params_b: 10, experts: 8, experts_per_token: 9}\n", "model.experts_per_token: cannot exceed experts"),
    ("mode: inference\nmodel: gpt-oss-20b\nname: \"chat\\e[31m<script>\"\n", "name: must be plain text: no control characters"),
    ("mode: inference\nmodel: gpt-oss-20b\nname: \"chat<script>alert(1)</script>\"\n", "name: must be plain text: no markup (< or >)"),
    ("mode: inference\nmodel: {params_b: 7, name: \"m\\u202eevil\"}\n", "model.name: must be plain text: no control characters"),
])
def test_workload_files_that_used_to_crash_or_lie(capsys, tmp_path, text, expected):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    refuse(capsys, ["recommend", str(f)], expected)


def test_a_device_as_input(capsys):
    refuse(capsys, ["estimate", "/dev/zero"], "/dev/zero: is a device, not a YAML file")
    refuse(capsys, ["explain", "/dev/zero"], "/dev/zero: is a device, not a decision record")


@pytest.mark.parametrize("edit, expected", [
    (("gpus.yaml", "memory_gb: {v: 80, src: [MLENG_ACC, HPCTECH_H100]", "memory_gb: {v: 0, src: [MLENG_ACC, HPCTECH_H100]"),
     "h100-sxm.memory_gb: must be above zero (got 0)"),
    (("gpus.yaml", "memory_gb: {v: 80, src: [MLENG_ACC, HPCTECH_H100]", "memory_gb: {v: eighty, src: [MLENG_ACC, HPCTECH_H100]"),
     "h100-sxm.memory_gb: required number is missing or unknown"),
    (("gpus.yaml", "gpus_per_node: {v: 8", "gpus_per_node: {v: 0.5"), "gpus_per_node: must be a whole number >= 1 (got 0.5)"),
    (("gpus.yaml", "tdp_w: {v: 700", "tdp_w: {v: .nan"), "tdp_w: must be a finite number"),
    (("sources.yaml", "sources:\n", "sources:\n  - oops\nold_sources:\n"), "sources.yaml:5: sources: 'sources' must be a mapping"),
    (("efficiency.yaml", "hbm_share: {v: ", "hbm_share: {v: 0, was: "), "hbm_share: must be a figure {v: SHARE"),
    (("gpus.yaml", "gpus:\n", "gpus: 5\nold:\n"), "gpus.yaml: must be a list of GPU entries"),
    (("models.yaml", "aliases: [openai/gpt-oss-120b,", "aliases: -1\n    x: [openai/gpt-oss-120b,"), "gpt-oss-120b.aliases: must be a list of texts"),
    (("prices.yaml", "usd_per_hour: 2.5,", "usd_per_hour: .nan,"), "usd_per_hour: must be a positive number (got nan)"),
])
def test_catalog_figures_that_used_to_crash(capsys, broken_catalog, edit, expected):
    name, old, new = edit
    _edit(broken_catalog / name, old, new)
    refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], expected)


def test_price_files_with_nan_or_inf(capsys, tmp_path):
    f = tmp_path / "q.yaml"
    f.write_text("prices:\n  - {gpu: h100, gpus_per_instance: 1, usd_per_hour: .inf, provider: X, date: 2026-11, source: s}\n")
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--prices", str(f)], "usd_per_hour: must be a positive number (got inf)")


@pytest.mark.parametrize("damage, expected", [
    (lambda r: r.pop("candidates"), "not a decision record: no 'candidates' or 'versions'"),
    (lambda r: r.update(trace="x"), "'trace' is missing or of the wrong kind"),
    (lambda r: r["candidates"][0].pop("score"), "not a complete decision record (KeyError: 'score')"),
    (lambda r: r["decisive_rule"].update(source=5), "not a complete decision record (TypeError"),
])
def test_explain_on_damaged_records(capsys, tmp_path, damage, expected):
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    damage(rec)
    (tmp_path / "d.json").write_text(json.dumps(rec))
    refuse(capsys, ["explain", str(tmp_path / "d.json")], expected)


def test_explain_on_json_nested_too_deep(capsys, tmp_path):
    (tmp_path / "d.json").write_text("[" * 100_000 + "]" * 100_000)
    refuse(capsys, ["explain", str(tmp_path / "d.json")], "not a decision record")


def test_tampered_resume_files_and_transcripts(capsys, tmp_path):
    r = tmp_path / "resume.yaml"
    r.write_text("resume: 1\nanswers: {mode: inference}\nasked: 5\nsteps: [1]\n")
    code = main(["ask", "--resume", str(r)])
    assert code == 2
    t = tmp_path / "t.yaml"
    t.write_text("transcript: 1\nsteps: [{answer: x}]\n")
    refuse(capsys, ["replay", str(t)], "not a transcript this version can replay (KeyError")
    t.write_text("transcript: 1\nsteps: [5]\n")
    refuse(capsys, ["replay", str(t)], "not a transcript this version can replay")


def test_replay_is_read_only(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    transcript = sorted((ROOT / "transcripts").glob("*.yaml"))[0]
    text = transcript.read_text() + ""
    t = tmp_path / "t.yaml"
    t.write_text(text)
    main(["replay", str(t)])
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]


def test_source_date_epoch_out_of_range(capsys, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "9" * 30)
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml")], "SOURCE_DATE_EPOCH=99999999999999999999... is not a date")


# --- user templates ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("template, expected", [
    ("{{ 9 ** (9 ** 9) }}", "a power above 64"),
    ("{{ 'x' * 300000000 }}", "a repetition longer than 1,000,000"),
    ("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}", "loops of more than 1,000,000 steps"),
    ("{{ range(100000) | list | length }}", "an argument above 10,000"),
    ("{{ '%0999999999d' % 1 }}", "a format width of 10,000 or more"),
    ("{{ '{:>999999999}'.format(1) }}", "a format width of 10,000 or more"),
    ("{{ 'x'.ljust(999999999) }}", "an argument above 10,000"),
    ("{{ 'x' | center(999999999) }}", "an argument above 10,000"),
    ("{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "a text longer than 1,000,000"),
    ("{% macro f(s, n) %}{{ f(s ~ s, n - 1) if n else s | length }}{% endmacro %}{{ f('ab', 40) }}", "a text longer than 1,000,000"),
    ("{% for i in range(5000) %}" + "x" * 2100 + "{% endfor %}", "the memo would be longer than"),
    ("{% for i in range(5000) %}{{ headline * 20 }}{% endfor %}", "more than 20,000,000 characters and items built"),
    ("{{ lipsum(9999, max=9999) }}", "'lipsum' is undefined"),
])
def test_template_bombs_are_refused(capsys, tmp_path, template, expected):
    t = tmp_path / "bomb.j2"
    t.write_text(template)
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)], expected)


def test_a_slow_template_is_stopped(capsys, tmp_path, monkeypatch):
    from advisor.shell import memo
    monkeypatch.setattr(memo, "TEMPLATE_SECONDS", 0.3)
    t = tmp_path / "slow.j2"
    t.write_text("{% for a in headline %}{% for b in headline %}{% for c in headline %}{% for d in headline %}"
                 "{% endfor %}{% endfor %}{% endfor %}{% endfor %}")
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)], "rendering took longer than 0.3 s")


def test_include_stays_in_the_template_folder(capsys, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret")
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "link.txt").symlink_to(secret)
    (folder / "part.txt").write_text("a part")
    t = folder / "memo.j2"
    t.write_text("{% include 'part.txt' %}")
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)]) == 0
    assert capsys.readouterr().out == "a part"
    for name in ("link.txt", "../secret.txt", str(secret)):
        t.write_text("{% include '" + name + "' %}")
        err = refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)], "template error")
        assert "the secret" not in err


# --- outputs never destroy what is there --------------------------------------------------------------------

def test_out_through_a_link_keeps_the_link(capsys, tmp_path):
    target = tmp_path / "real.md"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "memo.md"
    link.symlink_to(target)
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md", "--out", str(link)]) == 0
    assert link.is_symlink() and target.read_text().startswith("# GPU recommendation") and oct(target.stat().st_mode & 0o777) == "0o640"


def test_out_onto_a_device_writes_through_it(capsys):
    import stat
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "summary", "--out", "/dev/null"]) == 0
    assert stat.S_ISCHR(__import__("os").stat("/dev/null").st_mode)


def test_out_never_replaces_an_input(capsys, tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text((EXAMPLES / "chat-assistant.yaml").read_text())
    before = w.read_text()
    refuse(capsys, ["recommend", str(w), "--out", str(w)], "is an input of this command")
    d = rule_file(tmp_path, one_rule())
    refuse(capsys, ["recommend", str(w), "--rules", str(d), "--out", str(d / "r.yaml")], "is an input of this command")
    t = tmp_path / "t.j2"
    t.write_text("{{ headline }}")
    refuse(capsys, ["recommend", str(w), "--template", str(t), "--out", str(t)], "is an input of this command")
    assert w.read_text() == before and t.read_text() == "{{ headline }}"


# --- sweeps --------------------------------------------------------------------------------------------------

def test_sweep_limits_are_checked_before_any_work(capsys, tmp_path):
    g = tmp_path / "g.yaml"
    g.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  concurrency: [{', '.join(map(str, range(1, 1001)))}]\n"
                 f"  context_tokens: [{', '.join(map(str, range(1, 1001)))}]\n")
    refuse(capsys, ["sweep", str(g), "--out", str(tmp_path / "o.csv")], "vary: more than 100,000 combinations")
    g.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  model.params_b: [10, 20]\n")
    refuse(capsys, ["sweep", str(g), "--out", str(tmp_path / "o.csv")], "vary.model.params_b: the base's model is 'gpt-oss-120b', not a mapping")
    for jobs in ("-1", "0", "100000"):
        refuse(capsys, ["sweep", str(EXAMPLES / "grid.yaml"), "--out", str(tmp_path / "o.csv"), "--jobs", jobs],
               "--jobs: must be a whole number from 1 to 256")
    refuse(capsys, ["sweep", str(EXAMPLES / "grid.yaml"), "--out", str(EXAMPLES / "grid.yaml")], "is an input of this command")


def test_sweep_cells_that_look_like_formulas_are_quoted():
    from advisor.shell.sweep import _cell
    assert _cell("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")" and _cell("@SUM(A1)") == "'@SUM(A1)"
    assert _cell(-13.9) == -13.9 and _cell("h200-sxm") == "h200-sxm"


def test_ctrl_c_during_a_parallel_sweep_gives_one_line(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    g = tmp_path / "g.yaml"
    g.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  concurrency: [{', '.join(map(str, range(1, 2001)))}]\n"
                 "  context_tokens: [4096, 8192, 16384, 32768]\n")
    p = subprocess.Popen([sys.executable, "-m", "advisor", "sweep", str(g), "--out", str(tmp_path / "o.csv"), "--jobs", "2", "--quiet"],
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    for _ in range(200):                         # until some rows are written
        time.sleep(0.05)
        if (tmp_path / "o.csv").exists() and len((tmp_path / "o.csv").read_text().splitlines()) > 3:
            break
    os.killpg(p.pid, signal.SIGINT)             # what Ctrl-C in a terminal does: the whole group
    _, err = p.communicate(timeout=60)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert p.returncode == 130 and len(err.strip().splitlines()) == 1, err
    kept = len((tmp_path / "o.csv").read_text().splitlines()) - 1
    assert err.strip() == f"gpu-advisor: interrupted: {kept} of 8000 rows decided and kept in {tmp_path / 'o.csv'}"


# --- the cache runs no planted code ---------------------------------------------------------------------------

def test_a_cache_others_can_write_is_not_used(tmp_path, monkeypatch, capsys):
    import subprocess
    import sys
    cache = tmp_path / "cache"
    (cache / "jinja").mkdir(parents=True)
    cache.chmod(0o777)
    marker = tmp_path / "pwned"
    # a bytecode cache entry for every template name would be a marshal'd code object; any file here must be ignored
    for i in range(3):
        (cache / "jinja" / f"__jinja2_bounded1_{i}.cache").write_bytes(b"planted")
    env = {**__import__("os").environ, "GPU_ADVISOR_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-m", "advisor", "recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.startswith("# GPU recommendation")
    assert "warning: the cache folder" in out.stderr and "may be written by other users; caching is off" in out.stderr
    assert not (cache / "yaml").exists() and not marker.exists()


def test_a_new_cache_folder_is_private(tmp_path):
    import subprocess
    import sys
    cache = tmp_path / "new-cache"
    env = {**__import__("os").environ, "GPU_ADVISOR_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-m", "advisor", "recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stderr == ""
    assert oct(cache.stat().st_mode & 0o777) == "0o700" and oct((cache / "jinja").stat().st_mode & 0o777) == "0o700"


# --- the pattern matcher agrees with Python's re without backtracking ----------------------------------------

@settings(max_examples=300, deadline=None)
@given(pattern=st.lists(st.tuples(st.sampled_from(["a", "b", ".", "[ab]", "[a-c]", "-", "_", "1"]), st.sampled_from(["", "*", "+"])),
                        min_size=1, max_size=6).map(lambda xs: "".join(a + q for a, q in xs)),
       text=st.text("abc-_1\n", max_size=10))
def test_pattern_matcher_agrees_with_re(pattern, text):
    import re
    assert knowledge.pattern_matcher(pattern)(text) == (re.fullmatch(pattern, text) is not None)


def test_pattern_matcher_does_not_backtrack():
    m = knowledge.pattern_matcher(".*" * 16 + "Z")
    assert m("x" * 20_000) is False and m("x" * 100 + "Z") is True


def test_explain_from_another_directory_uses_the_recorded_folder(capsys, tmp_path, monkeypatch):
    d = rule_file(tmp_path, one_rule(rid="big-memory", when="{candidate.memory_gb: {gte: 120}}", then="{prefer: {weight: 5}}"))
    monkeypatch.chdir(tmp_path)
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", "rules", "--format", "json"]) == 0
    (tmp_path / "d.json").write_text(capsys.readouterr().out)
    monkeypatch.chdir("/")
    assert main(["explain", str(tmp_path / "d.json"), "--rules", str(d)]) == 0
    out = capsys.readouterr().out
    assert "The current rules and catalog are those that produced this decision." in out
    assert f"Rules: the shipped ones and {d}, as the decision recorded\n" in out and "named differently" in out
