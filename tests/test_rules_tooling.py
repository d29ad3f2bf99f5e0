"""The rule language's checks: every lint error kind, examples, coverage, the generated reference."""
import re

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
    assert "0 failed" in out and "no examples" not in out
    assert main(["rules", "coverage"]) == 0
    assert "53 of 53 heuristics covered" in capsys.readouterr().out


def test_every_shipped_rule_has_both_kinds_of_example():
    for r in knowledge.load().rules:
        assert {ex["fires"] for ex in r.examples if "fires" in ex} == {True, False}, r.id


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


# --- rules test counts what it ran (issue 42); verdict examples (issue 43, item 4) -----------------

def test_a_rule_without_examples_is_a_lint_warning_and_fails_rules_test_with_honest_counts(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(rule())
    assert main(["rules", "lint", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning: x (" in out and "r.yaml:1): no examples" in out and "no problems, 1 warning" in out
    assert main(["rules", "test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "0 examples of 0 rules: 0 passed, 0 failed" in out
    assert "1 rule has no examples: x (" in out and not re.search(r"-\d+ (passed|failed)", out)


def test_rules_test_counts_each_example_once(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(
        rule(id="a") + "  examples:\n    - {given: {workload: {mode: inference}}, fires: true}\n"
                       "    - {given: {workload: {mode: training}}, fires: true}\n"
        + rule(id="b") + "  examples:\n    - {given: {workload: {mode: inference}}, fires: true}\n" + rule(id="c"))
    assert main(["rules", "test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "3 examples of 2 rules: 2 passed, 1 failed" in out
    assert "a: example 2 should fire but did not" in out
    assert "2 rules lack an example that fires or one that does not" in out   # a (both fire) and b
    assert "1 rule has no examples: c (" in out


# gpt-oss-120b for one user between one RTX PRO 6000 (96 GB) and L40S cards (48 GB): the shipped rules
# recommend 1 x rtx-pro-6000 (the verdict examples of fewer-cards-for-serving and
# no-scale-up-link-for-sharding say which rules decide it)
ONE_USER = "{mode: inference, model: gpt-oss-120b, concurrency: 1, constraints: {gpus: [rtx-pro-6000, l40s]}}"


def _verdict_rule(rid, then, verdict, when="{candidate.gpu: rtx-pro-6000}", extra=""):
    return (f"- id: {rid}\n  title: t\n  source: [mine]\n  when: {when}\n  then: {then}\n{extra}  examples:\n"
            f"    - {{given: {{candidate: {{gpu: rtx-pro-6000}}}}, fires: true}}\n"
            f"    - {{given: {{candidate: {{gpu: l40s}}}}, fires: false}}\n"
            f"    - workload: {ONE_USER}\n      verdict: {verdict}\n")


def test_verdict_examples_hold_when_the_rule_changes_the_verdict(tmp_path, capsys):
    for rid, then, verdict in [("no-pro-6000", "{exclude: {reason: not here}}", "{excludes: rtx-pro-6000}"),
                               ("pro-6000-too-dear", "{avoid: {weight: 60}}", "{recommends: l40s, count: 2}")]:
        (tmp_path / rid).mkdir()
        (tmp_path / rid / "r.yaml").write_text(_verdict_rule(rid, then, verdict))
        assert main(["rules", "test", str(tmp_path / rid)]) == 0, capsys.readouterr().out
        assert "3 examples of 1 rule (1 of them verdicts on a whole workload): 3 passed, 0 failed" in capsys.readouterr().out


@pytest.mark.parametrize("then, verdict, expected", [
    # a weight too small to move the ranking fails its own example
    ("{avoid: {weight: 5}}", "{recommends: l40s}", "example 3: recommends 1 x rtx-pro-6000, not l40s"),
    # a weight on the GPU that wins anyway changes nothing
    ("{prefer: {weight: 40}}", "{recommends: rtx-pro-6000}",
     "recommends 1 x rtx-pro-6000 without the rule too: the rule does not change this verdict"),
    ("{note: {text: hi}}", "{excludes: rtx-pro-6000}", "does not exclude rtx-pro-6000 (recommends 1 x rtx-pro-6000)"),
    ("{avoid: {weight: 60}}", "{recommends: l40s, decisive: ranking-cheaper-and-faster}",
     "the decisive rule is ranking-cost-per-unit-of-work, not ranking-cheaper-and-faster"),
])
def test_a_verdict_example_the_rule_does_not_decide_fails(tmp_path, capsys, then, verdict, expected):
    (tmp_path / "r.yaml").write_text(_verdict_rule("mine", then, verdict))
    assert main(["rules", "test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert expected in out and "1 failed" in out


def test_an_exclusion_of_a_gpu_that_loses_anyway_fails(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(_verdict_rule("no-l40s", "{exclude: {reason: not here}}", "{excludes: l40s}",
                                                   when="{candidate.gpu: l40s}").replace(
        "{gpu: rtx-pro-6000}}}, fires: true", "{gpu: l40s}}}, fires: true").replace(
        "{gpu: l40s}}}, fires: false", "{gpu: rtx-pro-6000}}}, fires: false"))
    assert main(["rules", "test", str(tmp_path)]) == 1
    assert ("without the rule 1 x rtx-pro-6000 is recommended, not l40s: the exclusion does not change this verdict"
            in capsys.readouterr().out)


def test_a_shipped_weight_that_no_longer_flips_its_verdict_fails(tmp_path, capsys):
    """fewer-cards-for-serving at weight 1 instead of 10, with its shipped verdict example."""
    shipped = knowledge.load().rule("fewer-cards-for-serving")
    verdicts = [ex for ex in shipped.examples if "verdict" in ex]
    assert verdicts and verdicts[0]["verdict"] == {"recommends": "rtx-pro-6000", "count": 1}
    (tmp_path / "r.yaml").write_text(
        "- id: fewer-cards-lighter\n  replaces: fewer-cards-for-serving\n  title: t\n  source: [mine]\n"
        "  when: {workload.mode: inference, candidate.count: {gt: 1}}\n  then: {avoid: {weight: 1}}\n  examples:\n"
        "    - {given: {workload: {mode: inference}, candidate: {count: 2}}, fires: true}\n"
        "    - {given: {workload: {mode: inference}, candidate: {count: 1}}, fires: false}\n"
        f"    - workload: {ONE_USER}\n      verdict: {{recommends: rtx-pro-6000, count: 1}}\n")
    assert main(["rules", "test", str(tmp_path)]) == 1
    assert "fewer-cards-lighter: example 3: recommends 2 x l40s, not 1 x rtx-pro-6000" in capsys.readouterr().out


def test_shipped_verdict_examples_are_run(capsys):
    kb = knowledge.load()
    deciders = sorted(r.id for r in kb.rules if any("verdict" in ex for ex in r.examples))
    assert deciders == ["fewer-cards-for-serving", "no-scale-up-link-for-sharding",
                        "workstation-needs-actively-cooled-cards", "workstation-no-server-modules"]
    assert main(["rules", "test"]) == 0
    assert "(4 of them verdicts on a whole workload)" in capsys.readouterr().out


def test_a_verdict_example_given_as_a_workload_file_beside_the_rules(tmp_path, capsys):
    (tmp_path / "one-user.yaml").write_text("mode: inference\nmodel: gpt-oss-120b\nconcurrency: 1\n"
                                            "constraints:\n  gpus: [rtx-pro-6000, l40s]\n")
    (tmp_path / "r.yaml").write_text(_verdict_rule("no-pro-6000", "{exclude: {reason: not here}}", "{excludes: rtx-pro-6000}")
                                     .replace(f"workload: {ONE_USER}", "workload: one-user.yaml"))
    assert main(["rules", "test", str(tmp_path / "r.yaml")]) == 0, capsys.readouterr().out
    (tmp_path / "one-user.yaml").write_text("mode: inference\nmodel: gpt-oss-120b\nconstraints: {gpus: [rtx-pro-6001]}\n")
    assert main(["rules", "test", str(tmp_path / "r.yaml")]) == 1
    assert "example 3: the workload cannot be decided: " in capsys.readouterr().out


@pytest.mark.parametrize("verdict, expected", [
    ("{recommends: h100-sxn}", "verdict recommends: unknown GPU 'h100-sxn'"),
    ("{recommends: h100-sxm, excludes: l40s}", "a verdict example is {workload"),
    ("{excludes: l40s, count: 2}", "a verdict example is {workload"),
    ("{recommends: h100-sxm, count: 0}", "verdict count: a whole number of GPUs"),
])
def test_lint_checks_the_verdict_form(tmp_path, verdict, expected):
    text = rule() + f"  examples:\n    - workload: {ONE_USER}\n      verdict: {verdict}\n"
    assert expected in lint(tmp_path, text)


def test_the_rule_in_docs_rules_md_passes_its_examples_and_its_verdict(tmp_path, capsys):
    text = (knowledge.HOME / "docs" / "rules.md").read_text()
    block = text[text.index("```yaml\nrules:") + len("```yaml\n"):]
    (tmp_path / "r.yaml").write_text(block[:block.index("```")])
    assert main(["rules", "test", str(tmp_path)]) == 0, capsys.readouterr().out
    assert "3 examples of 1 rule (1 of them verdicts on a whole workload): 3 passed, 0 failed" in capsys.readouterr().out
