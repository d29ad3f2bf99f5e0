"""The workload fields of the kinds beyond LLM serving and training (issue 44's interface): image and
video generation (`resolution`, `steps`, `frames`, `guidance`, `images_per_request`), offline batch jobs
(`volume`), and RL post-training (`samples_per_prompt`, `prompts_per_step`, `rl_steps`, `reward_model`),
with the reading of the two that are not plain numbers, and the workload's kind read from its fields.
Declared here as data and merged into advisor.inputs.workload's FIELDS, so that validation, the
dialogue and the documentation read one definition.
"""
from __future__ import annotations

import re

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError
from advisor.inputs import kinds
from advisor.inputs.kinds import DIFFUSION_KINDS, IMAGE, LLM_BATCH, RL, VIDEO
from advisor.inputs.schema import Spec, read_value

INFERENCE = ("inference",)
FINE_TUNING = ("fine-tuning",)

FIELDS: dict[str, Spec] = {
    "resolution": Spec("resolution", "Width x height of each image or frame in pixels (1024x1024; 1280x720); each a multiple of the model's VAE factor times its patch size.", modes=INFERENCE, kinds=DIFFUSION_KINDS),
    "steps": Spec("int", "Denoising steps per image or clip; default: the model's published default.", min=1, max=10_000, unit="steps", modes=INFERENCE, kinds=DIFFUSION_KINDS),
    "frames": Spec("int", "Frames per clip (video generation); default: the model's published default.", min=1, max=100_000, unit="frames", modes=INFERENCE, kinds=(VIDEO,)),
    "guidance": Spec("float", "Classifier-free guidance scale: above 1 the denoiser runs twice per step (with and without the prompt) unless the model is guidance-distilled; 1 or 0: no guidance; default: the model's published default.", min=0, max=100, modes=INFERENCE, kinds=DIFFUSION_KINDS),
    "images_per_request": Spec("int", "Images generated per request (one prompt).", min=1, max=1_000, default=1, unit="images", modes=INFERENCE, kinds=(IMAGE,)),
    "volume": Spec("volume", "An offline batch job's whole volume: {requests: N} (each of prompt_tokens + output_tokens) or {tokens: N} (prompt and output tokens in all, in the workload's prompt:output ratio); with latency: batch, the plan is priced per job and constraints.deadline_hours applies.", modes=INFERENCE, kinds=(LLM_BATCH,)),
    "samples_per_prompt": Spec("int", "RL post-training: responses sampled per prompt (GRPO's group size).", min=1, max=4096, unit="samples", modes=FINE_TUNING, kinds=(RL,)),
    "prompts_per_step": Spec("int", "RL post-training: prompts per optimizer step (global batch = prompts x samples).", min=1, max=1_000_000, unit="prompts", modes=FINE_TUNING, kinds=(RL,)),
    "rl_steps": Spec("int", "RL post-training: optimizer steps in the run.", min=1, max=10_000_000, unit="steps", modes=FINE_TUNING, kinds=(RL,)),
    "reward_model": Spec("model", "RL post-training: the reward model (a catalog model id or release name); absent: a rule-based reward or verifier (no model in memory).", modes=FINE_TUNING, kinds=(RL,)),
}

VOLUME_KEYS = ("requests", "tokens")
_RESOLUTION = re.compile(r"^\s*(\d{1,6})\s*[x×*]\s*(\d{1,6})\s*$")


def read_resolution(raw, col: Collector, line) -> tuple[int, int] | None:
    """`1024x1024` (or [1024, 1024]) as (width, height) in pixels."""
    if isinstance(raw, (list, tuple)) and len(raw) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in raw):
        w, h = raw
    elif isinstance(raw, str) and (m := _RESOLUTION.match(raw)):
        w, h = int(m.group(1)), int(m.group(2))
    else:
        col.add(f"must be WIDTHxHEIGHT in pixels, such as 1024x1024 (got {raw!r})", line, "resolution")
        return None
    if not (64 <= w <= 16384 and 64 <= h <= 16384):
        col.add(f"{w}x{h} is outside 64-16384 pixels a side", line, "resolution")
        return None
    return w, h


def read_volume(raw, col: Collector, line) -> tuple[str, float] | None:
    """`volume: {requests: N}` or `{tokens: N}`: (which, N)."""
    if not isinstance(raw, dict) or len(raw) != 1 or next(iter(raw)) not in VOLUME_KEYS:
        col.add("must be one of {requests: N} or {tokens: N}", line, "volume")
        return None
    key = next(iter(raw))
    n = read_value(Spec("float", "", min=1, max=1e16, unit="requests" if key == "requests" else "tokens"), raw[key],
                   col, f"volume.{key}", yamlio.line_of(raw, key, line))
    return (key, n) if n is not None else None


def read_reward_model(raw, catalog, col: Collector, file: str, line):
    """The reward model by its catalog id or a release name (a figure mapping is not taken: a reward
    model is a catalog model)."""
    if not isinstance(raw, str):
        col.add("must be a catalog model id or release name", line, "reward_model")
        return None
    try:
        return catalog.model_release(raw, "reward_model", file, line)[0]
    except InputError as exc:
        col.problems.extend(exc.problems)
        return None


def read_kind(values: dict, data: dict, col: Collector) -> str | None:
    """The workload's kind from its fields (advisor.inputs.kinds), the refusal of a task the advisor does
    not model, and the old task name read as the new one (a note for the memo)."""
    task = values.get("task")
    if task in kinds.TASK_ALIASES:
        values["task"] = kinds.TASK_ALIASES[task]
    # a volume given but wrong (its own error already said) still makes the workload a batch job, so that
    # the deadline and the other fields are read as that kind's and not refused again as serving's
    volume = values.get("volume") or (data.get("volume") is not None and "volume" in data)
    got = (values.get("mode"), values.get("task"), values.get("method"), values.get("latency"), volume)
    wrong = kinds.problem(*got)
    if wrong:
        col.add(wrong[1], yamlio.line_of(data, wrong[0]), wrong[0])
        return None
    _rl_samples(values, data, col)
    if volume and values.get("latency") != "batch" and values.get("mode") == "inference":
        col.add("a volume is an offline batch job's: give latency: batch with it", yamlio.line_of(data, "volume"), "volume")
    kind = kinds.kind_of(*got)
    if kind == LLM_BATCH and "concurrency" in data and not values.get("concurrency_max"):
        # the sequences in flight of a job are its replicas' largest batches: a fixed number would be shared
        # out over the replicas a deadline adds, and the job would take no less time with more of them
        col.add("an offline batch job runs each replica at the largest batch that fits: give concurrency: max or "
                "leave it out", yamlio.line_of(data, "concurrency"), "concurrency")
    elif kind == LLM_BATCH and values.get("requests_per_s") is not None:
        col.add("an offline batch job has its whole volume at the start, not an arrival rate: leave requests_per_s out",
                yamlio.line_of(data, "requests_per_s"), "requests_per_s")
    elif kind == LLM_BATCH:
        # an offline job runs each replica at the largest batch that fits (concurrency: max): no user waits
        values["concurrency_max"] = True
    return kind


def refuse_task(raw, col: Collector, line) -> bool:
    """A task the schema once took as a tag and the advisor does not model: refused with what to do."""
    if raw in kinds.REFUSED_TASKS:
        col.add(f"{raw} is not modelled: {kinds.REFUSED_TASKS[raw]}; the tasks modelled: "
                f"{', '.join(kinds.TASKS)}", line, "task")
        return True
    return False


def _rl_samples(values: dict, data: dict, col: Collector) -> None:
    """samples_per_prompt against the method: GRPO and RLOO need a group (their baseline is the other
    samples of the same prompt: with one, every advantage is zero, DeepSeekMath arXiv 2402.03300 eq. 3;
    RLOO's leave-one-out mean has no one left), so 1 is refused with what to give instead; DPO
    generates nothing, so a sample count is refused as meaningless."""
    n, method = values.get("samples_per_prompt"), values.get("method")
    if n is None:
        return
    line = yamlio.line_of(data, "samples_per_prompt")
    if n < 2 and method in ("grpo", "rloo"):
        col.add(f"{method} needs at least 2 samples per prompt: its baseline is the group's other samples, so one "
                "sample gives every response a zero advantage; give 2 or more (4-16 is usual), or method: ppo or "
                "reinforce++ for one sample per prompt", line, "samples_per_prompt")
    elif method == "dpo":
        col.add("dpo generates no samples (it reads chosen and rejected responses): leave samples_per_prompt out",
                line, "samples_per_prompt")


# --- image and video generation: the model, its latency target, and the checks that need the model ---

#: a diffusion workload's latency target, named after its kind's time figure (KindSpec.time_field):
#: `latency: {seconds_per_image: 5}` or `{seconds_per_clip: 120}`, in seconds
LATENCY_TARGETS = {"seconds_per_image": IMAGE, "seconds_per_clip": VIDEO}


def diffusion_task(data: dict) -> str | None:
    """The diffusion kind a workload's `task` names (the old video-diffusion read as video-generation)."""
    task = data.get("task")
    task = kinds.TASK_ALIASES.get(task, task) if isinstance(task, str) else None
    return task if task in DIFFUSION_KINDS and data.get("mode") == "inference" else None


def read_diffusion_model(raw: str, data: dict, file: str, line):
    """An image or video workload's model, from catalog/diffusion-models.yaml (its id, an alias or its
    Hugging Face repo)."""
    from advisor.inputs import diffusionmodels
    return diffusionmodels.model(raw, diffusion_task(data), "model", file, line)


def refuse_diffusion_model(raw: str, file: str, line) -> None:
    """An LLM workload naming an image or video model: what to give instead."""
    from advisor.inputs import diffusionmodels
    if diffusionmodels.knows(raw):
        m = diffusionmodels.shipped()[diffusionmodels._names()[diffusionmodels.norm(raw)]]
        raise InputError(diffusionmodels.Problem(
            f"{m.name} is a {m.fig('kind').value.replace('-', ' ')} model: give task: {m.fig('kind').value} and mode: inference",
            file, line, "model"))


def read_latency_target(key: str, raw, col: Collector, line) -> float | None:
    return read_value(Spec("float", "", min=0.01, max=1e7, unit="s"), raw, col, f"latency.{key}", line)


def check_with_model(values: dict, data: dict, kind: str | None, col: Collector) -> None:
    """The checks of an image or video workload that need its model: a resolution its VAE and patch
    size divide, frames its VAE takes, a latency target of its own kind."""
    for k, applies_to in LATENCY_TARGETS.items():
        if values.get(k) is not None and kind != applies_to:
            col.add(f"applies to {kinds.KINDS[applies_to].label} only", yamlio.line_of(data.get("latency") or {}, k, yamlio.line_of(data, "latency")), f"latency.{k}")
    lay = values.get("layout")
    if lay is not None and kind in DIFFUSION_KINDS:
        col.add("a diffusion workload's layout is the planner's (replicas; CFG or sequence parallelism for a latency "
                "target): give latency: {seconds_per_image: N} or {seconds_per_clip: N} instead", yamlio.line_of(data, "layout"), "layout")
    elif lay is not None and (lay.cfg > 1 or lay.sp > 1):
        col.add("cfg and sp are image and video generation's parallelism (task: image-generation or video-generation)",
                yamlio.line_of(data, "layout"), "layout")
    model = values.get("model")
    if kind not in DIFFUSION_KINDS or model is None or model.fig("kind").value != kind:
        return
    from advisor.inputs import diffusionmodels
    if values.get("resolution"):
        wrong = diffusionmodels.check_resolution(model, values["resolution"])
        if wrong:
            col.add(wrong, yamlio.line_of(data, "resolution"), "resolution")
    if values.get("frames"):
        wrong = diffusionmodels.check_frames(model, values["frames"])
        if wrong:
            col.add(wrong, yamlio.line_of(data, "frames"), "frames")
