"""Workload kinds (issue 43 item 2, issue 44 item 1): every task the schema accepts is modelled as one
kind or refused at the field with the kinds that are; a kind's fields are refused on another kind; the
shared path reads the kind's declaration and never tests the kind by name."""
import ast
from pathlib import Path

import pytest

from advisor import kinds
from advisor.base import yamlio
from advisor.base.errors import InputError
from advisor.inputs import kinds as kind_specs
from advisor.inputs.workload import FIELDS, parse
from advisor.shell.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _parse(text, catalog):
    return parse(yamlio.loads(text, "w.yaml"), catalog, "w.yaml")


@pytest.mark.parametrize("text, kind", [
    ("mode: inference\nmodel: llama-3.1-8b\n", "llm-serving"),
    ("mode: training\nmodel: llama-3.1-8b\ntraining_tokens: 1e9\n", "llm-training"),
    ("mode: fine-tuning\nmodel: llama-3.1-8b\nmethod: lora\n", "llm-training"),
    ("mode: fine-tuning\nmodel: llama-3.1-8b\ntask: rlhf\n", "rl-post-training"),
    ("mode: fine-tuning\nmodel: llama-3.1-8b\nmethod: grpo\nsamples_per_prompt: 8\n", "rl-post-training"),
    # a diffusion transformer's or a ViT's training is a transformer's over latent or patch tokens
    ("mode: training\nmodel: {params_b: 5, layers: 28, hidden_size: 3072}\ntask: video-diffusion\n", "llm-training"),
    ("mode: training\nmodel: {params_b: 0.022, layers: 12, hidden_size: 384}\ntask: image-classification\n", "llm-training"),
])
def test_each_workload_is_of_one_kind(catalog, text, kind):
    w = _parse(text, catalog)
    assert w.kind == kind
    assert kinds.of(w).spec.name == kind            # the package the advise path calls models that kind


def test_the_old_video_task_is_read_as_video_generation(catalog):
    w = _parse("mode: training\nmodel: {params_b: 5, layers: 28, hidden_size: 3072}\ntask: video-diffusion\n", catalog)
    assert w.task == "video-generation"


@pytest.mark.parametrize("text, message", [
    ("mode: inference\nmodel: llama-3.1-8b\ntask: other\n", "w.yaml:3: task: other is not modelled"),
    ("mode: inference\nmodel: llama-3.1-8b\ntask: multimodal\n", "w.yaml:3: task: multimodal is not modelled: a vision-language model is served as task: llm"),
    ("mode: inference\nmodel: llama-3.1-8b\ntask: image-classification\n", "w.yaml:3: task: serving an image classifier is not modelled"),
    ("mode: training\nmodel: llama-3.1-8b\nmethod: grpo\n", "w.yaml:3: method: RL post-training (grpo) is mode: fine-tuning"),
    ("mode: inference\nmodel: llama-3.1-8b\nsteps: 28\n", "w.yaml:3: steps: applies to image generation and video generation only; this workload is LLM serving"),
    ("mode: fine-tuning\nmodel: llama-3.1-8b\nmethod: lora\nsamples_per_prompt: 8\n", "w.yaml:4: samples_per_prompt: applies to RL post-training only; this workload is training or fine-tuning"),
    ("mode: inference\nmodel: llama-3.1-8b\nresolution: 1024 by 1024\n", "w.yaml:3: resolution: must be WIDTHxHEIGHT in pixels"),
])
def test_what_is_not_modelled_is_refused_at_its_field(catalog, text, message):
    with pytest.raises(InputError) as exc:
        _parse(text, catalog)
    assert message in str(exc.value)


def test_a_refused_task_exits_2_with_one_line(tmp_path, capsys):
    p = tmp_path / "w.yaml"
    p.write_text("mode: inference\nmodel: llama-3.1-8b\ntask: other\n")
    assert main(["recommend", str(p), "--format", "json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "task: other is not modelled" in err[0] and "Traceback" not in err[0]


def test_every_task_the_schema_takes_is_modelled_or_refused(catalog):
    """The enum the schema accepts, each task in each mode: a kind whose package the advise path can
    call, or an InputError naming a field (never an unmodelled kind reaching the estimator)."""
    for task in FIELDS["task"].choices + tuple(kind_specs.REFUSED_TASKS) + tuple(kind_specs.TASK_ALIASES):
        for mode in ("inference", "training", "fine-tuning"):
            text = f"mode: {mode}\nmodel: llama-3.1-8b\ntask: {task}\n"
            try:
                w = _parse(text, catalog)
            except InputError as exc:
                # an image or video task takes a diffusion model: an LLM is refused at `model`
                diffusion = kind_specs.TASK_ALIASES.get(task, task) in kind_specs.DIFFUSION_KINDS and mode == "inference"
                assert exc.problems[0].field in ("task", "method") + (("model",) if diffusion else ()), (task, mode, str(exc))
                continue
            assert kind_specs.KINDS[w.kind].modelled and w.kind in kinds.PACKAGES, (task, mode, w.kind)


def test_a_kind_declares_its_goal_unit_and_time(catalog):
    serve = _parse("mode: inference\nmodel: llama-3.1-8b\n", catalog).kind_spec
    train = _parse("mode: training\nmodel: llama-3.1-8b\ntraining_tokens: 1e9\n", catalog).kind_spec
    assert (serve.goal, serve.time_field, serve.job) == ("service level", "tpot_ms", False)
    assert (train.goal, train.time_field, train.job) == ("deadline", "training_hours", True)


def test_the_judgement_never_tests_the_kind_or_task_by_name():
    """decision, record and facts read the workload's KindSpec; a comparison of `kind` or `task` with a
    literal in the judgement or the shell would be the shared path testing the kind."""
    found = []
    for path in list((ROOT / "advisor" / "judgement").rglob("*.py")) + list((ROOT / "advisor" / "shell").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            left = node.left if isinstance(node, ast.Compare) else None
            owner = left.value if isinstance(left, ast.Attribute) and left.attr in ("kind", "task") else None
            of_workload = (isinstance(owner, ast.Name) and owner.id in ("w", "workload")) or \
                (isinstance(owner, ast.Attribute) and owner.attr == "workload")
            if of_workload and any(isinstance(c, (ast.Constant, ast.Tuple, ast.List, ast.Set)) for c in node.comparators):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []
