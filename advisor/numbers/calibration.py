"""The speed model's calibration: the efficiency factors bench/fit.py fitted on published
measurements (catalog/efficiency.yaml, its error in docs/accuracy.md), read once per catalog and
checked (a hand-edited catalog gets one line, never a traceback), with per-GPU link figures cached.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from advisor.base.errors import InputError, Problem
from advisor.base.kept import Kept, fingerprint, part_key
from advisor.inputs.catalog import GPU, Catalog
from advisor.numbers import comm
# the serving engine's choice lives in its own module; its names are read from this one too
from advisor.numbers.servingengine import Engine, engine_for, kept_engine_for, kv_words  # noqa: F401

#: GPUs of one node of the whole runs the goodput was fitted on (HGX/DGX A100 and H100 boards)
WHOLE_RUN_NODE_GPUS = 8


@dataclass
class Calibration:
    """The fitted efficiency factors of catalog/efficiency.yaml, with per-GPU figures cached."""

    bw_share: float
    compute_share: float              # of the achievable matmul rate, in serving (one figure: a separate FP4
                                      # share was tried and went to its bound, B200's rows being bandwidth-bound)
    layer_us: float
    seq_us: float
    allreduce_us: float
    moe_half_tokens: float
    maturing_share: float             # serving rates reached on a software stack the catalog calls maturing or limited (K12, K18)
    engine_max_batch: int
    memory_utilisation: float
    link_share: float
    scale_out_gb_s: float
    pcie: dict
    train_share: dict                 # {generation: {precision: share of achievable matmul rate}}
    train_default: dict               # {precision: share}
    train_moe_share: float
    train_zero3_share: float          # ZeRO-3/FSDP runs reach this share of ZeRO-0/1 runs
    train_spread: float               # the fit's residual spread (log ratio), for the stated uncertainty
    train_moe_spread: float           # the same over the MoE records (wider: one factor over few runs)
    sources: dict                     # factor -> short source text
    # the engine's decode attention reads each KV head once for its group of query heads (GQA/MQA):
    # true of every current engine; TensorRT-LLM before 0.8 (no XQA kernel) read it once per query
    # head (TRTLLM_XQA_BLOG). Only a measurement of such an engine turns it off (bench/accuracy.py).
    grouped_kv_reads: bool = True
    moe_half_width: float = 0.0
    # routing skew under expert parallelism: the busiest EP rank carries (1 + ep_skew x (ep - 1) / ep) x
    # the mean expert load beyond the balls-into-bins spread (hot experts; EPLB's redundant experts remove
    # most of it), fitted on the EP/DEP serving records that run without EPLB
    ep_skew: float = 0.0
    request_ms: float = 0.0
    # decode steps of the batch in flight before a new request's first token at an arrival rate (the wait
    # for the step boundary and the step that runs its prefill; theory 1.5), fitted on MLPerf Server logs
    first_token_steps: float = 1.5
    # the 99th percentile of the TTFT and the TPOT at an arrival rate over the modelled mean: the spread of
    # the prompts' lengths and of the Poisson arrivals, which a mean model does not carry, fitted on the
    # p99 figures of the same MLPerf Server/Interactive logs (1: none)
    ttft_p99_factor: float = 1.0
    # the fixed time of each engine step of a batch at an arrival rate (queueing.with_floor), as a share of the
    # replica's own weight read (its one-sequence step's memory time), fitted on MLPerf Server logs
    rate_read_share: float = 0.0
    # decode steps an engine runs between two scheduling passes (vLLM's num_scheduler_steps, multi-step
    # scheduling): a new request joins only at a pass, (n - 1) / 2 steps later on average (1: every step)
    scheduler_steps: int = 1
    tpot_p99_factor: float = 1.0
    # the engine runs a new request's prefill inside a decode step (TensorRT-LLM's in-flight batching,
    # vLLM's chunked prefill): its first token comes with that step. False for an engine that runs
    # waiting prompts in a prefill-only step of their own, stalling the decodes (vLLM before chunked
    # prefill was its default: catalog/engines.yaml prefill)
    prefill_in_step: bool = True
    # the engine takes a sequence's KV blocks as it grows (vLLM, SGLang; TensorRT-LLM's MAX_UTILIZATION):
    # at an arrival rate the slots hold sequences at prompt + output / 2 tokens on average, not their
    # full length (catalog/engines.yaml kv_allocation; read by the queueing model only)
    kv_on_demand: bool = False
    # collectives between cards without peer-to-peer (GeForce), staged in host memory by NCCL's SHM
    # transport (efficiency.yaml host_staged): NCCL's own latency model, a base plus one hop per ring
    # step (NCCL_TUNING), with the hop taken from a measured host-staged exchange; sourced, not fitted,
    # as no fitted record runs tensor parallelism on such cards. 0: the fitted allreduce_us applies
    host_base_us: float = 0.0
    host_exchange_us: float = 0.0
    # experts stored in a format the GPU has no matmul units for (MXFP4 on Hopper or Ampere, FP8 on
    # Ampere) run as mixed-input kernels that dequantise each weight tile in the main loop (TensorRT-LLM's
    # W4A16_MXFP4 on Hopper, TRTLLM_GPTOSS_BLOG): their weight reads and matmuls reach this share of what
    # a native kernel reaches (1: no penalty), fitted on the serving records of such plans; their matmuls apart (mixed_input_matmul_share), on the throughput records of such plans
    mixed_input_share: float = 1.0
    mixed_input_matmul_share: float = 1.0
    # the engine holds a sliding-window layer's KV for the window only (vLLM's and SGLang's sliding-window
    # pools); false: every layer's KV at the full sequence length, the window applied in attention only
    # (TensorRT-LLM without max_attention_window set, as trtllm-bench runs gpt-oss: measurements.yaml)
    kv_window_memory: bool = True
    # prompt tokens one prefill forward pass takes in a running batch: TensorRT-LLM's max_num_tokens,
    # "8192 is default value in BuildConfig" (NVIDIA/TensorRT-LLM tests/integration/defs/stress_test/
    # stress_test.py); short prompts are prefilled many to a pass and share its collectives' latency
    prefill_chunk_tokens: int = 8192
    # pipeline-parallel serving: a micro-batch's next decode step waits for its sampled tokens to come
    # back from the last stage through every stage's host loop (TensorRT-LLM's _executor_loop_pp, which
    # runs without the overlap scheduler): host time per sequence of the micro-batch per stage passed,
    # fitted by bench/fit.py on the pipeline-parallel serving records (numbers.speed serving_times)
    pp_return_us: float = 0.0
    # the engine's batch cap holds per pipeline micro-batch (TensorRT-LLM: pp x max_batch_size sequences,
    # engines.yaml max_batch per: micro_batch), not per replica
    batch_cap_per_micro_batch: bool = False
    # the engine's KV memory share is of the memory left after the weights (TensorRT-LLM's
    # free_gpu_memory_fraction) rather than of the whole card (vLLM's gpu_memory_utilization)
    kv_share_of_free: bool = False
    # GPU generations whose training shares were fitted on ZeRO-3/FSDP runs only: their share already is
    # an FSDP share, and the ZeRO-3 factor (fitted where both kinds of run were measured) is not applied
    train_fsdp_only: frozenset = frozenset()
    # whole-run time (issue 21): a run's wall-clock is its step time / goodput, goodput = goodput_base /
    # (1 + interruptions per GPU-hour x GPUs x hours lost per interruption). The interruption figures
    # are sourced (the Llama 3 paper's 16k-H100 run); goodput_base (checkpoints, evaluation, data stalls,
    # and what the step model misses on whole runs) is fitted by bench/fit.py on published whole-run GPU-hours
    goodput_base: float = 1.0
    goodput_spread: float = 0.0       # standard deviation of ln(tool / published) over the fitted whole runs
    interruptions_per_gpu_hour: float = 0.0
    # MoE training (issue 21): the expert intermediate size (of each card's slice) at which the grouped
    # expert matmuls of a training step run at half efficiency, fitted with moe_share on the MoE records
    train_moe_half_width: float = 0.0
    train_moe_half_tokens: float = 0.0    # tokens per expert per micro-batch at which they run at half efficiency
    # the model width at which a training step's share of the matmul rate is half the fitted one: per token
    # and layer the matmul FLOPs grow with hidden^2, the norms, activations, residuals and optimizer's
    # element-wise work with hidden, so their share of a step falls as 1 / hidden (share x hidden / (hidden
    # + this)); fitted by bench/fit.py with the shares on the dense records; 0: no such term
    train_half_hidden: float = 0.0
    # the narrowest model of the records it was fitted on (2,048): a narrower one (a ViT-S's 384) is charged
    # as that width, so the term is not extrapolated beyond its fit
    train_width_min: float = 0.0
    hours_lost_per_interruption: float = 0.0
    # a whole pre-training run's wall-clock per optimizer step beyond the step model's time (the gradient
    # norm and optimizer update, data loading, logging and metrics of each step): it weighs on the short
    # steps of small models on fast cards (SmolLM2 1.7B's 0.16 s steps on H100), fitted by bench/fit.py on
    # the whole runs with goodput_base; benchmark step rates (class training) do not pay it
    step_overhead_s: float = 0.0
    # the shortest step of the whole runs it was fitted on: a shorter step (a small model on the planner's
    # few micro-batches) is charged as this one, so the overhead does not rank cards outside its fit
    step_overhead_min_step_s: float = 0.0
    # the fewest GPUs of the whole runs goodput_base and step_overhead_s were fitted on (256): a job at
    # least that large pays them whole; a smaller one a share growing with the log of its nodes, none on
    # one node (whole_run_scale); 0: every job pays them whole
    goodput_full_scale_gpus: float = 0.0
    # QLoRA (issue 21): the share of the card's HBM bandwidth at which a micro-batch's dequantisation of the
    # frozen 4-bit base runs (4-bit weights read, 16-bit copies written, every pass), fitted by bench/fit.py on
    # the Q-LoRA records; 0: no such term
    qlora_dequant_share: float = 0.0
    # the most tokens per optimizer step the planner's own global batch takes (efficiency.yaml
    # training_batch, LLAMA3_BATCH); 0: no bound. A stated global_batch is not bound by it
    max_batch_tokens: float = 0.0
    # a mixture-of-experts model's bound (training_batch.max_tokens_per_step_moe, DEEPSEEK_V3_BATCH); 0: the dense one
    max_batch_tokens_moe: float = 0.0
    # the engine's KV share per TP size where it sets one by TP (SGLang's mem_fraction_static), else {}
    kv_share_by_tp: dict = field(default_factory=dict)
    _links: dict = field(default_factory=dict)
    _engines: dict = field(default_factory=dict)

    def batch_tokens(self, w) -> float:
        """The most tokens per optimizer step the planner's own global batch takes for the workload `w`:
        the largest published batch of its model class (a MoE model: DeepSeek-V3's; else Llama 3 405B's)."""
        moe = w.model.num("experts") and w.model.num("experts_per_token")
        return self.max_batch_tokens_moe if moe and self.max_batch_tokens_moe else self.max_batch_tokens

    def kv_share(self, tp: int) -> float:
        """The share of memory the engine gives weights + KV (or KV of the free memory) at this TP size."""
        at = [k for k in self.kv_share_by_tp if k <= tp]
        return self.kv_share_by_tp[max(at)] if at else self.memory_utilisation

    def for_engine(self, engine: "Engine | None") -> "Calibration":
        """The same fitted factors with this engine's batch cap and KV share (catalog/engines.yaml);
        without an engine, the calibration as it is (efficiency.yaml's single engine figures)."""
        if engine is None:
            return self
        key = fingerprint(engine)       # every figure of the engine, not its id alone
        got = self._engines.get(key)
        if got is None:
            got = self._engines[key] = replace(self, engine_max_batch=engine.max_batch, memory_utilisation=engine.kv_share,
                                               kv_share_of_free=engine.kv_of_free, kv_share_by_tp=dict(engine.kv_by_tp),
                                               prefill_in_step=engine.prefill_in_step, kv_on_demand=engine.kv_on_demand,
                                               batch_cap_per_micro_batch=engine.batch_per_micro_batch, _engines={})
        return got

    def maturity(self, gpu: GPU) -> float:
        """K12/K18: kernels for a new or non-CUDA stack reach less of the hardware for a while."""
        m = (gpu.fig("software").extra or {}).get("maturity")
        return self.maturing_share if m in ("maturing", "limited", "new") else 1.0

    def link_bytes_s(self, gpu: GPU) -> tuple[float, str]:
        # keyed by the GPU's figures: a fleet's nodes may hold a GPU without its NVLink (numbers.fleet)
        key = fingerprint(gpu)
        got = self._links.get(key)
        if got is None:
            gb_s, how = comm.link_gb_s(gpu, self.pcie)
            got = self._links[key] = (gb_s * 1e9 * self.link_share, f"{how} x {self.link_share:g} achieved")
        return got

    def host_staged(self, gpu: GPU) -> bool:
        """Collectives between these cards go through host memory (no peer-to-peer, GeForce)."""
        return not gpu.p2p and self.host_exchange_us > 0

    def collective_latency_us(self, gpu: GPU, n: int) -> float:
        """Floor of one collective over n cards inside a node: the fitted figure over NVLink, xGMI or
        PCIe P2P; without peer-to-peer NCCL's ring model, base + 2 (n - 1) host-staged hops (one hop for
        a pipeline stage's send, n = 1), each hop the measured exchange less the base."""
        if not self.host_staged(gpu):
            return self.allreduce_us
        hop = max(self.host_exchange_us - self.host_base_us, 0.0)
        return self.host_base_us + max(2 * (n - 1), 1) * hop

    def whole_run_scale(self, count: int) -> float:
        """The share of the fitted whole-run factors (goodput_base's loss and the per-step overhead) a job
        on `count` GPUs pays: all of it from the smallest fitted run's size (goodput_full_scale_gpus), none
        on one 8-GPU node, ln(nodes) / ln(that run's nodes) between. What those runs lost beyond their
        interruptions grows with the nodes a synchronous step waits on (stragglers, data and storage
        stalls, network congestion: the slowest of n grows like log n); no whole run below 256 GPUs was
        fitted, so the form is a stated choice (review 10, F7), not a fit."""
        full = self.goodput_full_scale_gpus
        if not full or count >= full:
            return 1.0
        nodes = count / WHOLE_RUN_NODE_GPUS
        if nodes <= 1:
            return 0.0
        return math.log(nodes) / math.log(full / WHOLE_RUN_NODE_GPUS)

    def goodput(self, count: int, step_s: float | None = None, stated: float | None = None,
                explain: bool = True) -> tuple[float, str]:
        """Share of a run's wall-clock that advances training on `count` GPUs, and how it was had: the
        fitted whole-run base (evaluation, data stalls, restarts, loss spikes) and per-step overhead, which
        a step of `step_s` seconds (one optimizer step of the step model) pays, both at the job's scale
        (whole_run_scale), over the interruptions of its GPUs; the same for pre-training and fine-tuning:
        a job is charged by its size, not its name. `explain` false: the figure without its text."""
        if stated is not None:
            # the team's own figure (workload `goodput`: its infrastructure's record) replaces the fitted one
            return stated, f"goodput {stated:.3f}, stated in the workload (the fitted figure is not applied)"
        lost = self.interruptions_per_gpu_hour * count * self.hours_lost_per_interruption
        scale = self.whole_run_scale(count)
        base = 1 - (1 - self.goodput_base) * scale
        step_s = max(step_s, self.step_overhead_min_step_s) if step_s else step_s
        overhead = self.step_overhead_s * scale
        per_step = step_s / (step_s + overhead) if step_s and overhead else 1.0
        g = base * per_step / (1 + lost)
        if not explain:        # the figure alone, for a layout the planner may not keep
            return g, ""
        between = f"{1 / self.interruptions_per_gpu_hour:,.0f}" if self.interruptions_per_gpu_hour else "no"
        if scale >= 1:
            fitted = f"{base:.3f} fitted on published whole runs' GPU-hours (checkpoints, evaluation, stalls)"
        elif scale > 0:
            fitted = (f"{base:.3f} = 1 - (1 - {self.goodput_base:.3f} fitted on whole runs of {self.goodput_full_scale_gpus:,.0f}+ GPUs) x "
                      f"{scale:.2f} (ln {count / WHOLE_RUN_NODE_GPUS:,.1f} nodes / ln {self.goodput_full_scale_gpus / WHOLE_RUN_NODE_GPUS:,.0f}: "
                      "the whole-run losses grow with the nodes a step waits on)")
        else:
            fitted = (f"1 (one node: the whole-run losses fitted on runs of {self.goodput_full_scale_gpus:,.0f}+ GPUs, stragglers and "
                      "stalls between nodes, are not charged)")
        steps = (f" x {step_s:,.2f} s step / ({step_s:,.2f} + {overhead:.2f} s "
                 + (f"per-step overhead, {self.step_overhead_s:.2f} fitted x {scale:.2f}" if scale < 1 else "fitted per-step overhead") + ")"
                 if per_step != 1.0 else "")
        return g, (f"goodput {g:.3f} = {fitted}{steps} / (1 + {count:,} GPUs x {self.hours_lost_per_interruption:.2f} h lost per interruption / "
                   f"{between} GPU-hours between interruptions)")

    def fitted_for(self, gpu: GPU, precision: str) -> bool:
        """Whether training records of this GPU family at this precision set its share (else it borrows)."""
        return precision in (self.train_share.get(gpu.generation) or {})

    def charged_width(self, hidden: float) -> float:
        """The width the training share's width term takes for a model `hidden` wide: a model narrower than
        the fit's narrowest is charged as that one (the term is not extrapolated)."""
        return max(hidden, self.train_width_min)

    def width_share(self, hidden: float | None) -> float:
        """The part of the fitted training share a model of width `hidden` reaches: width / (width +
        train_half_hidden) at its charged width; 1 without the term or a width."""
        if not (self.train_half_hidden and hidden):
            return 1.0
        at = self.charged_width(hidden)
        return at / (at + self.train_half_hidden)

    def train_share_for(self, gpu: GPU, precision: str) -> tuple[float, str]:
        if self.fitted_for(gpu, precision):
            return self.train_share[gpu.generation][precision], f"fitted for {gpu.generation} {precision}"
        p = precision if precision in self.train_default else "bf16"
        how = f"the lowest share measured on a GPU family in {p}: no {gpu.generation} {precision} training measurement"
        m, sw = self.maturity(gpu), gpu.fig("software")
        if m < 1 and sw.value != "cuda":
            # a stack other than CUDA whose kernels are still maturing (CANN, Habana, ROCm) reaches less of the
            # borrowed CUDA share, as its serving does (review 13: Ascend 910C trained at 52% MFU, a B200's);
            # CUDA's newer parts keep it, their training records fit without it
            return self.train_default[p] * m, (f"{how}, x {m:g} for its {sw.value} stack ({(sw.extra or {}).get('maturity')}: the "
                                               f"serving fit's maturing_software_share, K12, K18)")
        return self.train_default[p], how


_CAL = Kept("calibration", 16)


def _v(d, key: str, default=None, where: str = ""):
    """A factor of efficiency.yaml (`key: {v: 0.7, ...}` or `key: 0.7`) as a number; a bad one is an
    InputError naming it (a hand-edited catalog must not end in a traceback)."""
    e = d.get(key) if isinstance(d, dict) else None
    v = e.get("v", default) if isinstance(e, dict) else (default if e is None else e)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")) or v < 0:
        raise InputError(Problem(f"must be a non-negative number (got {v!r})", "catalog/efficiency.yaml",
                                 field=f"{where}{key}"))
    return float(v)


def calibration(catalog: Catalog) -> Calibration:
    """The calibration of a catalog, built once per efficiency table (the planner's loops call the speed
    functions often)."""
    return _CAL.get(part_key(catalog, "efficiency"), lambda: _calibration(catalog.efficiency))


def _calibration(eff: dict) -> Calibration:
    sv, tr = eff.get("serving") or {}, eff.get("training") or {}
    if not isinstance(sv, dict) or not isinstance(tr, dict):
        raise InputError(Problem("serving and training must be mappings of factors", "catalog/efficiency.yaml"))
    fams = tr.get("share_of_matmul") or {}
    fams = fams if isinstance(fams, dict) else {}
    share = {gen: {p: _v(fam, p, where=f"training.share_of_matmul.{gen}.") for p in fam if p not in ("src", "note", "measured_on")}
             for gen, fam in fams.items() if gen != "default" and isinstance(fam, dict)}
    default = {p: _v(fams.get("default") or {}, p, where="training.share_of_matmul.default.")
               for p in (fams.get("default") or {}) if p not in ("src", "note")}
    S, T = "serving.", "training."
    cal = Calibration(
        # the unfitted fallbacks below are only for a catalog without the fitted block (docs/accuracy.md)
        bw_share=_v(eff, "hbm_share", 0.6),
        compute_share=_v(sv, "compute_share", 0.6, S),
        layer_us=_v(sv, "layer_overhead_us", 0.0, S),
        seq_us=_v(sv, "sequence_overhead_us", 0.0, S),
        allreduce_us=_v(sv, "allreduce_latency_us", 10.0, S),
        moe_half_tokens=_v(sv, "moe_half_tokens", 0.0, S),
        moe_half_width=_v(sv, "moe_half_width", 0.0, S),
        ep_skew=_v(sv, "ep_skew", 0.0, S),
        request_ms=_v(sv, "request_overhead_ms", 0.0, S),
        first_token_steps=_v(sv, "first_token_steps", 1.5, S),
        ttft_p99_factor=_v(sv, "ttft_p99_factor", 1.0, S),
        rate_read_share=_v(sv, "rate_read_share", 0.0, S),
        tpot_p99_factor=_v(sv, "tpot_p99_factor", 1.0, S),
        pp_return_us=_v(sv, "pp_return_us", 0.0, S),
        host_base_us=_v(eff.get("host_staged") or {}, "base_latency_us", 0.0, "host_staged."),
        host_exchange_us=_v(eff.get("host_staged") or {}, "exchange_us", 0.0, "host_staged."),
        mixed_input_share=_v(sv, "mixed_input_share", 1.0, S),
        mixed_input_matmul_share=_v(sv, "mixed_input_matmul_share", 1.0, S),
        maturing_share=_v(sv, "maturing_software_share", 1.0, S),
        engine_max_batch=max(1, int(_v(sv, "engine_max_batch", 256, S))),
        memory_utilisation=_v(sv, "memory_utilisation", 0.9, S),
        link_share=_v(eff, "link_share", 0.88),
        scale_out_gb_s=_v(eff, "scale_out_gb_s_per_gpu", 50.0),
        pcie={"gen3": 16.0, "gen4": 32.0, "gen5": 64.0, **{k: _v(eff["pcie_gb_s"], k, where="pcie_gb_s.")
                                                             for k in (eff.get("pcie_gb_s") or {}) if k.startswith("gen")}},
        train_share={g: f for g, f in share.items() if f},
        train_fsdp_only=frozenset(g for g, fam in fams.items() if isinstance(fam, dict) and fam.get("measured_on") == "zero3"),
        train_default={k: v for k, v in default.items() if v} or {"bf16": 0.5, "fp8": 0.4, "fp4": 0.4},
        train_moe_share=_v(tr, "moe_share", 1.0, T),
        train_moe_half_width=_v(tr, "moe_half_width", 0.0, T),
        train_moe_half_tokens=_v(tr, "moe_half_tokens", 0.0, T),
        train_half_hidden=_v(tr, "half_hidden", 0.0, T),
        train_width_min=_v(tr, "half_hidden_min_width", 0.0, T),
        train_zero3_share=_v(tr, "zero3_share", 1.0, T),
        train_spread=_v(tr, "residual_spread", 0.0, T),
        train_moe_spread=_v(tr, "moe_residual_spread", _v(tr, "residual_spread", 0.0, T), T),
        goodput_base=_v(tr, "goodput_base", 1.0, T),
        goodput_spread=_v(tr, "goodput_spread", 0.0, T),
        step_overhead_s=_v(tr, "step_overhead_s", 0.0, T),
        step_overhead_min_step_s=_v(tr, "step_overhead_min_step_s", 0.0, T),
        goodput_full_scale_gpus=_v(tr, "goodput_full_scale_gpus", 0.0, T),
        qlora_dequant_share=_v(tr, "qlora_dequant_share", 0.0, T),
        max_batch_tokens=_v(eff.get("training_batch") or {}, "max_tokens_per_step", 0.0, "training_batch."),
        max_batch_tokens_moe=_v(eff.get("training_batch") or {}, "max_tokens_per_step_moe", 0.0, "training_batch."),
        interruptions_per_gpu_hour=_v(eff.get("whole_run") or {}, "interruptions_per_gpu_hour", 0.0, "whole_run."),
        hours_lost_per_interruption=_v(eff.get("whole_run") or {}, "hours_lost_per_interruption", 0.0, "whole_run."),
        sources={k: (v.get("src") if isinstance(v, dict) else None) for k, v in sv.items()},
    )
    return cal


def default_calibration() -> Calibration:
    from advisor.inputs import catalog as catalog_mod
    return calibration(catalog_mod.default())


#: the catalog's efficiency table -> its disaggregation settings
_DISAGG = Kept("disaggregation settings", 16)


def disaggregation_settings(catalog: Catalog) -> tuple[float, float, float]:
    """(prompt tokens, TPOT ms, prefill utilisation) of catalog/efficiency.yaml `disaggregation`: the
    planner searches disaggregated plans for prompts at least that long or a TPOT at most that tight
    (where DistServe, Splitwise and Mooncake report their gains; a stated choice, CHOICE_DISAGG), and
    sizes the prefill pool to be at most that busy."""
    # read once per efficiency table, as calibration.calibration keeps its figures (the planner asks for
    # every GPU's search)
    return _DISAGG.get(part_key(catalog, "efficiency"), lambda: _disaggregation_settings(catalog.efficiency))


def _disaggregation_settings(eff: dict) -> tuple[float, float, float]:
    d = eff.get("disaggregation") or {}
    when = d.get("search_when") if isinstance(d, dict) else None
    where = "disaggregation.search_when."
    return (_v(when or {}, "prompt_tokens_at_least", 8192, where), _v(when or {}, "tpot_ms_at_most", 50, where),
            _v(d if isinstance(d, dict) else {}, "prefill_utilisation", 0.8, "disaggregation."))
