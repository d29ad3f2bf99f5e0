"""Review 14's findings on the commands other than `recommend`, each pinned by what a user sees: `ask
--from` keeps every field of the file (1-3), `explain` does not report changes that did not happen (4), the
facts reference says what unit_cost is (5), `rules doc` never writes a user's rules over the shipped
reference (7), a quit-and-resumed session replays (8), the dialogue does not replace a file without a yes
(9), `prices import` claims no provider or commit it cannot vouch for (10), and the template sandbox
measures join, replace and indent before building them (11). The
service-level presets (6) are in tests/test_dialogue.py."""
import shutil

import pytest
import yaml

from advisor.base import sandbox, yamlio
from advisor.judgement.advise import Setup
from advisor.shell import dialogue, rulestools
from advisor.shell.cli import main
from conftest import EXAMPLES


def walk(d, until: str, first: str | None = None):
    """`first` at the first question, then Enter at every question (and the confirmation and format) until
    the dialogue asks `until`."""
    if first is not None:
        d.submit(first)
    for _ in range(100):
        if d.current().id == until:
            return d
        assert d.stage not in ("done", "quit"), f"never asked {until}"
        d.submit("")
    raise AssertionError(f"still not at {until}: at {d.current().id}")


def test_ask_from_a_file_keeps_the_fields_no_question_asks(catalog, kb, tmp_path):
    # constraints.gpus [h100-sxm, l40s] and name were dropped: the dialogue recommended an RTX 4090 the file ruled
    # out; constraints.providers [AWS] came as the loader's line-carrying list and the transcript could not be written
    f = tmp_path / "w.yaml"
    f.write_text("name: team-chat\nmode: inference\nmodel: llama-3.1-8b\nconcurrency: 8\nlatency: batch\n"
                 "constraints: {gpus: [h100-sxm, l40s], providers: [AWS, RunPod]}\n")
    answers = dialogue.answers_from(yamlio.load(f), catalog, str(f))
    assert answers["constraints.gpus"] == ["h100-sxm", "l40s"] and type(answers["constraints.gpus"]) is list
    assert answers["name"] == "team-chat"
    d = walk(dialogue.Dialogue(Setup(catalog, kb), answers=answers, out_dir=tmp_path, width=80), "confirm")
    shown = "\n".join(d.summary())
    assert "Only these GPUs: h100-sxm, l40s  (from your file)" in shown and "Name: team-chat  (from your file)" in shown
    d.submit("yes")
    assert d.decision.record["recommendation"]["gpu"] in ("h100-sxm", "l40s")
    assert d.default_path() == "team-chat-memo.md"
    assert yaml.safe_load(d.transcript_yaml())["workload"]["constraints"]["providers"] == ["AWS", "RunPod"]


def test_ask_from_a_file_reads_its_config_json_model(catalog, tmp_path):
    # `model: cfg/config.json` was looked up as a catalog name ("unknown model 'cfg/config.json'"): it is taken as
    # the file names it, relative to the file's own folder (the dialogue's workload has none)
    cfg = tmp_path / "cfg"
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: cfg/config.json\nconcurrency: 8\n")
    assert dialogue.answers_from(yamlio.load(f), catalog, str(f))["model"] == str((cfg / "config.json").resolve())
    f.write_text("mode: inference\nmodel: hf:meta-llama/Llama-3.1-8B\nconcurrency: 8\n")
    assert dialogue.answers_from(yamlio.load(f), catalog, str(f))["model"] == "hf:meta-llama/Llama-3.1-8B"


def test_explain_does_not_report_changes_when_the_decisions_own_rules_are_not_loaded(tmp_path, capsys):
    rules = tmp_path / "team"
    rules.mkdir()
    (rules / "team.yaml").write_text(
        "rules:\n  - id: team-prefers-h200\n    title: Our team runs H200\n    source: [TEAM]\n    group: team\n"
        "    when: {candidate.gpu: h200-sxm}\n    then: {prefer: {weight: 50}}\n    because: \"the team's platform\"\n")
    rec = tmp_path / "rec.json"
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(rules), "--format", "json",
                 "--out", str(rec)]) == 0
    capsys.readouterr()
    assert main(["explain", str(rec)]) == 0
    out = capsys.readouterr().out
    assert "Warning: the rules changed" not in out and "What would change today" not in out
    assert "Not compared with today's rules and catalog: the decision used files that are not loaded here." in out
    assert f"pass --rules {rules}" in out
    # given the folder, the comparison is made and finds nothing changed
    assert main(["explain", str(rec), "--rules", str(rules)]) == 0
    assert "The current rules and catalog are those that produced this decision." in capsys.readouterr().out


def test_the_facts_reference_says_unit_cost_is_per_million_tokens_for_all_serving(capsys):
    assert main(["facts"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("candidate.unit_cost "))
    assert "per million output tokens (serving, batch and interactive alike" in line and "per hour" not in line


def test_rules_doc_never_writes_a_users_rules_over_the_shipped_reference(tmp_path, capsys, monkeypatch):
    before = rulestools.DOC_PATH.read_text()
    rules = tmp_path / "team"
    rules.mkdir()
    (rules / "team.yaml").write_text(
        "rules:\n  - id: team-rule\n    title: Ours\n    source: [TEAM]\n    group: team\n"
        "    when: {candidate.gpu: h200-sxm}\n    then: {prefer: {weight: 5}}\n    because: \"ours\"\n")
    assert main(["rules", "doc", "--rules", str(rules)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Your knowledge base") and "team-rule" in out
    monkeypatch.setenv("GPU_ADVISOR_RULES", str(rules))
    assert main(["rules", "doc"]) == 0
    assert capsys.readouterr().out.startswith("# Your knowledge base")
    assert rulestools.DOC_PATH.read_text() == before


def test_a_session_quit_and_resumed_replays_as_one(catalog, kb, tmp_path):
    d = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path, width=80)
    d.submit("serve")
    d.submit("quit")
    d.submit("yes")                                  # save the answers
    again = dialogue.Dialogue.resume(d.resume_path(), Setup(catalog, kb), out_dir=tmp_path, width=80)
    assert [s["answer"] for s in again.steps] == ["serve"]
    walk(again, "path")
    again.submit("")
    assert again.written
    t = next(p for p in again.written if p.name.endswith("-transcript.yaml"))
    assert main(["replay", str(t)]) == 0


def test_the_dialogue_asks_before_replacing_files_that_are_there(catalog, kb, tmp_path, capsys):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    d = walk(dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path, width=80), "path", first="serve")
    shown = d.submit("notes.md")
    assert shown == [f"  notes.md already exists in {tmp_path}."] and d.current().id == "overwrite"
    assert d.submit("") == ["  Nothing replaced: give another file name."] and d.current().id == "path"
    assert notes.read_text() == "my notes\n"
    d.submit("notes.md")
    d.submit("yes")
    assert notes.read_text() != "my notes\n" and d.stage == "done"
    # its transcript replays: the file questions are not the decision's
    t = next(p for p in d.written if p.name.endswith("-transcript.yaml"))
    assert [s["question"] for s in yaml.safe_load(t.read_text())["steps"]][-4:] == ["path", "overwrite", "path", "overwrite"]
    assert main(["replay", str(t)]) == 0


@pytest.mark.parametrize("template", [
    "{{ (range(10000)|list|join(',' * 10000))|length }}",          # the review's: 100 million characters
    "{{ range(10000)|map('string')|join(',' * 10000)|length }}",    # a generator, as join lists it
    "{{ ','.join(['x' * 9999] * 200)|length }}",                    # the str method
    "{{ ('a' * 999999)|replace('a', 'bb')|length }}",
    "{{ ('a' * 999999).replace('a', 'bb')|length }}",
    "{{ ('\\n' * 99999)|indent(9999)|length }}",
])
def test_the_sandbox_measures_a_built_text_before_building_it(template):
    env = sandbox.environment(None)
    with pytest.raises(sandbox.SecurityError, match="a text longer than 1,000,000"):
        sandbox.render(env.from_string(template), {})


def test_the_sandbox_still_joins_replaces_and_indents_plain_text():
    env = sandbox.environment(None)
    out = sandbox.render(env.from_string("{{ [1, 2]|join(', ') }}|{{ range(3)|map('string')|join('-') }}|"
                                         "{{ 'a-b'|replace('-', '+') }}|{{ 'x\\ny'|indent(2) }}|{{ '-'.join(['a', 'b']) }}"), {})
    assert out == "1, 2|0-1-2|a+b|x\n  y|a-b"


def test_prices_import_takes_no_provenance_it_cannot_vouch_for(tmp_path, capsys):
    # (10) a vms.csv in Downloads/ became the provider "Downloads", and the commit of whatever git repository held the
    # file (gpu-advisor's own HEAD) was recorded as SkyPilot's; a renamed vms.csv got another format's column error
    from conftest import ROOT
    src = ROOT / "tests" / "fixtures" / "skypilot" / "lambda" / "vms.csv"
    (tmp_path / "Downloads").mkdir()
    shutil.copy(src, tmp_path / "Downloads" / "vms.csv")
    assert main(["prices", "import", str(tmp_path / "Downloads" / "vms.csv")]) == 2
    assert "'Downloads' is none of them; put the file in CLOUD/vms.csv" in capsys.readouterr().err
    shutil.copy(src, tmp_path / "lambda-vms.csv")
    assert main(["prices", "import", str(tmp_path / "lambda-vms.csv")]) == 2
    assert "lambda-vms.csv:1: a SkyPilot vms.csv: name it CLOUD/vms.csv" in capsys.readouterr().err
    # inside this repository (no skypilot-catalog checkout) no commit is claimed; given --commit, that one is
    assert main(["prices", "import", str(src)]) == 0
    assert "commit:" not in capsys.readouterr().out
    assert main(["prices", "import", str(src), "--commit", "abc1234"]) == 0
    assert 'commit: "abc1234"' in capsys.readouterr().out


def test_prices_list_refuses_the_imports_flags_rather_than_ignoring_them(tmp_path, capsys):
    # (12) `prices list --gpu h100-sxm --out listed.txt` printed to stdout and wrote nothing, without a word
    out = tmp_path / "listed.txt"
    assert main(["prices", "list", "--gpu", "h100-sxm", "--out", str(out)]) == 2
    assert "--out: is for `prices import`; `prices list` prints to stdout" in capsys.readouterr().err and not out.exists()


def test_the_sandbox_joins_items_that_are_not_text():
    env = sandbox.environment(None)
    assert sandbox.render(env.from_string("{{ [[1, 2], [3], none, 1.5]|join('; ') }}"), {}) == "[1, 2]; [3]; None; 1.5"
