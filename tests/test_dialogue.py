"""The guided dialogue through the real prompt-toolkit application (pipe input, dummy output), the
line driver, resume files, transcripts and their replay, and a real terminal under tmux."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from advisor.shell.wording import per_user_rate
from advisor.shell import dialogue
from advisor.judgement.advise import Setup
from advisor.inputs import workload
from advisor.shell.cli import main

from conftest import ROOT

TRANSCRIPTS = sorted((ROOT / "transcripts").glob("*.yaml"))


def drive(dlg, keys: str, *later: str):
    """Type `keys` into the real prompt-toolkit session (then each of `later` after a pause, for
    keys that must wait for the application, such as Enter after Tab completion); returns
    (exit code, lines shown). Running out of keys acts as Ctrl-D."""
    shown = []
    with create_pipe_input() as inp:
        inp.send_text(keys)

        def type_later():
            for chunk in later:
                time.sleep(0.5)
                inp.send_text(chunk)
            time.sleep(0.2)
            inp.close()

        typist = threading.Thread(target=type_later)
        typist.start()
        with create_app_session(input=inp, output=DummyOutput()):
            code = dialogue.run_interactive(dlg, write=shown.append)
        typist.join()
    return code, shown


ONE_USER = "inference\r" + "gpt-oss-120b\r" + "\r" * 5 + "1\r" + "\r" * 6 + "\r"   # through 'budget' (the service level at its preset)


def test_whole_session_to_the_memo(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    code, shown = drive(dlg, ONE_USER + "yes\r" + "md\r" + "\r")
    assert code == 0 and dlg.stage == "done"
    assert any(line.startswith("Recommendation: 1 x NVIDIA RTX PRO 6000 Blackwell 96GB") for line in shown)
    memo, record, transcript = dlg.written
    assert memo.read_text().startswith("# GPU recommendation: gpt-oss-120b-inference")
    assert json.loads(record.read_text())["recommendation"]["gpu"] == "rtx-pro-6000"
    assert yaml.safe_load(transcript.read_text())["decision"]["gpu"] == "rtx-pro-6000"


def test_wrong_answers_are_refused_in_place_with_the_range(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    keys = "sell\r" + "serve\r" + "gpt-oss-120b\r" + "\r\r" + "-5\r" + "\x15" + "2e9\r" + "\x15" + "8192\r"
    code, shown = drive(dlg, keys)
    # refusals wrap at word boundaries like the help: compare the words
    assert ("'sell' is not one of the choices. Accepted: inference, training, fine-tuning (also serve, train, finetune "
            "and more).") in " ".join(" ".join(shown).split())
    assert all(len(line) <= dlg.width for line in shown if "Accepted" in line or line.startswith("    "))
    said = " ".join(" ".join(shown).split())
    assert ("Must be at least 1 tokens (got -5). Accepted: a whole number from 1 to 10,000,000 tokens "
            "(e.g. 8192, 8k, 128K).") in said
    assert "Must be at most 10,000,000 tokens (got 2,000,000,000)" in said
    assert dlg.answers["context_tokens"] == 8192          # accepted after the refusals, no restart
    assert dlg.answers["mode"] == "inference"


def test_help_why_and_back(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    keys = "inference\r" + "?\r" + "why\r" + "kimi-k3\r" + "back\r" + "\r"
    code, shown = drive(dlg, keys)
    text = "\n".join(shown)
    assert "Tab completes catalog ids" in text                      # ? shows the help
    assert "rule(s) use this answer" in text and "Memory-heavy inference belongs on H200" in text   # why
    assert "Back to: Which model?" in text
    assert dlg.answers["model"] == "kimi-k3"                        # Enter kept the answer given before `back`
    assert dlg.current().id == "task"


def test_ctrl_c_saves_and_resume_continues(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    code, shown = drive(dlg, "inference\rllama-3.1-8b\r\x03")
    assert code == 130
    resume = tmp_path / dialogue.RESUME_FILE
    assert "saved to" in shown[-1] and resume.exists()
    again = dialogue.Dialogue.resume(resume, Setup(catalog, kb), out_dir=tmp_path)
    assert again.answers == {"mode": "inference", "model": "llama-3.1-8b"}
    assert again.current().id == "task"
    code, _ = drive(again, "\r" * 6 + "32\r" + "\r" * 7 + "yes\rtext\r\r")
    assert code == 0 and again.written[0].name == "llama-3.1-8b-inference-memo.txt"
    assert [s["question"] for s in again.steps][:2] == ["mode", "model"]     # the transcript keeps the first part


def test_ctrl_d_saves_too(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    code, shown = drive(dlg, "training\r\x04")
    assert code == 1 and (tmp_path / dialogue.RESUME_FILE).exists()
    assert yaml.safe_load((tmp_path / dialogue.RESUME_FILE).read_text())["answers"] == {"mode": "training"}


def test_completion_of_model_ids(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    drive(dlg, "inference\r", "deepseek-v", "\t", "\r")   # Tab once the text is in, as a person types
    assert dlg.answers["model"] == "deepseek-v3"


def test_questions_asked_only_when_relevant(catalog, kb, tmp_path):
    inference = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    training = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    for d, mode in ((inference, "inference"), (training, "training")):
        asked = []
        d.submit(mode)
        while d.stage == "questions":
            asked.append(d.current().id)
            d.submit("")
        if mode == "inference":
            assert "optimizer" not in asked and "concurrency" in asked and "params_b" not in asked
        else:
            assert "optimizer" in asked and "concurrency" not in asked and "prompt_tokens" not in asked
    custom = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    custom.submit("inference")
    custom.submit("other")
    assert custom.current().id == "params_b"       # architecture questions only for a model not in the catalog


def test_garbage_overlong_and_control_characters(catalog, kb):
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    assert "too long" in d.submit("x" * 500)[0]
    assert "control characters" in d.submit("infer\x1b[2Jence")[0]
    assert d.current().id == "mode"
    d.submit("inference")
    for q in ("gpt-oss-120b",):
        d.submit(q)
    for garbage in ("", "\t", "🙂", "1e999", "NaN", "-0", "9" * 40):
        d.submit(garbage)      # never raises; the dialogue stays usable
    assert d.stage == "questions"


def test_from_file_asks_only_what_is_missing(tmp_path, monkeypatch, capsys):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: gpt-oss-120b\nconcurrency: 64\ncontext_tokens: 8192\n")
    monkeypatch.setenv("GPU_ADVISOR_PIPE", "1")
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * 14 + "yes\nmd\n\n"))
    assert main(["ask", "--from", str(w), "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Which model?" not in out and "How many sequences" not in out and "Prompt tokens per request?" in out
    assert (tmp_path / "gpt-oss-120b-inference-memo.md").exists()


def test_non_interactive_use_is_refused_politely(capsys, monkeypatch):
    monkeypatch.delenv("GPU_ADVISOR_PIPE", raising=False)
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    assert main(["ask"]) == 2
    assert "use `gpu-advisor recommend WORKLOAD.yaml`" in capsys.readouterr().err


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_transcript_replays(catalog, kb, path):
    same, diffs = dialogue.replay(path, Setup(catalog, kb))
    assert same, diffs


def test_at_least_twelve_transcripts_cover_the_seeds():
    names = {p.stem for p in TRANSCRIPTS}
    assert len(names) >= 12
    assert {"gpt-oss-120b-one-user", "gpt-oss-120b-many-users", "kimi-k3-serving", "70b-full-fine-tuning",
            "13b-full-fine-tuning", "7b-lora", "128k-context-training", "moe-training", "video-diffusion-training",
            "rlhf", "import-restricted-inference", "on-prem-no-liquid-5kw", "small-image-classification",
            "high-concurrency-short-text"} <= names


def test_replay_shows_the_difference_when_the_decision_changed(tmp_path, capsys):
    t = yaml.safe_load((ROOT / "transcripts" / "gpt-oss-120b-many-users.yaml").read_text())
    t["decision"]["gpu"] = "h200-sxm"
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(t))
    assert main(["replay", str(f)]) == 1
    assert "decision gpu: transcript 'h200-sxm', now 'h100-sxm'" in capsys.readouterr().out


def test_replay_shows_the_difference_when_the_questions_changed(tmp_path, capsys):
    t = yaml.safe_load((ROOT / "transcripts" / "7b-lora.yaml").read_text())
    t["steps"][2]["question"] = "a-question-we-removed"
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(t))
    assert main(["replay", str(f)]) == 1
    assert "step 3: asked 'task', the transcript has 'a-question-we-removed'" in capsys.readouterr().out


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed (.ci/run installs it)")
def test_real_terminal_under_tmux(tmp_path):
    exe = Path(sys.executable).with_name("gpu-advisor")
    session = f"gpu-advisor-test-{os.getpid()}"
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GPU_ADVISOR_PIPE", None)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "50", "-c", str(tmp_path),
                    f"{exe} ask; sleep 30"], check=True, env=env)

    def screen():
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout

    def wait_for(text, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if text in screen():
                return
            time.sleep(0.2)
        raise AssertionError(f"never saw {text!r}:\n{screen()}")

    def send(*keys):
        subprocess.run(["tmux", "send-keys", "-t", session, *keys], check=True)

    try:
        wait_for("What will the GPUs do?")
        send("inference", "Enter")
        wait_for("Which model?")
        send("gpt-oss-120b", "Enter")
        for _ in range(5):
            send("Enter")
        wait_for("How many sequences")
        send("64", "Enter")
        for _ in range(7):              # latency, the service level, import ... budget
            send("Enter")
        wait_for("Recommend with these answers?")
        send("yes", "Enter")
        wait_for("Memo format?")
        send("md", "Enter")
        wait_for("Write the memo to?")
        send("Enter")
        wait_for("Wrote the memo to")
        assert "Recommendation: 2 x NVIDIA H100 SXM 80GB" in screen()
        assert (tmp_path / "gpt-oss-120b-inference-memo.md").read_text().startswith("# GPU recommendation")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_final_prompts_take_help_back_and_quit(catalog, kb, tmp_path):
    d = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    d.submit("inference")
    d.submit("gpt-oss-120b")
    while d.current().id not in ("confirm",):
        d.submit("")
    assert d.stage == "confirm"
    assert "Did you mean 'edit concurrency'?" in d.submit("edit concurency")[0]
    assert d.submit("?")[0].startswith("  yes: recommend now")
    d.submit("yes")
    assert d.stage == "format"
    assert "self-contained page" in d.submit("?")[0]
    d.submit("back")
    assert d.stage == "confirm"
    d.submit("yes")
    d.submit("md")
    assert d.stage == "path" and "decision record" in d.submit("?")[0]
    # no memo is written, but the answers are kept (issue 42: every exit path keeps what the user typed)
    said = d.submit("quit")
    assert d.stage == "quit" and said[0].startswith("  Leaving without writing a memo; your answers are saved to ")
    assert [p.name for p in tmp_path.iterdir()] == [".gpu-advisor-resume.yaml"]
    resumed = dialogue.Dialogue.resume(tmp_path / ".gpu-advisor-resume.yaml", Setup(catalog, kb), out_dir=tmp_path)
    assert resumed.answers["model"] == "gpt-oss-120b" and resumed.current().id == "confirm"


def test_why_leaves_out_rules_for_another_mode(catalog, kb):
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    d.submit("inference")
    text = "\n".join(d.submit("why"))          # the model question
    assert "Memory-heavy inference belongs on H200" in text
    assert "LoRA on a small model" not in text and "H200 pays off for memory-heavy training" not in text


def test_written_files_are_readable_by_colleagues(catalog, kb, tmp_path):
    import stat
    d = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    d.submit("inference")
    d.submit("gpt-oss-20b")
    while d.stage not in ("done", "quit"):
        d.submit("")
    umask = os.umask(0)
    os.umask(umask)
    for p in d.written:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask


# --- a dialogue that understands people -------------------------------------------------------------------

from advisor.inputs.units import UnitError, parse_number  # noqa: E402


@pytest.mark.parametrize("text, unit, value", [
    ("70b", "billions", 70), ("27B", "billions", 27), ("27", "billions", 27), ("1.5T", "billions", 1500),
    ("60M", "billions", 0.06), ("27 billion", "billions", 27),
    ("4k", "context", 4096), ("128K", "context", 131072), ("8192", "context", 8192), ("1M", "context", 1048576),
    ("4k", "tokens", 4000), ("60M", "tokens", 60_000_000), ("1.5T", "tokens", 1_500_000_000_000),
    ("2B", "tokens", 2_000_000_000), ("134e9", "tokens", 134_000_000_000), ("1,000", "tokens", 1000),
    ("60 million", "tokens", 60_000_000), ("2k tokens", "tokens", 2000),
    ("$20", "usd_per_hour", 20), ("20/h", "usd_per_hour", 20), ("$20/h", "usd_per_hour", 20),
    ("20 USD/h", "usd_per_hour", 20), ("$12.50 per hour", "usd_per_hour", 12.5), ("$2k", "usd_per_hour", 2000),
    ("5", "kw", 5), ("5kW", "kw", 5), ("5000 W", "kw", 5), ("7.5 kw", "kw", 7.5),
    ("64", "count", 64), ("1k", "count", 1000), ("256 users", "count", 256),
    ("0.5", "share", 0.5), ("50%", "share", 0.5), ("50", "share", 0.5), ("12h/day", "share", 0.5),
    ("12 hours a day", "share", 0.5), ("24x7", "share", 1.0), ("24/7", "share", 1.0), ("8x5", "share", 40 / 168),
])
def test_numbers_with_units(text, unit, value):
    got = parse_number(text, unit)
    assert got == pytest.approx(value) and type(got) in (int, float)


@pytest.mark.parametrize("text, unit", [("lots", "count"), ("4x", "tokens"), ("$", "usd_per_hour"), ("", "count"),
                                        ("5 MW?", "kw"), ("1e999", "tokens"), ("25h/day", "share"), ("24x8", "share"),
                                        ("half", "share"), ("150%", "share"), ("101", "share"), ("-5%", "share")])
def test_numbers_that_are_not(text, unit):
    with pytest.raises(UnitError):
        parse_number(text, unit)


def _at(catalog, kb, qid, *before, **answers):
    """A dialogue at question `qid`: `before` typed first, then Enter (or `answers[id]`) at each question."""
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=80)
    for answer in before:
        d.submit(answer)
    while d.current().id != qid:
        assert d.stage == "questions", f"never asked {qid}"
        d.submit(answers.get(d.current().id, ""))
    return d


@pytest.mark.parametrize("typed, mode", [
    ("serve", "inference"), ("serving", "inference"), ("inference", "inference"), ("Inference", "inference"),
    ("train", "training"), ("pretrain", "training"), ("training", "training"),
    ("finetune", "fine-tuning"), ("fine tune", "fine-tuning"), ("Fine-Tune", "fine-tuning"), ("sft", "fine-tuning"),
])
def test_mode_synonyms(catalog, kb, typed, mode):
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    assert d.submit(typed) == [] and d.answers["mode"] == mode


@pytest.mark.parametrize("typed, stage", [("fsdp", 3), ("FSDP", 3), ("zero-3", 3), ("ZeRO 2", 2), ("ddp", 0), ("1", 1)])
def test_zero_stage_takes_fsdp_and_zero_names(catalog, kb, typed, stage):
    d = _at(catalog, kb, "zero_stage", "fine-tuning", "llama-3.1-8b")
    assert d.submit(typed) == [] and d.answers["zero_stage"] == stage


def test_enter_at_zero_stage_and_checkpointing_leaves_them_to_the_planner(catalog, kb):
    d = _at(catalog, kb, "activation_checkpointing", "fine-tuning", "llama-3.1-8b")
    assert d.current().text.endswith("[the planner's choice] ")
    d.submit("")
    assert d.current().id == "zero_stage" and d.current().text.endswith("[the planner's choice] ")
    d.submit("")
    assert "zero_stage" not in d.answers and "activation_checkpointing" not in d.answers
    data = d.workload_data()
    assert "zero_stage" not in data and "activation_checkpointing" not in data      # the planner decides
    w = workload.parse(data, catalog, "dialogue")
    assert "zero_stage" in w.defaults and "activation_checkpointing" in w.defaults
    # the confirmation names the answer in words, on a numbered line (`edit N`)
    assert any(line.endswith(". ZeRO stage (sharding): the planner's choice") for line in d.summary())


@pytest.mark.parametrize("qid, typed, field, value, before", [
    ("params_b", "27B", "model.params_b", 27.0, ("inference", "other")),
    ("params_b", "70b", "model.params_b", 70.0, ("inference", "other")),
    ("params_b", "1.5T", "model.params_b", 1500.0, ("inference", "other")),
    ("context_tokens", "4k", "context_tokens", 4096, ("inference", "llama-3.1-8b")),
    ("context_tokens", "128K", "context_tokens", 131072, ("inference", "llama-3.1-8b")),
    ("training_tokens", "60M", "training_tokens", 60e6, ("fine-tuning", "llama-3.1-8b")),
    ("training_tokens", "1.5T", "training_tokens", 1.5e12, ("training", "llama-3.1-8b")),
    ("budget_usd_per_hour", "$20", "constraints.budget_usd_per_hour", 20.0, ("inference", "llama-3.1-8b")),
    ("budget_usd_per_hour", "20/h", "constraints.budget_usd_per_hour", 20.0, ("inference", "llama-3.1-8b")),
    ("utilisation", "12h/day", "utilisation", 0.5, ("inference", "llama-3.1-8b")),
])
def test_dialogue_takes_units(catalog, kb, qid, typed, field, value, before):
    d = _at(catalog, kb, qid, *before)
    assert d.submit(typed) == []
    assert d.answers[field] == value and type(d.answers[field]) is type(value)


def test_a_share_of_the_month_reads_back_in_percent_and_hours_and_over_100_is_refused(catalog, kb):
    # left in session 12: 8x5 read back as "utilisation: 0.238095", and 150% was passed on to fail as "at most 1"
    d = _at(catalog, kb, "utilisation", "inference", "llama-3.1-8b")
    said = d.submit("150%")
    assert any("'150%': a share of the month is from 0 to 100% (24x7)" in x for x in said) and d.current().id == "utilisation"
    assert d.submit("8x5") == []
    # 40 of 168 hours x 730 h, with what was typed beside it
    assert any(line.endswith(". Share of the month in use: 24% of the month (174 h)  (typed: 8x5)") for line in d.summary())


def test_help_is_plain_words_without_seed_codes(catalog, kb):
    import re
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=80)
    code = re.compile(r"\b[KTCAW]\d\d\b|seed \d{3}")
    seen = set()
    for mode in ("inference", "fine-tuning"):
        d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=80)
        d.submit(mode)
        d.submit("other")
        d.answers["constraints.deployment"] = "on-prem"
        for q in d.questions:
            text = "\n".join(d.help(q))
            assert not code.search(text), (q.id, text)
            seen.add(q.id)
    assert len(seen) == len(d.questions)
    terms = "\n".join(line for q in d.questions for line in d.help(q))
    for term in ("KV cache:", "Micro-batch:", "ZeRO:", "PyTorch FSDP is ZeRO stage 3", "Activation checkpointing:"):
        assert term in terms
    d.stage = "confirm"
    assert "Tensor parallelism (TP):" in "\n".join(d.submit("?"))
    assert code.search("\n".join(d.why(d.questions[1])))          # the IDs stay in `why`


def test_help_wraps_at_the_terminal_width(catalog, kb):
    for width in (50, 80, 120):
        d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=width)
        zero = next(q for q in d.questions if q.id == "zero_stage")
        lines = d.help(zero)
        assert max(len(line) for line in lines) < width
        words = " ".join(lines).split()
        assert "PyTorch" in words and "FSDP" in words           # wrapped between words, never inside one


def test_question_mark_at_the_model_lists_the_catalog_with_sizes(catalog, kb):
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=120)
    d.submit("inference")
    text = "\n".join(d.submit("?"))
    assert "kimi-k3: 2.8T (104B active)" in text and "llama-3.1-70b: 70.6B" in text and "mistral-7b: 7.24B" in text
    assert all(m in text for m in catalog.models)


def test_liquid_cooling_on_premises_has_no_default(catalog, kb):
    d = _at(catalog, kb, "liquid_cooling", "inference", "llama-3.1-70b", deployment="on premises")
    assert d.answers["constraints.deployment"] == "on-prem"
    assert "[" not in d.current().text                          # no [yes] to accept blindly
    assert "An answer is needed" in d.submit("")[0]
    assert d.submit("no") == [] and d.answers["constraints.liquid_cooling"] is False


def test_resume_file_is_removed_when_the_session_completes(catalog, kb, tmp_path):
    dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
    code, _ = drive(dlg, "inference\rllama-3.1-8b\r\x03")
    resume = tmp_path / dialogue.RESUME_FILE
    assert code == 130 and resume.exists()
    again = dialogue.Dialogue.resume(resume, Setup(catalog, kb), out_dir=tmp_path)
    code, shown = drive(again, "\r" * 6 + "32\r" + "\r" * 7 + "yes\rtext\r\r")
    assert code == 0 and again.written
    assert not resume.exists()                                  # nothing left behind to resume by mistake
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in again.written)


def test_service_level_asked_in_plain_words_with_presets_and_help(catalog, kb):
    d = _at(catalog, kb, "service_level", "inference", "llama-3.1-70b")
    assert d.current().text.startswith("How fast must each user's answer come? (standard, fast, or e.g. '20 tokens/s, 1 s')")
    help_text = " ".join(" ".join(d.submit("?")).split())
    assert "tokens per second per user" in help_text and "seconds to the first token" in help_text
    assert "the first token within 0.5 s and then 33 tokens/s per user up to 20B parameters" in help_text
    assert "0.45 s and 25 tokens/s up to 150B, 4.5 s and 12.5 tokens/s beyond" in help_text
    assert "fast: within 0.45 s, then 33 tokens/s per user (the tightest of those limits)" in help_text
    assert "is not a preset or a speed" in " ".join(d.submit("quick"))
    assert d.submit("20 tokens/s, 1 s") == []
    assert d.answers["service_level"] == {"tpot_ms": 50.0, "ttft_ms": 1000.0}
    assert d.workload_data()["latency"] == {"tpot_ms": 50.0, "ttft_ms": 1000.0}
    assert "Speed for each user: 20 tokens/s per user, first token within 1 s" in "\n".join(
        _at(catalog, kb, "confirm", "inference", "llama-3.1-70b", service_level="20, 1").summary())
    # presets: standard (Enter) leaves the catalog's default for the model's class in force; fast is the tightest
    # of those limits, never looser than standard (review 14: 40 ms had been looser than an 8B's default 30 ms)
    d = _at(catalog, kb, "service_level", "inference", "llama-3.1-70b")
    d.submit("fast")
    assert d.workload_data()["latency"] == {"ttft_ms": 450.0, "tpot_ms": 30.0}
    classes = catalog.efficiency["service_levels"]["interactive"]["classes"]
    assert 450 == min(c["ttft_ms"]["v"] for c in classes) and 30 == min(c["tpot_ms"]["v"] for c in classes)
    d = _at(catalog, kb, "service_level", "inference", "llama-3.1-70b")
    d.submit("")
    assert "service_level" not in d.answers and d.workload_data().get("latency", "interactive") == "interactive"
    # batch use is not asked
    d = _at(catalog, kb, "import_restricted", "inference", "llama-3.1-70b", latency="batch")
    assert "service_level" not in d.asked


def test_result_shows_speed_per_user_and_first_token_wrapped_at_word_boundaries(catalog, kb):
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=120)
    answers = {"model": "llama-3.1-70b", "precision": "fp8", "concurrency": "32", "service_level": "20 tokens/s, 1 s"}
    d.submit("inference")
    while d.current().id != "confirm":
        d.submit(answers.get(d.current().id, ""))
    shown = d.submit("yes")
    rec = d.decision.record
    c = next(k for k in rec["estimate"]["candidates"] if k["gpu"] == rec["recommendation"]["gpu"])
    assert rec["service_level"]["tpot_ms"] == 50.0 and rec["service_level"]["stated"] is True
    # the speed to the tenth, as the level stated beside it (review 17: "33" beside "asks 33.3" read as a miss)
    line = (f"  each user: {per_user_rate(c['tokens_per_s_per_user'])} tokens/s, first token in {c['ttft_ms'] / 1000:,.2g} s "
            "(the service level asks 20 tokens/s and 1 s)")
    # ranked per million output tokens: 70B FP8 (70 GB) with the KV of 32 requests of 2,000 tokens fits one
    # H200, inside the 20 tokens/s and 1 s asked
    assert rec["recommendation"]["gpu"] == "h200-sxm" and rec["recommendation"]["count"] == 1
    assert line in shown and line == "  each user: 30.7 tokens/s, first token in 0.22 s (the service level asks 20 tokens/s and 1 s)"
    assert all(len(s) <= 120 for s in shown)
    # no word is cut: every wrapped line ends on a whole word of the unwrapped summary
    from advisor.shell.report import summary_text
    words = set(summary_text(rec, catalog).split())
    assert all(s.split()[-1] in words for s in shown if s.strip() and not s.startswith("  each user"))


def test_the_confirmation_reads_large_numbers_in_words():
    # the reviewer's QLoRA session showed "training_tokens: 1e+08" (Python's float format)
    from advisor.shell.dialoguehelp import show as _show
    assert _show(1e8) == "100 million" and _show(134e9) == "134 billion" and _show(0.5) == "0.5" and _show(True) == "yes"


# --- issue 42: the dialogue's walls -------------------------------------------------------------------------

@pytest.mark.parametrize("typed, hours", [("48h", 48.0), ("2 days", 48.0), ("90 min", 1.5), ("720", 720.0), ("1.5 weeks", 252.0)])
def test_a_deadline_is_taken_in_hours_days_or_minutes(catalog, kb, typed, hours):
    # "48h" and "2 days" had been refused: "unknown unit 'h'"
    d = _at(catalog, kb, "deadline_hours", "fine-tuning", "llama-3.1-8b")
    assert d.submit(typed) == []
    assert d.answers["constraints.deadline_hours"] == hours


def _asked(d):
    """The questions asked from here to the confirmation, Enter at each ('no' where an answer is needed)."""
    ids = []
    for _ in range(60):
        if d.stage != "questions" or d.current().id == "confirm":
            return ids
        qid = d.current().id
        ids.append(qid)
        if d.submit("") and d.current().id == qid:
            d.submit("no")
    raise AssertionError(f"the questions did not end: {ids}")


def test_owned_hardware_is_asked_how_busy_not_a_budget_per_hour(catalog, kb):
    # on premises 8x5 went to the month's utilisation while the owning cost took "busy 70% (the default)", and a
    # budget per hour was asked for hardware being bought
    d = _at(catalog, kb, "deployment", "inference", "llama-3.1-8b")
    d.submit("on-prem")
    asked = _asked(d)
    assert "busy_share" in asked and "utilisation" not in asked and "budget_usd_per_hour" not in asked
    d = _at(catalog, kb, "busy_share", "inference", "llama-3.1-8b", deployment="on-prem", liquid_cooling="no")
    assert d.submit("8x5") == []
    assert d.answers["constraints.busy_share"] == pytest.approx(40 / 168)
    assert d.workload_data()["constraints"]["busy_share"] == pytest.approx(40 / 168) and "utilisation" not in d.workload_data()
    # rented: the month's share and the budget, no busy share
    d = _at(catalog, kb, "deployment", "inference", "llama-3.1-8b")
    d.submit("cloud")
    asked = _asked(d)
    assert "utilisation" in asked and "budget_usd_per_hour" in asked and "busy_share" not in asked


def test_the_busy_share_default_said_is_the_catalogs(catalog):
    q = next(q for q in dialogue.load_questions() if q.id == "busy_share")
    assert q.unset.startswith(f"{catalog.purchase['site']['utilisation']['v']:.0%} ")


def test_a_training_job_is_not_asked_whether_its_load_is_steady(catalog, kb):
    d = _at(catalog, kb, "mode")
    d.submit("training")
    d.submit("llama-3.1-8b")
    assert "load" not in _asked(d)


def test_the_confirmation_names_answers_in_words_on_numbered_lines_and_edit_takes_the_number(catalog, kb):
    d = _at(catalog, kb, "confirm", "inference", "llama-3.1-8b", concurrency="1k", service_level="30 tokens/s, 0.5 s")
    lines = d.summary()
    assert lines[0] == "Your workload (edit N to change the answer on line N):"
    assert "  1. What the GPUs do: inference" in lines and "  2. Model: llama-3.1-8b" in lines
    conc = next(line for line in lines if "Sequences at once" in line)
    assert conc.endswith("Sequences at once (concurrent users or batch size): 1000  (typed: 1k)")
    assert any(line.endswith("Speed for each user: 30 tokens/s per user, first token within 0.5 s") for line in lines)
    assert not any("service_level" in line or "concurrency:" in line for line in lines)      # no raw field ids
    assert "edit N, the number of a line" in d.current().text
    n = conc.split(".")[0].strip()
    assert "1 to" in d.submit("edit 99")[0]
    assert d.submit(f"edit {n}") == [] and d.current().id == "concurrency"


def test_a_service_level_reads_back_rounded(catalog, kb):
    # a service level of 33.33 ms per token read back as "30.0003 tokens/s per user"
    d = _at(catalog, kb, "confirm", "inference", "llama-3.1-8b")
    d.answers["service_level"] = {"tpot_ms": 33.33, "ttft_ms": 500.0}
    d.asked.append("service_level") if "service_level" not in d.asked else None
    assert any(line.endswith("Speed for each user: 30 tokens/s per user, first token within 0.5 s") for line in d.summary())


def test_a_misspelt_choice_gets_did_you_mean_as_in_a_file(catalog, kb):
    d = _at(catalog, kb, "mode")
    said = " ".join(d.submit("inferance"))
    assert "'inferance' is not one of the choices. Did you mean 'inference'?" in said and d.current().id == "mode"
