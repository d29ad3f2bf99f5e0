"""The kinds of work the advisor models, declared once: what each is called, which workloads are of it,
what its plans must meet, what its cost is counted per and which plan figure its time is.

A workload is of exactly one kind, read from its fields (`kind_of`); a `task` the advisor does not
model is refused at the field with the kinds it does (a tag that changed nothing in the numbers would be
a silent wrong answer). Each kind's numbers and words live in its own package under advisor/kinds/,
behind the protocol there; the shared path (decision, record, memo) asks the workload's `KindSpec` (its
goal, unit and time figure) and never tests the kind by name.
"""
from __future__ import annotations

from dataclasses import dataclass

LLM_SERVING = "llm-serving"
LLM_BATCH = "llm-batch"
LLM_TRAINING = "llm-training"
RL = "rl-post-training"
IMAGE = "image-generation"
VIDEO = "video-generation"

#: the `task` values a workload may give: the old `video-diffusion` is read as video-generation
TASKS = ("llm", "rlhf", "image-generation", "video-generation", "image-classification")
TASK_ALIASES = {"video-diffusion": "video-generation"}
#: tasks the schema once accepted as tags and the advisor does not model: refused with what to do instead
REFUSED_TASKS = {
    "multimodal": "a vision-language model is served as task: llm, its image tokens counted in prompt_tokens "
                  "(the language model's config is read from the checkpoint's text_config)",
    "other": "the advisor models LLMs, image and video generation, and RL post-training only",
}
#: RL post-training methods; rloo and reinforce++ are grpo-like (no critic, group baselines)
RL_METHODS = ("ppo", "grpo", "dpo", "rloo", "reinforce++")
TRAINING_METHODS = ("full", "lora", "qlora")


@dataclass(frozen=True)
class KindSpec:
    """One kind of work, as the shared path reads it."""

    name: str
    label: str                 # in a sentence: "LLM serving"
    modes: tuple[str, ...]     # the workload modes it takes
    goal: str                  # what a plan must meet: "service level" or "deadline"
    time_field: str            # the plan figure `objective: time` minimises (and a missed goal is read by)
    time_unit: str             # that figure's unit in words
    job: bool                  # a job with a volume: its plans are priced per job (job_hours, usd_per_job)
    error_class: str           # the speed model's error it is judged with (catalog/efficiency.yaml model_error)
    modelled: bool = True      # False: refused at the field until its package (advisor/kinds/) lands
    # when every plan misses the goal: the closest plan is the answer (a run that can take longer), or
    # none (exit 3, the constraint that binds named: advise.no_plan)
    closest_plan: bool = True
    #: what its cost is counted per when not the LLM's (numbers.objective UNIT_FIELD): "thousand_images",
    #: "clip"; None: per million output tokens (serving) or per job (kinds with a volume)
    cost_unit: str | None = None
    #: its figures are not tokens: the memo and the record leave out the token figures (the KV cache,
    #: the per-token API comparison) and read the kind's own
    tokens: bool = True
    #: what its ranking by cost per unit of work cites, where not the token kinds' (T07, C16)
    cost_sources: tuple[str, ...] = ()


KINDS: dict[str, KindSpec] = {k.name: k for k in (
    KindSpec(LLM_SERVING, "LLM serving", ("inference",), "service level", "tpot_ms", "ms per output token", False, "serving"),
    # an offline batch job's deadline is the window it has (overnight, before the next day's data): a plan
    # that runs past it is no plan, and what binds (max_gpus, a budget) is named instead (issue 44)
    KindSpec(LLM_BATCH, "an offline LLM batch job", ("inference",), "deadline", "job_hours", "h", True, "serving", closest_plan=False),
    KindSpec(LLM_TRAINING, "training or fine-tuning", ("training", "fine-tuning"), "deadline", "training_hours", "h", True, "training"),
    KindSpec(RL, "RL post-training", ("fine-tuning",), "deadline", "training_hours", "h", True, "training"),
    KindSpec(IMAGE, "image generation", ("inference",), "service level", "seconds_per_image", "s per image", False, "image-generation", cost_unit="thousand_images", tokens=False, cost_sources=("C16", "K13")),
    KindSpec(VIDEO, "video generation", ("inference",), "service level", "seconds_per_clip", "s per clip", False, "video-generation", cost_unit="clip", tokens=False, cost_sources=("C16", "K13")),
)}

#: the kinds whose numbers are the LLM's (tokens, a KV cache or activations per token): the fields
#: that describe tokens apply to these only
TOKEN_KINDS = (LLM_SERVING, LLM_BATCH, LLM_TRAINING, RL)
DIFFUSION_KINDS = (IMAGE, VIDEO)


def kind_of(mode: str | None, task: str | None, method: str | None, latency: str | None, volume) -> str | None:
    """The kind of a workload with these fields (already checked one by one); None when the mode is
    missing or the combination is refused (`problem` says why)."""
    return _classify(mode, task, method, latency, volume)[0]


def problem(mode: str | None, task: str | None, method: str | None, latency: str | None, volume) -> tuple[str, str] | None:
    """(field, message) when the fields name no kind the advisor models, else None."""
    return _classify(mode, task, method, latency, volume)[1]


def _classify(mode, task, method, latency, volume):
    kind, wrong = _read(mode, task, method, latency, volume)
    if kind and not KINDS[kind].modelled:
        field = "volume" if kind == LLM_BATCH else "task"
        return None, (field, f"{KINDS[kind].label} is not modelled yet; the kinds modelled: {modelled()}")
    return kind, wrong


def _read(mode, task, method, latency, volume):
    task = TASK_ALIASES.get(task, task) or "llm"
    if mode is None:
        return None, None
    if task in DIFFUSION_KINDS:
        # training a diffusion transformer is a transformer's training over latent tokens (6 x parameters
        # per token, activations per token): the training kind, its tokens counted in latent tokens, and the
        # task kept for the seeds' memory-heavy verdict (003, C09)
        return (task if mode == "inference" else LLM_TRAINING), None
    if task == "image-classification":
        # a vision transformer's training is a transformer's over its patch tokens (a ViT-S/16 at 224 px: 197
        # per image); serving a classifier (milliseconds per image, a batch of thousands) is not modelled
        if mode == "inference":
            return None, ("task", "serving an image classifier is not modelled; training a vision transformer is "
                                  "(mode: training, its patch tokens per image as context_tokens)")
        return LLM_TRAINING, None
    if task == "rlhf" or method in RL_METHODS:
        if mode != "fine-tuning":
            return None, ("method" if method in RL_METHODS else "task",
                          f"RL post-training ({method or 'rlhf'}) is mode: fine-tuning of a trained model; this workload's mode is {mode}")
        return RL, None
    if mode == "inference":
        return (LLM_BATCH if latency == "batch" and volume else LLM_SERVING), None
    return LLM_TRAINING, None


def spec(name: str) -> KindSpec:
    return KINDS[name]


def modelled() -> str:
    """The kinds in words, for a refusal."""
    return ", ".join(k.label for k in KINDS.values() if k.modelled)
