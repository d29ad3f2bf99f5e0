"""Exit codes a script can rely on (issue 42): 0 a recommendation, 2 invalid input, 3 valid input that no
plan meets, with what the workload needs (GB in all, the best plan's cards and GB per card) and the
constraint that binds, from the estimator's figures; identical exclusions grouped on one line."""
import json

from advisor.shell.cli import EXIT_NO_PLAN, build_parser, main


def _file(tmp_path, text):
    p = tmp_path / "w.yaml"
    p.write_text(text)
    return str(p)


LLAMA_405B_ON_2 = "mode: inference\nmodel: llama-3.1-405b\nconcurrency: 64\nconstraints:\n  max_gpus: 2\n"


def test_no_plan_exits_3_and_names_the_need_and_the_binding_constraint(tmp_path, capsys):
    f = _file(tmp_path, LLAMA_405B_ON_2)
    assert EXIT_NO_PLAN == 3
    assert main(["recommend", f, "--format", "summary"]) == 3
    out, err = capsys.readouterr()
    assert out.startswith("No GPU can be recommended")
    # the figures are the estimator's: the need in all, the binding constraint, the plan without it
    assert main(["recommend", f, "--format", "json"]) == 3
    rec = json.loads(capsys.readouterr().out)
    n = rec["no_plan"]
    assert n["need_gb"] == round(rec["estimate"]["need_gb"], 1) and n["need_gb"] > 800      # 405B weights + KV cache
    b = n["binding"]
    assert b["constraint"] == "constraints.max_gpus" and b["value"] == 2 and b["count"] > 2
    assert 0 < b["per_card_gb"] <= b["card_gb"]
    said = (f"the workload needs {n['need_gb']:,.0f} GB in all; constraints.max_gpus (2) binds: without it the best plan "
            f"is {b['count']} x {b['gpu']}, {b['per_card_gb']:,.0f} GB per card of {b['card_gb']:g}")
    assert said[1:] in " ".join(out.split()) and said in err
    # one line per group of identical exclusions, not 31 identical lines
    grouped = [line for line in out.splitlines() if "excluded by must-fit-in-memory:" in line]
    assert grouped and grouped[0].strip().split(" GPUs")[0].isdigit() and int(grouped[0].strip().split(" GPUs")[0]) > 20
    assert not any(line.strip().endswith(": excluded by must-fit-in-memory") for line in out.splitlines())


def test_the_memo_says_it_first(tmp_path, capsys):
    f = _file(tmp_path, LLAMA_405B_ON_2)
    assert main(["recommend", f, "--format", "md"]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "No GPU can be recommended: the workload needs" in out and "constraints.max_gpus (2) binds" in out


def test_a_recommendation_exits_0_and_invalid_input_2(tmp_path, capsys):
    assert main(["recommend", _file(tmp_path, "mode: inference\nmodel: llama-3.1-8b\n"), "--format", "summary"]) == 0
    assert main(["recommend", _file(tmp_path, "mode: inference\nmodel: llama-3.1-8b\nconcurrency: -1\n")]) == 2


def test_the_codes_are_in_the_help():
    epilog = build_parser().epilog
    assert "2 invalid input" in epilog and "3 valid input but no plan meets it" in epilog


def test_ask_ending_on_no_plan_exits_3(tmp_path, capsys, monkeypatch):
    """The dialogue's session that ends as asked on a decision without a plan exits 3, as recommend does
    (a script piping answers in reads the same code)."""
    import io
    import sys
    monkeypatch.setenv("GPU_ADVISOR_PIPE", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * 20 + "yes\nmd\n\n"))
    code = main(["ask", "--from", _file(tmp_path, LLAMA_405B_ON_2), "--out-dir", str(tmp_path / "run")])
    out = " ".join(capsys.readouterr().out.split())
    assert "constraints.max_gpus (2) binds" in out
    assert code == 3
