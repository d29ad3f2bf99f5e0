"""A model named by one of its releases (the Hugging Face id a team deploys: Llama-3.1-8B-Instruct,
Qwen3-235B-A22B-Instruct-2507, DeepSeek-V3-0324) is read as the catalog architecture it is a release of,
and the workload says so; a version or precision in the name is not a release word (Mistral v0.3 has a
longer context, an FP8 checkpoint other bytes), so those names stay unknown."""
import pytest

from advisor.base.errors import InputError
from advisor.inputs import workload
from advisor.inputs.names import norm, release_of
from advisor.shell.cli import main


@pytest.mark.parametrize("name, model, off", [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", "'instruct' weights; publisher 'meta-llama'"),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b", "'instruct' weights; publisher 'meta-llama'"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b", "'instruct-2507' weights; publisher 'qwen'"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3", "'0324' weights; publisher 'deepseek-ai'"),
    ("google/gemma-2-9b-it", "gemma-2-9b", "'it' weights; publisher 'google'"),
    ("meta-llama/Llama-2-70b-chat-hf", "llama-2-70b", "'chat-hf' weights; publisher 'meta-llama'"),
    ("mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b", "'instruct' weights; publisher 'mistralai'"),
])
def test_a_release_name_is_read_as_its_architecture_and_said_so(catalog, name, model, off):
    w = workload.parse({"mode": "inference", "model": name}, catalog, "w.yaml")
    assert w.model.id == model
    assert w.notes[0] == (f"model: '{name}' is read as {model} ({catalog.models[model].name}), the architecture it is a "
                          f"release of ({off}): memory and speed are that model's; give the release's config.json as "
                          "the model if its architecture or context differs")


def test_an_fp8_checkpoint_is_refused_with_how_to_ask_for_it(catalog):
    # its weights are 1 byte a parameter: read as the BF16 architecture it would be sized twice too large
    for name, model in (("Qwen/Qwen3-30B-A3B-FP8", "qwen3-30b-a3b"), ("nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b")):
        with pytest.raises(InputError, match=f"unknown model '{name}'; its FP8 weights are model: {model} with precision: fp8"):
            workload.parse({"mode": "inference", "model": name}, catalog, "w.yaml")


@pytest.mark.parametrize("name", ["mistralai/Mistral-7B-Instruct-v0.3", "llama3.1:8b", "instruct", "foo-fp8"])
def test_a_version_or_precision_is_not_a_release_word(catalog, name):
    with pytest.raises(InputError, match="unknown model"):
        workload.parse({"mode": "inference", "model": name}, catalog, "w.yaml")
    index = {norm(n): m.id for m in catalog.models.values() for n in (m.id, m.name, *m.aliases)}
    assert release_of(name, index) is None


def test_a_catalog_name_or_alias_itself_carries_no_note(catalog):
    for name in ("llama-3.1-8b", "mistralai/Mistral-Large-Instruct-2407"):       # the second is the model's own hf_repo
        assert workload.parse({"mode": "inference", "model": name}, catalog, "w.yaml").notes == ()


def test_the_memo_and_the_dialogue_take_a_release_name(tmp_path, capsys, catalog, kb):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: meta-llama/Llama-3.1-8B-Instruct\nconcurrency: 8\n")
    assert main(["recommend", str(f)]) == 0
    out = capsys.readouterr().out
    assert "is read as llama-3.1-8b (Meta" in out and "Meta Llama 3.1 8B" in out
    from advisor.judgement.advise import Setup
    from advisor.shell import dialogue
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True, width=80)
    d.submit("inference")
    assert d.submit("meta-llama/Llama-3.1-8B-Instruct") == [] and d.answers["model"] == "llama-3.1-8b"
