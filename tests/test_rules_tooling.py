"""The rule language's checks: every lint error kind, examples, coverage, the generated reference."""
import pytest

from advisor.judgement import knowledge
from advisor.shell.cli import main
from advisor.base.errors import InputError

RULE = """- id: {id}
  title: t
  source: [K01]
  when: {when}
  then: {then}
  because: "{because}"
"""


def lint(tmp_path, text):
    (tmp_path / "r.yaml").write_text(text)
    with pytest.raises(InputError) as exc:
        knowledge.load([tmp_path])
    return str(exc.value)


def rule(**kw):
    base = {"id": "x", "when": "{workload.mode: inference}", "then": "{note: {text: hi}}", "because": "b"}
    base.update(kw)
    return RULE.format(**base)


@pytest.mark.parametrize("text, expected", [
    ("- id: x\n  when: [\n", "r.yaml:3: YAML syntax error"),
    (rule(id="Not_Kebab"), "id must be kebab-case"),
    ("- id: x\n  title: t\n  when: {workload.mode: inference}\n  then: {note: hi}\n", "needs a source"),
    (rule() + rule(), "duplicate rule id 'x'"),
    (rule(when="{workload.per_gpu_gb: {gt: 3}}"), "unknown fact 'workload.per_gpu_gb'"),
    (rule(when="{workload.concurrency: {gt: many}}"), "type mismatch: integer fact compared with 'many'"),
    (rule(when="{workload.mode: {like: x}}"), "unknown operator 'like'"),
    (rule(then="{promote: {weight: 3}}"), "unknown effect 'promote'"),
    (rule(because="{{ workload.nonsense }}"), "template variable 'workload.nonsense' is not a fact"),
    (rule(because="{{ budget }}"), "a rule text holds only text and fields"),
    (rule(when="{workload.concurrency: {between: [100, 10]}}"), "unreachable: lower bound 100 is above upper bound 10"),
    (rule(when="{all: [{workload.concurrency: {gt: 200}}, {workload.concurrency: {lt: 100}}]}"), "unreachable: workload.concurrency"),
    (rule(id="a", when="{derived.b_fact: true}", then="{derive: {a_fact: true}}")
     + rule(id="b", when="{derived.a_fact: true}", then="{derive: {b_fact: true}}"), "derive cycle"),
    (rule(when="{not: {candidate.gpu: {matches: 'h.*'}}}"), "'matches' cannot be negated"),
    (rule(then="{prefer: {weight: 5}}"), "must name a gpu, vendor, generation or class"),
    (rule(when="{candidate.gpu: h100-sxm}", then="{avoid: {weight: 5, proxy: true}}"), "proxy: true|false is for prefer only"),
    (rule(when="{candidate.gpu: h100-sxm}", then="{prefer: {weight: 5, proxy: maybe}}"), "proxy: true|false is for prefer only"),
])
def test_each_lint_error_kind(tmp_path, text, expected):
    assert expected in lint(tmp_path, text)


def test_all_problems_reported_together_and_nothing_loaded(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text(rule(id="a", when="{workload.nope: 1}"))
    (tmp_path / "b.yaml").write_text(rule(id="b", then="{boom: 1}"))
    assert main(["rules", "lint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "a.yaml:4: when: unknown fact" in err and "b.yaml:5: then: unknown effect" in err


def test_shipped_knowledge_base_passes_lint_test_coverage(capsys):
    assert main(["rules", "lint"]) == 0
    assert main(["rules", "test"]) == 0
    out = capsys.readouterr().out
    assert "0 failed" in out
    assert main(["rules", "coverage"]) == 0
    assert "53 of 53 heuristics covered" in capsys.readouterr().out


def test_every_shipped_rule_has_both_kinds_of_example():
    for r in knowledge.load().rules:
        assert {ex["fires"] for ex in r.examples} == {True, False}, r.id


def test_a_failing_example_fails_rules_test(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(rule() + "  examples:\n    - {given: {workload: {mode: training}}, fires: true}\n"
                                               "    - {given: {workload: {mode: training}}, fires: false}\n")
    assert main(["rules", "test", str(tmp_path)]) == 1
    assert "example 1 should fire but did not" in capsys.readouterr().out


def test_reference_doc_is_current(capsys):
    assert main(["rules", "doc", "--check"]) == 0, "docs/knowledge-base.md is stale: run `gpu-advisor rules doc`"


def test_facts_vocabulary(capsys):
    assert main(["facts"]) == 0
    out = capsys.readouterr().out
    assert "candidate.per_card_gb" in out and "GB" in out and "workload.import_restricted" in out


def test_rule_list(capsys):
    assert main(["rules", "list", "--group", "procurement"]) == 0
    out = capsys.readouterr().out
    assert "import-restricted-excludes-us-accelerators" in out and "rules/procurement.yaml:" in out
    assert "must-fit-in-memory" not in out
