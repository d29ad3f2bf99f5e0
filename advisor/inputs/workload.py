"""Workload files: the contract that the estimator, the rules, the dialogue and users' scripts share.

The schema is declared once, as data (`FIELDS`, `CONSTRAINTS`, and `MODEL_FIELDS` in advisor.schema,
shared with config.json), so that validation, the dialogue's questions and the documentation all read
the same definitions.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.base import yamlio
from advisor.inputs.catalog import Catalog, Model
from advisor.inputs.engines import ENGINES
from advisor.inputs.figures import Figure
from advisor.inputs import crosschecks, kindfields, kinds, layoutinput
from advisor.inputs.crosschecks import ROPE_SCALING_MAX, TRAIN  # noqa: F401  (tests read workload.ROPE_SCALING_MAX)
# the constraints and the fleet are read in their own module; their names are read from this one too
from advisor.inputs.constraints import (CONSTRAINTS, DEPLOYMENTS, FLEET_FIELDS, MAX_NAMES, Constraints,  # noqa: F401
                                        FleetEntry, load_fleet, parse_fleet, read_constraints)
from advisor.inputs.kinds import RL_METHODS, TASKS, TOKEN_KINDS, TRAINING_METHODS, KindSpec
from advisor.inputs.schema import applies
from advisor.inputs.parallel import LAYOUT_FIELDS, POOL_FIELDS, POOLS, Layout, Pools, of_pools  # noqa: F401  (workload.LAYOUT_FIELDS)
from advisor.inputs.servicelevels import LATENCY_FIELDS, default_service_levels, service_class  # noqa: F401  (workload.service_class)
from advisor.base.errors import Collector, InputError
# (MODEL_FIELDS is imported by name here too: the dialogue and users' scripts read it from this module)
from advisor.inputs.schema import MODEL_FIELDS, MODES, PRECISIONS, Spec, check_value, read_value, _suggest, check_model  # noqa: F401

KV_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
OBJECTIVES = ("cost", "time", "cards")
#: the kinds whose requests are prompts and generated tokens (served, or rolled out in RL)
SERVED_KINDS = (kinds.LLM_SERVING, kinds.LLM_BATCH, kinds.RL)
# below these no GPU server answers (a request's handling alone takes tens of ms; 1 ms a token is 1,000
# tokens/s per user): a smaller figure is a unit slip (seconds given as ms) and is refused, with the hint
LATENCY_FLOOR_MS = {"ttft_ms": 10.0, "tpot_ms": 1.0}
FIELDS: dict[str, Spec] = {
    "name": Spec("str", "A short name for the workload, used in titles."),
    "mode": Spec("enum", "What the GPUs will do: serve a model, train one from scratch, or fine-tune one.", MODES),
    "model": Spec("model", "A catalog model id or alias (or a release of one: meta-llama/Llama-3.1-8B-Instruct is read as llama-3.1-8b, and the workload says so), a Hugging Face config.json (path, folder, or hf:ORG/NAME), or a mapping with params_b, active_params_b, layers, kv_heads, head_dim ..."),
    "precision": Spec("enum", "Precision of the weights; default: the model's shipped precision.", PRECISIONS),
    "kv_precision": Spec("enum", "Precision of the KV cache.", KV_PRECISIONS, default="bf16", modes=("inference",), kinds=TOKEN_KINDS),
    "method": Spec("enum", "Full training, LoRA adapters, or QLoRA (4-bit base weights + adapters); or RL post-training of a trained model (mode: fine-tuning): PPO (policy, critic, reference, reward model), GRPO (policy and reference; rloo and reinforce++ alike), DPO (policy and a frozen reference over preference pairs).", TRAINING_METHODS + RL_METHODS, default="full", modes=TRAIN),
    "lora_rank": Spec("int", "Rank of the LoRA adapters.", min=1, max=4096, default=16, modes=TRAIN),
    "optimizer": Spec("enum", "Optimizer: AdamW (8 B/param states), 8-bit AdamW (2 B), SGD with momentum (4 B).", ("adamw", "adamw-8bit", "sgd"), default="adamw", modes=TRAIN),
    "master_weights": Spec("bool", "Keep an fp32 master copy of 16-bit weights (mixed precision; C06).", default=True, modes=TRAIN),
    "zero_stage": Spec("int", "ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 also weights.", min=0, max=3, default=0, modes=TRAIN),
    "activation_checkpointing": Spec("bool", "Recompute activations in the backward pass (saves memory, ~30% more compute; C06).", default=False, modes=TRAIN),
    "context_tokens": Spec("int", "Tokens per sequence (the context the KV cache or activations must hold).", min=1, max=10_000_000, default=8192, unit="tokens", reads="context", kinds=TOKEN_KINDS),
    "prompt_tokens": Spec("int", "Prompt tokens per request (RL post-training: per rollout prompt).", min=1, max=10_000_000, default=1000, unit="tokens", modes=("inference", "fine-tuning"), kinds=SERVED_KINDS),
    "output_tokens": Spec("int", "Generated tokens per request (RL post-training: per rollout response).", min=1, max=10_000_000, default=1000, unit="tokens", modes=("inference", "fine-tuning"), kinds=SERVED_KINDS),
    "prefix_cache_hit": Spec("float", "Share of prompt tokens already in a prefix cache (a shared system prompt, a repeated context), 0-1: the prefill computes only the rest (their KV still held per sequence), and an API bills them at its cached-input price.", min=0, max=1, default=0, modes=("inference",), reads="fraction", kinds=TOKEN_KINDS),
    "engine": Spec("enum", "The serving engine (vLLM, SGLang, TensorRT-LLM): its batch cap, KV memory share and layouts (catalog/engines.yaml); default: the one the catalog names for each GPU and model.", ENGINES, modes=("inference",), kinds=TOKEN_KINDS),
    "speculative": Spec("speculative", "Speculative decoding with the model's own multi-token-prediction module, {method: mtp, tokens: N drafted per step}: faster per user at small batches, slower at saturation; only models and counts with a published acceptance (catalog/engines.yaml speculative).", modes=("inference",), kinds=TOKEN_KINDS),
    "requests_per_s": Spec("float", "Requests arriving per second (a Poisson stream, as a service or MLPerf's Server scenario sees them): each plan's figures are the ones at that rate (its time to first token with the wait for the engine near saturation, and the time per token, speed per user, tokens served and cost per token of the batch the rate keeps in flight, Little's law), and a plan whose capacity is below the rate gets more replicas or is excluded, with its capacity named; default: none (the time to first token of `concurrency` users each sending the next request when the last one ends).", min=0.001, max=1e6, unit="requests/s", modes=("inference",)),
    "concurrency": Spec("int", "Sequences served at once (concurrent users or batch size), or 'max' for offline throughput at the largest batch that fits.", min=1, max=1_000_000, default=1, unit="sequences", modes=("inference",)),
    "micro_batch": Spec("int", "Sequences per GPU in one micro-batch (activations grow with it; C06, C13).", min=1, max=1_000_000, default=1, unit="sequences", modes=TRAIN),
    "global_batch": Spec("int", "Sequences per optimizer step over all data-parallel replicas (micro-batches per replica = global_batch / (micro_batch x DP): the pipeline bubble); default: the planner's choice, stated.", min=1, max=100_000_000, unit="sequences", modes=TRAIN),
    "virtual_stages": Spec("int", "Model chunks per card of the interleaved pipeline schedule (Megatron-LM's virtual pipeline stages: the bubble falls v-fold, each micro-batch crosses the stages v times); with a given layout it runs as given (default 1: no interleaving), and a searched plan takes it where each of PP x it chunks keeps a layer (default: the planner's choice of 1, 2 or 4, the shortest step counting the fullest stage when the layers do not split evenly, stated).", min=1, max=64, unit="chunks per card", modes=TRAIN),
    "goodput": Spec("float", "Share of the whole run's wall-clock that advances training (interruptions, restarts, checkpoints, evaluation and stalls taken out), from the team's own record (Llama 3's 16,384-H100 run kept over 0.9); default: the figure fitted on published whole runs, with its interruptions per GPU-hour and per-step overhead.", min=0.05, max=1, modes=TRAIN, reads="fraction"),
    "alltoall_overlap": Spec("bool", "A MoE model's expert all-to-all is hidden behind compute where it is shorter (DeepSeek's DualPipe; Megatron-Core's --overlap-moe-expert-parallel-comm); default: on the critical path, as Megatron-Core's default schedule runs it.", modes=TRAIN),
    "training_tokens": Spec("float", "Tokens to process in the whole training or fine-tuning job.", min=1, max=1e16, unit="tokens", modes=TRAIN),
    "latency": Spec("enum", "Interactive use optimises latency, batch use total throughput (T06); or service levels {ttft_ms: N, tpot_ms: N}.", ("interactive", "batch"), default="interactive"),
    "objective": Spec("enum", "What the plan minimises: cost per unit of work, time (training hours, serving latency), or cards.", OBJECTIVES, default="cost"),
    "layout": Spec("layout", "A fixed layout {tp, pp, dp, ep, attention_dp} evaluated as given on every GPU (for scripts and benchmarks): tp cards per pipeline stage, whose MoE layers spread the experts over ep of them and whose attention runs as attention_dp data-parallel ranks (each its own sequences and KV cache); or a disaggregated one {prefill: {tp, pp, ep, attention_dp, replicas}, decode: {...}}: prompts prefilled on one pool, their KV cache sent to the other, which decodes; default: the planner searches. The engines' own notations are read too: vLLM's {dp: 8, tp: 1, ep: 8} or enable_expert_parallel: true (one group of dp x tp cards, attention data-parallel, the experts over all), SGLang's {tp: 8, dp: 8, enable_dp_attention: true}, TensorRT-LLM's enable_attention_dp: true."),
    "task": Spec("enum", "The kind of model and job: an LLM (served, trained or fine-tuned), RL post-training of one (rlhf: read as method ppo), or image or video generation (video-diffusion is read as video-generation).", TASKS, default="llm"),
    "utilisation": Spec("float", "Share of the month the GPUs are rented and busy (1 = 24x7; 50%, 12h/day and 8x5 are read too), for the memo's monthly cost.", min=0.01, max=1, reads="share"),
    "constraints": Spec("constraints", "Limits on what may be bought or rented."),
    "api_prices": Spec("path", "A per-token API price file (`gpu-advisor prices import-api FILE --out my-api.yaml`) whose offers are compared beside the shipped ones; a path relative to the workload's folder.", modes=("inference",), kinds=TOKEN_KINDS),
    **kindfields.FIELDS,
    "fleet": Spec("fleet", "GPUs the team already owns or has reserved: a list of {gpu, count, nodes, location, interconnect, usd_per_gpu_hour}; owned cards cost their running cost only (or the negotiated usd_per_gpu_hour)."),
}

@dataclass(frozen=True)
class Workload:
    """A validated workload: the model, what to do with it, and the constraints."""

    mode: str
    model: Model
    name: str | None = None
    precision: str | None = None
    kv_precision: str = "bf16"
    method: str = "full"
    lora_rank: int = 16
    optimizer: str = "adamw"
    master_weights: bool = True
    zero_stage: int = 0
    activation_checkpointing: bool = False
    context_tokens: int = 8192
    prompt_tokens: int = 1000
    output_tokens: int = 1000
    prefix_cache_hit: float = 0.0     # share of prompt tokens read from a prefix cache: not prefilled, API cached-input price
    engine: str | None = None      # serving engine named by the user; None: the catalog's default per GPU and model
    #: speculative decoding (`speculative: {method: mtp, tokens: N}`): (method, drafted tokens, mean
    #: accepted length per step, its catalog source IDs); None: none
    speculative: tuple | None = None
    concurrency: int = 1           # inference: sequences at once
    requests_per_s: float | None = None   # inference: Poisson arrival rate; None: the closed loop of `concurrency` users
    micro_batch: int = 1           # training: sequences per GPU per micro-batch
    global_batch: int | None = None  # training: sequences per optimizer step; None: the planner chooses
    virtual_stages: int | None = None  # training: interleaved pipeline chunks per card; None: 1 with a given layout, else the planner's choice
    goodput: float | None = None   # training: the team's own whole-run goodput; None: the fitted one
    alltoall_overlap: bool = False  # training: the MoE all-to-all overlapped with compute (DualPipe), as the workload states
    concurrency_max: bool = False  # `concurrency: max`: the speed model resolves the largest batch that fits
    training_tokens: float | None = None
    latency: str = "interactive"
    task: str = "llm"
    #: the kind of work (advisor.inputs.kinds), read from mode, task, method, latency and volume
    kind: str = kinds.LLM_SERVING
    # image and video generation (advisor.inputs.kindfields); None: the model's published default
    resolution: tuple[int, int] | None = None
    steps: int | None = None
    frames: int | None = None
    guidance: float | None = None
    images_per_request: int = 1
    volume: tuple[str, float] | None = None    # an offline batch job's ("requests" | "tokens", N)
    # RL post-training
    samples_per_prompt: int | None = None
    prompts_per_step: int | None = None
    rl_steps: int | None = None
    reward_model: Model | None = None          # None: a rule-based reward or verifier
    utilisation: float | None = None          # share of the month in use; None: the memo assumes 24x7
    objective: str = "cost"
    ttft_ms: float | None = None          # service levels (latency: {ttft_ms, tpot_ms}); None: no target
    tpot_ms: float | None = None
    #: where the service levels come from when the workload states none: interactive serving takes the
    #: catalog's default (catalog/efficiency.yaml service_levels, MLPerf Interactive limits per model class); None: stated
    service_level_source: str | None = None
    service_level_refs: tuple[str, ...] = ()   # catalog source IDs of that default (MLPERF_CONF)
    layout: Layout | None = None   # the layout given by the user (advisor.inputs.parallel); None: the planner chooses
    # a given disaggregated layout: its prefill and decode pools, each a Layout whose dp is its replicas
    pools: Pools | None = None
    constraints: Constraints = field(default_factory=Constraints)
    fleet: tuple[FleetEntry, ...] = ()          # what the team owns or has reserved (`fleet:`, --fleet)
    api_prices: str | None = None               # a per-token API price file (`api_prices:`), its path resolved
    #: fields the user left out and the advisor filled with a default (for the memo's assumptions)
    defaults: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()                # what the advisor read differently from the file (old field names)
    source: str | None = None

    @property
    def training(self) -> bool:
        return self.mode in TRAIN

    @property
    def kind_spec(self) -> KindSpec:
        """What the shared path reads of the workload's kind: its goal, unit and time figure."""
        return kinds.KINDS[self.kind]

    @property
    def rl_method(self) -> str | None:
        """RL post-training's algorithm: the method given, or ppo for the old `task: rlhf`."""
        if self.kind != kinds.RL:
            return None
        return self.method if self.method in RL_METHODS else "ppo"

    @property
    def kv_tokens(self) -> int:
        """Tokens of KV cache one sequence holds when the memory is sized: serving with the requests
        stated, their own length (prompt + output), up to context_tokens (paged-KV engines, vLLM, SGLang
        and TensorRT-LLM, hold a sequence's KV for the tokens it has; context_tokens is then the longest
        request a replica must still admit); otherwise context_tokens."""
        stated = not {"prompt_tokens", "output_tokens"} <= set(self.defaults)
        if self.training or not stated:
            return self.context_tokens
        return min(self.context_tokens, self.prompt_tokens + self.output_tokens)

    @property
    def service_level_stated(self) -> bool:     # its own service level, not the catalog's interactive default
        return (self.ttft_ms is not None or self.tpot_ms is not None) and not self.service_level_source

    @property
    def layout_given(self) -> bool:
        """The workload fixes its layout (colocated or disaggregated): the planner evaluates it as given."""
        return self.layout is not None or self.pools is not None

    @property
    def stated_layout(self) -> Layout | None:
        """The layout the workload fixes as one value (a disaggregated one with its two pools), or None."""
        return self.layout or (of_pools(self.pools) if self.pools else None)

    @property
    def title(self) -> str:
        return self.name or f"{self.model.name} {self.mode}"

    def inputs(self) -> dict:
        """The workload as understood, in schema form (JSON-ready)."""
        model = self.model.id
        if model == "custom":   # a model given by its figures is kept whole, so the record can be replayed
            model = {k: f.value for k, f in self.model.figures.items()}
            model["name"] = self.model.name
        out = {"name": self.name, "mode": self.mode, "model": model}
        for k in FIELDS:
            if k in ("name", "mode", "model", "constraints", "fleet"):
                continue
            if k == "requests_per_s" and self.requests_per_s is None:
                continue            # shown only when given: a closed-loop workload reads as it was written
            if applies(FIELDS[k], self.mode, self.kind):
                out[k] = _shown(k, getattr(self, k)) if k != "concurrency" or not self.concurrency_max else "max"
        if self.speculative:
            out["speculative"] = {"method": self.speculative[0], "tokens": self.speculative[1]}
        if self.training:
            out["concurrency"] = self.micro_batch     # the old name of micro_batch, kept for one release (README)
        if self.service_level_stated:
            out["latency"] = {k: v for k, v in (("ttft_ms", self.ttft_ms), ("tpot_ms", self.tpot_ms)) if v is not None}
        if self.layout_given:
            # ep and attention_dp are shown when used (a dense layout reads as it was written)
            out["layout"] = self.stated_layout.inputs()
        out["constraints"] = {k: (list(v) if isinstance(v, tuple) else v)
                              for k, v in self.constraints.__dict__.items() if v is not None and v != ()}
        if self.constraints.busy_share is not None:
            out["constraints"]["utilisation"] = self.constraints.busy_share   # busy_share's old name, for one release
        if self.fleet:
            out["fleet"] = [{k: v for k, v in f.__dict__.items() if v is not None} for f in self.fleet]
        return {k: v for k, v in out.items() if v is not None}


def _shown(key: str, value):
    """A field's value as the schema writes it (the inverse of its reading)."""
    if key == "resolution" and value:
        return f"{value[0]}x{value[1]}"
    if key == "volume" and value:
        return {value[0]: value[1]}
    if key == "reward_model" and value is not None:
        return value.id
    return value


def _custom_model(raw: dict, col: Collector, file: str) -> Model | None:
    values = check_model(raw, col, lambda k: yamlio.line_of(raw, k, getattr(raw, "line", None)), typed=True)
    if raw.get("params_b") is None:          # absent, or `params_b: null`
        col.add("a model given as a mapping needs params_b", yamlio.line_of(raw, "params_b", getattr(raw, "line", None)),
                "model.params_b")
        return None
    if values is None:
        return None
    name = values.pop("name", None)
    figs = {k: Figure(v, ("workload file",)) for k, v in values.items()}
    figs.setdefault("active_params_b", Figure(figs["params_b"].value, ("workload file",), "dense: all parameters active"))
    return Model("custom", name or f"custom {figs['params_b'].value:g}B model", (), figs, file, getattr(raw, "line", None))


def is_config(raw: str, file: str) -> bool:
    """A model named by its Hugging Face config (hf:ORG/NAME, a .json file or a folder with config.json,
    relative to the workload's own folder: never the current directory's)."""
    if raw.startswith("hf:") or raw.lower().endswith(".json"):
        return True
    p = Path(raw).expanduser()
    try:
        return (p if p.is_absolute() else Path(file).parent / p).joinpath("config.json").is_file()
    except OSError:                  # a name too long for the file system is no folder (the catalog says so)
        return False


def parse(data, catalog: Catalog, file: str = "<workload>") -> Workload:
    """Validate a parsed workload document; every problem is reported with its field and line."""
    col = Collector(file)
    if data is None:
        col.add("the workload is empty: it needs at least 'mode' and 'model'", 1)
        col.raise_if_any()
    if not isinstance(data, dict):
        col.add(f"a workload must be a mapping of fields, not a {yamlio.kind(data)}", getattr(data, "line", 1))
        col.raise_if_any()
    values: dict[str, object] = {}
    pending_speculative = None
    release_notes: list[str] = []     # a model named by one of its releases, and how it was read
    for key, raw in data.items():
        line = yamlio.line_of(data, key)
        if key not in FIELDS:
            col.add(f"unknown field{_misplaced(key) or _suggest(key, FIELDS)}", line, str(key))
            continue
        if raw is None:
            continue
        spec = FIELDS[key]
        if key == "reward_model":
            values[key] = kindfields.read_reward_model(raw, catalog, col, file, line)
        elif spec.kind == "resolution":
            values[key] = kindfields.read_resolution(raw, col, line)
        elif spec.kind == "volume":
            values[key] = kindfields.read_volume(raw, col, line)
        elif key == "task" and isinstance(raw, str) and (raw in kinds.TASK_ALIASES or kindfields.refuse_task(raw, col, line)):
            values[key] = raw                  # an old name, read as its kind's below; or refused
        elif spec.kind == "model":
            if isinstance(raw, dict):
                values["model"] = _custom_model(raw, col, file)
            elif isinstance(raw, str):
                try:
                    if is_config(raw, file):     # model: path/to/config.json, a folder holding one, or hf:ORG/NAME
                        from advisor.inputs import hfconfig
                        try:
                            values["model"] = hfconfig.model_from(raw, Path(file).parent)
                        except hfconfig.MissingConfig as exc:
                            col.add(exc.problems[0].message, line, "model")
                    else:
                        values["model"], read_as = catalog.model_release(raw, "model", file, line)
                        if read_as:
                            release_notes.append(read_as)
                except InputError as exc:
                    col.problems.extend(exc.problems)
            else:
                col.add("must be a catalog model id or a mapping with params_b", line, "model")
        elif key == "latency" and isinstance(raw, dict):
            for k, v in raw.items():
                if k not in LATENCY_FIELDS:
                    col.add(f"unknown service level{_suggest(k, LATENCY_FIELDS)}", yamlio.line_of(raw, k, line), f"latency.{k}")
                elif v is not None:
                    checked = read_value(Spec("float", LATENCY_FIELDS[k], min=0.001, max=1e7, unit="ms"), v, col,
                                           f"latency.{k}", yamlio.line_of(raw, k, line))
                    if checked is not None and checked < LATENCY_FLOOR_MS[k]:
                        col.add(f"{checked:g} ms is below any {LATENCY_FIELDS[k].split(',')[0]} a GPU server reaches "
                                f"(at least {LATENCY_FLOOR_MS[k]:g} ms): give milliseconds ({checked:g} s is "
                                f"{checked * 1000:g})", yamlio.line_of(raw, k, line), f"latency.{k}")
                    elif checked is not None:
                        values[k] = checked
            values["latency"] = "interactive"
        elif spec.kind == "layout":
            values.update(layoutinput.parse_layout(raw, col, line, data.get("mode") in TRAIN, release_notes))
        elif spec.kind == "speculative":
            pending_speculative = (raw, line)      # checked against the model, which may come later in the file
        elif spec.kind == "constraints":
            if not isinstance(raw, dict):
                col.add("must be a mapping", line, "constraints")
                continue
            values["constraints"] = read_constraints(raw, catalog, col, file, FIELDS)
        elif spec.kind == "fleet":
            values["fleet"] = parse_fleet(raw, catalog, col, file, line)
        elif spec.kind == "path":
            values[key] = _input_file(raw, file, col, line, key)
        elif key == "concurrency" and raw == "max":
            values["concurrency_max"] = True
        else:
            checked = read_value(spec, raw, col, key, line)
            if checked is not None:
                values[key] = checked
    if pending_speculative is not None:
        got = _speculative(*pending_speculative[:1], catalog, col, pending_speculative[1], values.get("model"))
        if got:
            values["speculative"] = got
    for required in ("mode", "model"):
        if required not in data:
            col.add("required field is missing", getattr(data, "line", 1), required)
        elif data[required] is None:
            col.add("required field is empty", yamlio.line_of(data, required), required)
    mode, model = values.get("mode"), values.get("model")
    kind = kindfields.read_kind(values, data, col) if values.get("task") not in kinds.REFUSED_TASKS else None
    if kind:
        values["kind"] = kind
    _fields_apply(data, mode, kind, col)
    _context_holds_request(values, data, col)
    renamed = crosschecks.between_fields(values, data, col)
    notes = tuple(release_notes) + tuple(renamed)
    col.raise_if_any()
    given = set(data) | ({"micro_batch"} if renamed else set())
    defaults = tuple(k for k, s in FIELDS.items()
                     if k not in given and s.default is not None and applies(s, mode, kind))
    if values.get("constraints", Constraints()).deployment in ("on-prem", "air-gapped") and "liquid_cooling" not in (data.get("constraints") or {}):
        defaults += ("liquid_cooling",)   # the team's own data centre: its cooling is assumed, and the memo says so
    if mode == "inference" and "context_tokens" not in data and ("prompt_tokens" in values or "output_tokens" in values):
        # a context big enough for the request the user described
        values["context_tokens"] = values.get("prompt_tokens", 1000) + values.get("output_tokens", 1000)
        defaults = tuple(d for d in defaults if d != "context_tokens")
    if (mode == "inference" and values.get("latency", "interactive") == "interactive" and values.get("task", "llm") in ("llm", "multimodal")
            and "ttft_ms" not in values and "tpot_ms" not in values and not values.get("concurrency_max")):
        # (`concurrency: max` is an offline run at the largest batch: no user waits on it)
        values.update(default_service_levels(catalog, model, values.get("prompt_tokens")))
    return Workload(defaults=defaults, notes=notes, source=file, **values)


def _misplaced(key) -> str:
    """Where a known key goes when it is written at the top level: a service level under latency:, a
    constraint under constraints:; or ''."""
    if key in LATENCY_FIELDS:
        return f"; a service level goes under latency: (latency: {{{key}: ...}})"
    if key in CONSTRAINTS:
        return f"; it is a constraint: write it under constraints: (constraints: {{{key}: ...}})"
    return ""


def _fields_apply(data: dict, mode, kind, col: Collector) -> None:
    """A field of another mode or kind would be ignored without a word (prompt_tokens in a training file,
    steps in an LLM's): each is refused, naming the mode or kind it applies to."""
    for k in data:
        spec = FIELDS.get(k)
        if spec is None or mode not in MODES or k == "concurrency":
            continue
        if spec.kinds and kind and not applies(spec, mode, kind):
            labels = [kinds.KINDS[n].label for n in spec.kinds]
            said = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else labels[0]
            col.add(f"applies to {said} only; this workload is {kinds.KINDS[kind].label}", yamlio.line_of(data, k), k)
        elif mode not in spec.modes:
            col.add(f"applies to {' and '.join(spec.modes)} only; this workload's mode is {mode}", yamlio.line_of(data, k), k)


def _input_file(raw, file: str, col: Collector, line, key: str) -> str | None:
    """A file the workload names (api_prices:), relative to the workload's own folder: a regular file, or
    one line naming the field."""
    if not isinstance(raw, str) or not raw.strip():
        col.add("must be a file name", line, key)
        return None
    p = Path(raw).expanduser()
    p = p if p.is_absolute() else Path(file).parent / p
    try:
        ok = p.is_file()
    except OSError:
        ok = False
    if not ok:
        col.add(f"no such file: {p}", line, key)
        return None
    return str(p)


def _context_holds_request(values: dict, data, col: Collector) -> None:
    """A served context shorter than one request (prompt + output, given or the defaults) is refused, not
    taken: the KV cache would be sized for the shorter context (context_tokens: 1 sized 4 H100 where a
    70B model's 64 users of 1,000 + 1,000 tokens need 8). Refusing says which figure is wrong; taking the
    larger would silently overrule the one figure the user wrote."""
    context = values.get("context_tokens")
    if values.get("mode") != "inference" or "context_tokens" not in data or not isinstance(context, int):
        return
    prompt, output = values.get("prompt_tokens"), values.get("output_tokens")
    if {"prompt_tokens", "output_tokens"} <= set(data) or (prompt is None and "prompt_tokens" in data) \
            or (output is None and "output_tokens" in data) or (prompt or 0) > context:
        return                   # both given, or a prompt past the context: crosschecks.between_fields says so
    p, o = prompt or FIELDS["prompt_tokens"].default, output or FIELDS["output_tokens"].default
    if context < p + o:
        said = " (the defaults)" if prompt is None and output is None else " (the default output)" if output is None \
            else " (the default prompt)" if prompt is None else ""
        col.add(f"{context:,} token{'' if context == 1 else 's'} cannot hold one request of prompt_tokens {p:,} + output_tokens {o:,}{said} = "
                f"{p + o:,} tokens (the KV cache would be sized for {context:,}): give context_tokens of at least "
                f"{p + o:,}, or shorter prompt_tokens/output_tokens", yamlio.line_of(data, "context_tokens"), "context_tokens")


def _speculative(raw, catalog: Catalog, col: Collector, line: int | None, model) -> tuple | None:
    """`speculative: {method: mtp, tokens: N}` checked against the catalog's published acceptance for the
    model: (method, N, accepted length per step, source IDs), or None with the problem collected."""
    if not isinstance(raw, dict) or set(raw) - {"method", "tokens"}:
        col.add("must be a mapping {method: mtp, tokens: N}", line, "speculative")
        return None
    method = raw.get("method", "mtp")
    if method != "mtp":
        col.add(f"{method!r} is not a method the catalog measures (mtp)", yamlio.line_of(raw, "method", line), "speculative.method")
        return None
    n = check_value(Spec("int", "", min=1, max=16), raw.get("tokens", 1), col, "speculative.tokens", yamlio.line_of(raw, "tokens", line))
    if n is None or not isinstance(model, Model):
        return None
    table = ((catalog.engines.get("speculative") or {}).get("mtp") or {}).get(model.id) or {}
    if n not in table:
        col.add(f"{model.id} has no published MTP acceptance for {n} drafted token(s)"
                + (f" (published: {', '.join(str(k) for k in sorted(table))})" if table else " (no MTP measurement for this model)"),
                yamlio.line_of(raw, "tokens", line), "speculative.tokens" if table else "speculative")
        return None
    f = table[n]
    return ("mtp", n, float(f["v"]), tuple(f.get("src") or ()))


def load(path: str | Path, catalog: Catalog) -> Workload:
    return parse(yamlio.load(path), catalog, str(path))


def with_gpus(workload: Workload, gpu_ids: list[str]) -> Workload:
    """The same workload restricted to these candidate GPUs (from --gpu)."""
    return replace(workload, constraints=replace(workload.constraints, gpus=tuple(gpu_ids)))
