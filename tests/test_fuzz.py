"""Fuzzing the real commands with hostile files: workload, rule, price and catalog files, templates,
decision records, resume files, transcripts and sweep grids, made up or mutated from the shipped
ones. Whatever the input, a command gives an answer or a clear error: exit 0 (replay and an ended
dialogue may also say 1), or exit 2 with every line of stderr "gpu-advisor: error: ...", never a
traceback and never a hang.

CI runs a bounded number of inputs per target (GPU_ADVISOR_FUZZ_EXAMPLES, default 25: the file runs
in well under a minute on 2 cores). Run it longer outside CI:

    GPU_ADVISOR_FUZZ_EXAMPLES=2000 GPU_ADVISOR_FUZZ_REPORT=fuzz.json python -m pytest tests/test_fuzz.py

GPU_ADVISOR_FUZZ_REPORT writes how many inputs each target tried.
"""
import io
import json
import math
import os
import shutil
import signal
import string
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from advisor.inputs import catalog as catalog_mod
from advisor.shell.cli import main

from conftest import EXAMPLES, ROOT

EXAMPLES_N = int(os.environ.get("GPU_ADVISOR_FUZZ_EXAMPLES", "25"))
HANG_SECONDS = 60
TRIED: dict[str, int] = {}

FUZZ = settings(max_examples=EXAMPLES_N, deadline=None, derandomize=EXAMPLES_N <= 25, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    path = os.environ.get("GPU_ADVISOR_FUZZ_REPORT")
    if path:
        old = json.loads(open(path).read()) if os.path.exists(path) else {}
        for k, v in TRIED.items():
            old[k] = old.get(k, 0) + v
        with open(path, "w") as f:
            json.dump(old, f, indent=1)


class _Hang(Exception):
    pass


def run(capsys, target: str, argv: list[str], ok=(0,)) -> int:
    """Run a command in this process; fail on a traceback, a hang, or an error that is not one line per problem."""
    TRIED[target] = TRIED.get(target, 0) + 1

    def hang(signum, frame):
        raise _Hang(f"{target}: no answer in {HANG_SECONDS} s: {argv}")
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS)
    try:
        code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if not line.startswith("gpu-advisor: warning: ")]
    if code == 2:
        assert lines, f"exit 2 without a message: {argv}"
        assert all(line.startswith("gpu-advisor: error: ") for line in lines), err
    else:
        assert code in ok, (code, argv, out[-500:], err[-500:])
    assert "Traceback" not in err
    return code


# --- a generic text mutator: what a careless edit or a hostile author does to a YAML file -------------------

HOSTILE = ["", "~", "null", "0", "-1", "0.5", "1e11", "1e400", "-1e400", ".nan", ".inf", "-.inf", "9" * 400, "9" * 5000,
           "true", "no", "[]", "{}", "[1, 2]", "{a: 1}", "'x'", "h100", "AMD", "h100-sxm5", "gpt-oss-120b", "inference",
           "!!python/object/apply:os.system ['true']", "*nope", "&a x", "'\x1b[31m<script>'", "'{{ 9 ** 99 }}'",
           "'" + "a" * 300 + "'", "[" * 80 + "]" * 80, "'.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*Z'", "2026-13-45",
           "0x10", "1_000", "+", "'='", "é", "\t", "- x", "? a", "|", ">"]

edits = st.lists(st.tuples(st.sampled_from(["value", "delete", "duplicate", "insert", "chars", "indent"]),
                           st.integers(0, 10_000), st.sampled_from(HOSTILE),
                           st.text(string.printable + "é€\x00\x1b", max_size=8)), min_size=1, max_size=4)


def mutate(text: str, ops) -> str:
    lines = text.splitlines()
    for kind, at, token, chars in ops:
        if not lines:
            lines = [token]
            continue
        i = at % len(lines)
        line = lines[i]
        if kind == "value" and ":" in line:
            key = line.split(":", 1)[0]
            lines[i] = f"{key}: {token}"
        elif kind == "value" and "," in line:
            parts = line.split(",")
            j = at % len(parts)
            head = parts[j].split(":", 1)
            parts[j] = f"{head[0]}: {token}" if len(head) == 2 else token
            lines[i] = ",".join(parts)
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, line)
        elif kind == "insert":
            lines.insert(i, f"{token}: {chars}")
        elif kind == "chars":
            k = at % (len(line) + 1)
            lines[i] = line[:k] + chars + line[k:]
        else:
            lines[i] = " " * (at % 5) + line
    return "\n".join(lines) + "\n"


def shipped(path) -> str:
    return (ROOT / path).read_text()


EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "grid.yaml")
RULE_FILES = sorted(p.name for p in (ROOT / "rules").glob("*.yaml") if p.name != "questions.yaml")
TRANSCRIPTS = sorted(p.name for p in (ROOT / "transcripts").glob("*.yaml"))


# --- workload files ---------------------------------------------------------------------------------------------

@FUZZ
@given(name=st.sampled_from(EXAMPLE_FILES), ops=edits, fmt=st.sampled_from(["json", "summary", "md"]))
def test_mutated_workload_files(capsys, tmp_path_factory, name, ops, fmt):
    f = tmp_path_factory.mktemp("w") / name
    f.write_text(mutate(shipped(f"examples/{name}"), ops))
    run(capsys, "workload", ["recommend", str(f), "--format", fmt])


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from(HOSTILE), st.text(max_size=20))
workload_docs = st.fixed_dictionaries(
    {"mode": st.one_of(st.sampled_from(["inference", "training", "fine-tuning"]), scalars),
     "model": st.one_of(st.sampled_from(["gpt-oss-120b", "llama-3.1-8b", "deepseek-v3", "other"]), scalars,
                        st.dictionaries(st.sampled_from(["params_b", "active_params_b", "expert_params_b", "experts",
                                                         "experts_per_token", "layers", "kv_heads", "head_dim", "hidden_size",
                                                         "attention_heads", "sliding_window", "sliding_window_layers",
                                                         "mla_kv_dim", "precision", "max_context", "bogus"]),
                                        st.one_of(scalars, st.integers(0, 100_000), st.floats(0, 1e6)), max_size=8))},
    optional={k: scalars for k in ["precision", "kv_precision", "method", "optimizer", "zero_stage", "context_tokens",
                                   "prompt_tokens", "output_tokens", "concurrency", "training_tokens", "latency", "task", "name"]}
    | {"constraints": st.one_of(scalars, st.dictionaries(st.sampled_from(["import_restricted", "liquid_cooling", "power_kw_per_node",
                                                                           "deployment", "load", "budget_usd_per_hour", "max_gpus",
                                                                           "deadline_hours", "gpus", "bogus"]),
                                                          st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=5))})


@FUZZ
@given(doc=workload_docs)
def test_made_up_workload_files(capsys, tmp_path_factory, doc):
    f = tmp_path_factory.mktemp("w") / "w.json"          # JSON is YAML: any value, exactly as generated
    f.write_text(json.dumps(doc, allow_nan=True))
    run(capsys, "workload", ["recommend", str(f), "--format", "json"])


# --- rule files ---------------------------------------------------------------------------------------------------

facts = st.sampled_from(["workload.mode", "workload.concurrency", "workload.params_b", "candidate.gpu", "candidate.vendor",
                         "candidate.memory_gb", "candidate.fits", "candidate.count", "derived.short_text_serving",
                         "derived.nope", "workload.nonsense"])
ops_ = st.sampled_from(["eq", "ne", "lt", "gte", "between", "in", "not_in", "exists", "matches", "like"])
leaf = st.builds(lambda f, o, v: {f: {o: v}}, facts, ops_, st.one_of(scalars, st.lists(scalars, max_size=4)))
conds = st.recursive(leaf, lambda c: st.one_of(st.builds(lambda xs: {"all": xs}, st.lists(c, max_size=3)),
                                               st.builds(lambda xs: {"any": xs}, st.lists(c, max_size=3)),
                                               st.builds(lambda x: {"not": x}, c)), max_leaves=6)
effects = st.dictionaries(st.sampled_from(["prefer", "avoid", "exclude", "warn", "note", "derive", "bogus"]),
                          st.one_of(scalars, st.dictionaries(st.sampled_from(["weight", "gpu", "vendor", "reason", "text",
                                                                              "severity", "x"]), scalars, max_size=3)),
                          max_size=2)
rules_ = st.lists(st.fixed_dictionaries({"id": st.one_of(st.sampled_from(["mine", "must-fit-in-memory", "x-1"]), scalars),
                                         "title": scalars, "source": st.one_of(st.just(["ours"]), scalars),
                                         "when": st.one_of(conds, scalars), "then": st.one_of(effects, scalars)},
                                        optional={"replaces": st.one_of(st.just("must-fit-in-memory"), scalars),
                                                  "because": st.one_of(st.just("{{ candidate.gpu }} {{ workload.mode }}"), scalars),
                                                  "priority": scalars, "examples": scalars}), min_size=1, max_size=3)


@FUZZ
@given(rules=rules_)
def test_made_up_rule_files(capsys, tmp_path_factory, rules):
    d = tmp_path_factory.mktemp("rules")
    (d / "r.json").write_text(json.dumps(rules, allow_nan=True))
    (d / "r.yaml").symlink_to(d / "r.json")
    run(capsys, "rules", ["rules", "lint", str(d)])
    run(capsys, "rules", ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(d), "--format", "summary"])


@FUZZ
@given(name=st.sampled_from(RULE_FILES), ops=edits)
def test_mutated_shipped_rule_files(capsys, tmp_path_factory, name, ops):
    """A copy of a shipped file as a user folder: it collides with the shipped rules unless the
    mutation renamed them; whatever it is, one line per problem."""
    d = tmp_path_factory.mktemp("rules")
    (d / name).write_text(mutate(shipped(f"rules/{name}"), ops))
    run(capsys, "rules", ["rules", "lint", str(d)])
    run(capsys, "rules", ["rules", "test", str(d)], ok=(0, 1))


# --- price and catalog files ------------------------------------------------------------------------------------------

prices_ = st.lists(st.dictionaries(st.sampled_from(["gpu", "gpus_per_instance", "usd_per_hour", "provider", "date", "source",
                                                    "tier", "x"]), scalars, min_size=3, max_size=8), max_size=3)


@FUZZ
@given(prices=st.one_of(prices_.map(lambda p: {"prices": p}), scalars), ops=edits, mutated=st.booleans())
def test_price_files(capsys, tmp_path_factory, prices, ops, mutated):
    f = tmp_path_factory.mktemp("p") / "q.yaml"
    f.write_text(mutate(shipped("catalog/prices.yaml"), ops) if mutated else json.dumps(prices, allow_nan=True))
    run(capsys, "prices", ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--prices", str(f), "--format", "summary"])


@FUZZ
@given(name=st.sampled_from(["gpus.yaml", "models.yaml", "prices.yaml", "efficiency.yaml", "sources.yaml", "knowledge.yaml"]),
       ops=edits)
def test_mutated_catalog_files(capsys, tmp_path_factory, monkeypatch, name, ops):
    d = tmp_path_factory.mktemp("cat") / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    (d / name).write_text(mutate((d / name).read_text(), ops))
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(d))
    catalog_mod._CACHE.clear()
    try:
        run(capsys, "catalog", ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json"])
    finally:
        catalog_mod._CACHE.clear()


# --- templates -----------------------------------------------------------------------------------------------------------

pieces = st.sampled_from(["{{ headline }}", "{{ decisive.id }}", "{% for a in audit %}", "{% endfor %}", "{% if headline %}",
                          "{% endif %}", "{{ 9 ** 99 }}", "{{ 'x' * 99999 }}", "{{ range(9999) | list | length }}",
                          "{% include 'x.j2' %}", "{% include '../x' %}", "{{ ''.__class__ }}", "{{ headline | center(50) }}",
                          "{{ '%5d' % 3 }}", "{% set ns = namespace(s='ab') %}", "{% set ns.s = ns.s ~ ns.s %}",
                          "{% macro m(x) %}{{ x }}{% endmacro %}{{ m(headline) }}", "{{ cycler(1,2).next() }}",
                          "{{ self }}", "{{ undefined_name }}", "{%", "}}", "text ", "\n", "{{ facts | tojson }}",
                          "{{ (headline ~ headline) | length }}", "{{ 10 // 0 }}", "{{ [1] * 5 }}", "{{ headline.format(1) }}"])


@FUZZ
@given(parts=st.lists(pieces, min_size=1, max_size=8))
def test_templates(capsys, tmp_path_factory, parts):
    d = tmp_path_factory.mktemp("t")
    (d / "x.j2").write_text("{{ headline }}")
    t = d / "memo.j2"
    t.write_text("".join(parts))
    run(capsys, "template", ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)])


# --- decision records, resume files, transcripts, grids ------------------------------------------------------------------

@pytest.fixture(scope="module")
def record():
    from advisor.inputs import catalog, workload
    from advisor.judgement import decision, knowledge
    from advisor.numbers import estimate as estimator
    cat = catalog.default()
    d = decision.decide(estimator.estimate(workload.load(EXAMPLES / "chat-assistant.yaml", cat), cat), knowledge.load(), cat)
    return json.loads(json.dumps(d.record, default=str))


paths = st.lists(st.one_of(st.sampled_from(["recommendation", "decisive_rule", "candidates", "trace", "estimate", "inputs",
                                            "versions", "runner_up", "gpu", "score", "contributions", "excluded_by",
                                            "rule_dirs", "price_files", "path", "source"]), st.integers(0, 40)),
                 min_size=1, max_size=4)


def damage(rec, path, value, delete):
    node = rec
    for p in path[:-1]:
        if isinstance(node, dict) and p in node:
            node = node[p]
        elif isinstance(node, list) and isinstance(p, int) and node:
            node = node[p % len(node)]
        else:
            return
    last = path[-1]
    if isinstance(node, dict) and not isinstance(last, int):
        if delete:
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and node:
        node[last % len(node)] = value


@FUZZ
@given(changes=st.lists(st.tuples(paths, st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.text(max_size=4), scalars, max_size=2)),
                                  st.booleans()), min_size=1, max_size=4),
       why_not=st.sampled_from([None, "b200", "mi300x"]))
def test_damaged_decision_records(capsys, tmp_path_factory, record, changes, why_not):
    rec = json.loads(json.dumps(record))
    for path, value, delete in changes:
        damage(rec, path, value, delete)
    f = tmp_path_factory.mktemp("d") / "d.json"
    f.write_text(json.dumps(rec, allow_nan=True))
    run(capsys, "record", ["explain", str(f)] + (["--why-not", why_not] if why_not else []))


answers = st.dictionaries(st.sampled_from(["mode", "model", "concurrency", "context_tokens", "precision", "task",
                                           "constraints.deployment", "model.params_b", "bogus"]), scalars, max_size=5)


@FUZZ
@given(state=st.one_of(st.fixed_dictionaries({"resume": st.one_of(st.just(1), scalars), "answers": st.one_of(answers, scalars)},
                                             optional={"preset": st.one_of(st.lists(st.text(max_size=8), max_size=3), scalars),
                                                       "asked": st.one_of(st.lists(st.text(max_size=8), max_size=3), scalars),
                                                       "steps": st.one_of(st.lists(scalars, max_size=3), scalars)}), scalars),
       typed=st.lists(st.sampled_from(["", "inference", "back", "?", "why", "quit", "yes", "no", "64", "x" * 50]), max_size=6))
def test_tampered_resume_files(capsys, tmp_path_factory, monkeypatch, state, typed):
    d = tmp_path_factory.mktemp("ask")
    f = d / "resume.yaml"
    f.write_text(json.dumps(state, allow_nan=True))
    monkeypatch.setenv("GPU_ADVISOR_PIPE", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(t + "\n" for t in typed)))
    run(capsys, "resume", ["ask", "--resume", str(f), "--out-dir", str(d)], ok=(0, 1))


@FUZZ
@given(name=st.sampled_from(TRANSCRIPTS), ops=edits)
def test_mutated_transcripts(capsys, tmp_path_factory, name, ops):
    f = tmp_path_factory.mktemp("t") / name
    f.write_text(mutate(shipped(f"transcripts/{name}"), ops))
    run(capsys, "transcript", ["replay", str(f)], ok=(0, 1))
    assert sorted(p.name for p in f.parent.iterdir()) == [name]          # replay writes nothing


@FUZZ
@given(ops=edits, jobs=st.sampled_from([None, "1", "2", "-1", "0", "999999"]))
def test_mutated_grids(capsys, tmp_path_factory, ops, jobs):
    d = tmp_path_factory.mktemp("g")
    shutil.copy(EXAMPLES / "chat-assistant.yaml", d / "chat-assistant.yaml")
    (d / "grid.yaml").write_text(mutate(shipped("examples/grid.yaml"), ops))
    run(capsys, "grid", ["sweep", str(d / "grid.yaml"), "--out", str(d / "o.csv"), "--quiet"] + (["--jobs", jobs] if jobs else []))


# --- config.json: the real configs mutated, through the workload parse and the estimate -----------------------------

CONFIG_EXAMPLES = max(EXAMPLES_N, 300)
CONFIG_SECONDS = 10
CONFIG_FIXTURES = ROOT / "tests" / "fixtures" / "configs"
CONFIG_NAMES = sorted(p.parent.name for p in CONFIG_FIXTURES.glob("*/config.json"))
#: fields the counting reads, mutated beside the config's own (an absent one is added)
CONFIG_KEYS = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
               "intermediate_size", "moe_intermediate_size", "num_local_experts", "num_experts", "n_routed_experts",
               "num_experts_per_tok", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
               "mlp_only_layers", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank",
               "sliding_window", "max_window_layers", "sliding_window_pattern", "use_sliding_window", "layer_types",
               "max_position_embeddings", "tie_word_embeddings", "attention_bias", "torch_dtype", "model_type",
               "quantization_config", "text_config", "vision_config", "_name_or_path", "shared_expert_intermediate_size"]
CONFIG_FUZZ = settings(FUZZ, max_examples=CONFIG_EXAMPLES, derandomize=CONFIG_EXAMPLES <= 300)

config_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 300), st.integers(-10**6, 10**7),
    st.sampled_from([0, -1, 1, 2, 7, 10**4, 10**5, 10**8, 10**18, 10**18 + 1, 10**19, 10**200, -(10**200), 10 ** 4000]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, 1e-9, 2.0, 1e200, -0.0, 32.0]),
    st.sampled_from(["32", "false", "true", "", "bfloat16", "float8_e4m3fn", "sliding_attention", "llama", "gpt_oss",
                     "mixtral", "deepseek_v3", "gemma3", "\x1b]0;evil\x07", "<script>", "noaux_tc"]),
    st.text(max_size=6), st.lists(st.integers(-2, 100), max_size=5), st.lists(st.sampled_from(["sliding_attention", "full_attention", 3]), max_size=40),
    st.dictionaries(st.sampled_from(["quant_method", "hidden_size", "model_type", "x"]), st.sampled_from(["mxfp4", "fp8", 5, None, [1]]), max_size=2))
config_ops = st.lists(st.tuples(st.sampled_from(["set", "set", "scale", "scale", "bump", "bump", "delete", "nest", "inner"]),
                                st.integers(0, 10**6), config_values,
                                st.sampled_from([-1, 0, 0.5, 2, 3, 10, 1000, 10**6, 1.5, 1, -8, 8, 64])), min_size=1, max_size=4)
config_text_ops = st.one_of(st.just([]), st.just([]), st.just([]),      # most inputs are well-formed JSON
                            st.lists(st.tuples(st.sampled_from(["digits", "constant", "deep", "truncate", "bytes", "bom", "dup"]),
                                               st.integers(0, 10**6)), min_size=1, max_size=2))


def mutate_config(cfg: dict, ops) -> dict:
    """What a careless edit or a hostile author does to a config: values replaced, scaled, deleted, nested."""
    for kind, at, value, factor in ops:
        target = cfg
        nested = [k for k in ("text_config", "vision_config") if isinstance(cfg.get(k), dict)]
        if kind == "inner" and nested:
            target = cfg[nested[at % len(nested)]]
        keys = sorted(set(target) | set(CONFIG_KEYS))
        key = keys[at % len(keys)]
        if kind in ("set", "inner"):
            target[key] = value
        elif kind in ("scale", "bump"):       # a plausible edit: a figure doubled, halved, or off by a few
            numeric = [k for k in sorted(target) if isinstance(target[k], (int, float)) and not isinstance(target[k], bool)
                       and abs(target[k]) < 1e300]          # (10^4000 x 0.5 cannot be a float: already hostile enough)
            if numeric:
                k = numeric[at % len(numeric)]
                v = target[k] * factor if kind == "scale" else target[k] + (int(factor) if float(factor).is_integer() else factor)
                target[k] = int(v) if isinstance(target[k], int) and float(v).is_integer() else v
        elif kind == "delete":
            target.pop(key, None)
        else:
            deep = value
            for _ in range(at % 40):          # around MAX_DEPTH (32)
                deep = [deep] if at % 2 else {"x": deep}
            target[key] = deep
    return cfg


def config_text(cfg: dict, ops) -> bytes:
    text = json.dumps(cfg, allow_nan=True)          # NaN, Infinity as JSON tools (and Transformers) write them
    raw = text.encode()
    for kind, at in ops:
        if kind == "digits":
            text = text.replace(": 4096", ": " + "4" * (1 + at % 6000), 1)
        elif kind == "constant":
            text = text.replace(": 32", ": " + ["NaN", "Infinity", "-Infinity", "1e400", "-1e309"][at % 5], 1)
        elif kind == "deep":
            n = 10 + at % 200_000
            text = text[:-1] + ', "deep": ' + "[" * n + "]" * n + "}"
        elif kind == "truncate":
            text = text[: at % (len(text) + 1)]
        elif kind == "dup":
            text = text[:-1] + ', "num_hidden_layers": 1}'
        raw = text.encode()
        if kind == "bytes":
            i = at % (len(raw) + 1)
            raw = raw[:i] + b"\xe9\xff" + raw[i:]
        elif kind == "bom":
            raw = b"\xef\xbb\xbf" + raw
    return raw


def _finite(x, what):
    assert isinstance(x, (int, float)) and math.isfinite(x) and x >= 0, f"nonsense {what}: {x!r}"


def sane(est) -> None:
    """No negative or non-finite memory, size, speed or cost; active parameters within the total; layers >= 1."""
    m = est.workload.model
    params, active = m.num("params_b"), m.num("active_params_b")
    _finite(params, "params_b")
    _finite(active, "active_params_b")
    assert 0 < active <= params * (1 + 1e-9), f"nonsense: {active}B active of {params}B"
    for k in ("layers", "kv_heads", "head_dim", "attention_heads", "hidden_size"):
        if m.num(k) is not None:
            assert m.num(k) >= 1, f"nonsense {k}: {m.num(k)}"
    s = est.ledger.sized
    assert 0 < s.active <= s.params * (1 + 1e-9), (s.active, s.params)
    for k, t in {**est.ledger.terms, **est.compute}.items():
        if t.value is not None:
            _finite(t.value, k)
    if est.kv_bytes_per_token is not None:
        _finite(est.kv_bytes_per_token, "kv_bytes_per_token")
        assert est.kv_bytes_per_token > 0
    _finite(est.need_bytes, "need_bytes")
    for c in est.candidates:
        for f in ("count", "nodes", "tp", "pp", "dp", "per_card_gb", "prefill_ms", "decode_ms_per_token", "tokens_per_s",
                  "tokens_per_s_per_user", "training_hours", "power_kw_per_node", "usd_per_hour", "usd_per_million_tokens",
                  "usd_per_job"):
            v = getattr(c, f)
            if v is not None:
                _finite(v, f"{c.gpu.id}.{f}")


def decide_config(folder, raw: bytes, mode: str) -> str:
    """One input through the workload parse and the estimate, in this process: 'refused' or 'answered'."""
    from advisor.numbers import estimate as estimator
    from advisor.inputs import workload
    from advisor.base.errors import InputError
    cat = catalog_mod.default()
    (folder / "config.json").write_bytes(raw)
    doc = {"mode": mode, "model": "config.json", "concurrency": 8}
    if mode == "training":
        doc["training_tokens"] = 1e9

    def hang(signum, frame):
        raise _Hang(f"config: no answer in {CONFIG_SECONDS} s: {raw[:300]!r}")
    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, CONFIG_SECONDS)
    try:
        est = estimator.estimate(workload.parse(doc, cat, str(folder / "w.yaml")), cat, ["h100-sxm", "l40s", "mi300x", "b200", "t4"])
    except InputError as exc:
        assert exc.problems
        for p in exc.problems:
            assert p.field and "\n" not in str(p) and str(p).startswith(str(folder)), str(p)
        return "refused"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    sane(est)
    return "answered"


@CONFIG_FUZZ
@given(name=st.sampled_from(CONFIG_NAMES), ops=config_ops, text_ops=config_text_ops,
       mode=st.sampled_from(["inference", "inference", "training"]))
def test_mutated_configs(tmp_path_factory, name, ops, text_ops, mode):
    """The shipped configs (tests/fixtures/configs) with fields replaced, scaled, deleted or nested and their JSON
    damaged, through the workload parse and the estimate in this process. Each input is refused (InputError, every
    problem one line naming its field) or answered sanely: no other exception, an answer within CONFIG_SECONDS, no
    negative or non-finite memory, size, speed or cost, no active parameters above the total, no zero layers.
    CI runs 300 inputs (a few seconds); the long run, by hand:

        GPU_ADVISOR_FUZZ_EXAMPLES=20000 GPU_ADVISOR_FUZZ_REPORT=fuzz.json python -m pytest tests/test_fuzz.py -k mutated_configs

    (the report counts the inputs under "config", "config-refused" and "config-answered")."""
    cfg = mutate_config(json.loads((CONFIG_FIXTURES / name / "config.json").read_text()), ops)
    outcome = decide_config(tmp_path_factory.mktemp("cfg"), config_text(cfg, text_ops), mode)
    for k in ("config", f"config-{outcome}"):
        TRIED[k] = TRIED.get(k, 0) + 1


@pytest.mark.parametrize("change", [
    {"num_key_value_heads": -8}, {"num_hidden_layers": 10**8}, {"tie_word_embeddings": "false"},
    {"num_experts_per_tok": 64}, {"vocab_size": float("nan")}, {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
    {"num_local_experts": 4},        # a sane change: answered
])
def test_mutated_configs_through_the_command(tmp_path, change):
    """A few inputs through the real entry point in a child process: exit 2 with one line naming the field, or 0."""
    import subprocess
    cfg = json.loads((CONFIG_FIXTURES / "mixtral-8x7b" / "config.json").read_text())
    cfg.update(change)
    (tmp_path / "config.json").write_text(json.dumps(cfg, allow_nan=True))
    (tmp_path / "w.yaml").write_text("mode: inference\nmodel: config.json\n")
    r = subprocess.run([sys.executable, "-m", "advisor", "estimate", str(tmp_path / "w.yaml"), "--gpu", "h100"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    key = next(iter(change))
    if key == "num_local_experts":
        assert r.returncode == 0 and "kv cache" in r.stdout, r.stderr
        return
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"gpu-advisor: error: {tmp_path}/config.json: ") and all(l.startswith("gpu-advisor: error: ") for l in lines)
    assert key in r.stderr, r.stderr


# --- price CSVs for `prices import` --------------------------------------------------------------------------------
# Mutations of real SkyPilot CSVs (tests/fixtures/skypilot/ and the reference snapshot beside the checkout): an
# encoding or a BOM, columns dropped, duplicated or renamed, values replaced (abc, inf, nan, 2.5, -1, huge), quoting
# broken, binary junk, long fields. Whatever the input: exit 2 with one line, or an import whose file loads with
# `--prices` and holds no NaN or non-positive price. A long run by hand (0 crashes, hangs or nonsense at 20,000):
#
#     GPU_ADVISOR_FUZZ_EXAMPLES=20000 GPU_ADVISOR_FUZZ_REPORT=fuzz.json python -m pytest tests/test_fuzz.py -k price_csv

_REFERENCE_PRICES = ROOT.parent / "shared" / "reference" / "prices"
PRICE_CSVS = sorted(str(p) for p in (ROOT / "tests" / "fixtures" / "skypilot").glob("*/vms.csv")) \
    + sorted(str(p) for p in _REFERENCE_PRICES.glob("*.csv"))
CSV_VALUES = ["", "abc", "inf", "-inf", "nan", "NaN", "2.5", "-1", "0", "1e300", "9" * 400, "9" * 5000, "8.0", "1e-9",
              "\x1b]0;x\x07", "<script>", "# H1", "a\nb", '"', '""', "A100", "H100", "tpu-v5p-99999999", "tpu-v6e-0",
              "{'SizeInMiB': 1.2.3}", "{'SizeInMiB': 99999999999}", "x" * 2000, "\x00", "\ufeff", "é€"]
csv_edits = st.lists(st.tuples(st.sampled_from(["value", "drop_column", "dup_column", "rename_column", "quote", "junk",
                                                "dup_row", "drop_row", "long"]),
                               st.integers(0, 10_000), st.sampled_from(CSV_VALUES), st.binary(max_size=12)),
                     min_size=1, max_size=5)


def mutate_csv(text: str, ops) -> str:
    rows = [line.split(",") for line in text.splitlines()]
    for kind, at, value, junk in ops:
        if not rows:
            rows = [[value]]
        r = rows[at % len(rows)]
        j = at % max(len(r), 1)
        if kind == "value" and r:
            r[j] = value
        elif kind in ("drop_column", "dup_column", "rename_column"):
            for row in rows:
                if j < len(row):
                    if kind == "drop_column":
                        del row[j]
                    elif kind == "dup_column":
                        row.insert(j, row[j])
                    elif row is rows[0]:
                        row[j] = value or row[j].lower()
        elif kind == "quote" and r:
            r[j] = '"' + r[j]
        elif kind == "junk":
            r.append(junk.decode("latin-1"))
        elif kind == "dup_row":
            rows.insert(at % len(rows), list(r))
        elif kind == "drop_row":
            rows.remove(r)
        elif kind == "long" and r and len(r[j]) < 1000:     # long, not without bound: the runner's memory is not the target
            r[j] = (r[j] or "x") * 500
    return "\n".join(",".join(row) for row in rows) + "\n"


def _encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-8-bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass")
    return text.encode(encoding, "replace")


def _import_is_sane(capsys, target: str, argv: list[str], out) -> None:
    code = run(capsys, target, argv)
    if code != 0:
        return
    from advisor.inputs.prices import load_prices
    rows = load_prices(out, catalog_mod.default())     # the file it wrote loads as --prices reads it
    for p in rows:
        assert p.usd_per_hour == p.usd_per_hour and 0 < p.usd_per_hour < 1e6, p
        assert p.usd_per_hour_median is None or p.usd_per_hour_median >= p.usd_per_hour, p
        assert 1 <= p.gpus_per_instance <= 100_000, p
        assert all(s.isprintable() for s in (p.provider, p.instance or "", p.source, *p.regions)), p


@FUZZ
@given(name=st.sampled_from(PRICE_CSVS), ops=csv_edits,
       encoding=st.sampled_from(["utf-8", "utf-8-bom", "utf-16", "latin-1", "cp1252"]), folder=st.booleans())
def test_mutated_price_csvs(capsys, tmp_path_factory, name, ops, encoding, folder):
    d = tmp_path_factory.mktemp("csv")
    src = open(name, encoding="utf-8").read()
    f = d / "lambda" / "vms.csv" if name.endswith("vms.csv") else d / os.path.basename(name)
    f.parent.mkdir(exist_ok=True)
    f.write_bytes(_encode(mutate_csv(src, ops), encoding))
    out = d / "out.yaml"
    _import_is_sane(capsys, "price_csv", ["prices", "import", str(d if folder else f), "--out", str(out)], out)


@FUZZ
@given(junk=st.binary(max_size=400), header=st.sampled_from(["", "InstanceType,AcceleratorName,AcceleratorCount,Price\n",
                                                            "cloud,instance_type,accelerator,accelerator_count,"
                                                            "price_usd_per_hour_min,price_usd_per_hour_median\n"]))
def test_binary_price_csvs(capsys, tmp_path_factory, junk, header):
    d = tmp_path_factory.mktemp("csv")
    f = d / "aws.csv"
    f.write_bytes(header.encode() + junk)
    out = d / "out.yaml"
    _import_is_sane(capsys, "price_csv_binary", ["prices", "import", str(f), "--out", str(out)], out)


def test_price_csvs_via_the_command_line(tmp_path):
    """A few imports in a fresh process, as a user runs them: one line and exit 2, or a file that loads."""
    import subprocess
    bom = tmp_path / "lambda" / "vms.csv"
    bom.parent.mkdir()
    bom.write_bytes(b"\xef\xbb\xbf" + open(PRICE_CSVS[0], "rb").read())
    bad = tmp_path / "bad.csv"
    bad.write_text("cloud,instance_type\naws,x\n")
    for path, code in ((bom, 0), (bad, 2)):
        p = subprocess.run([sys.executable, "-m", "advisor", "prices", "import", str(path), "--out", str(tmp_path / "o.yaml")],
                           capture_output=True, text=True, timeout=HANG_SECONDS, cwd=ROOT)
        assert p.returncode == code and "Traceback" not in p.stderr, p.stderr
        if code == 2:
            assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("gpu-advisor: error: ")


# --- issue 42's surfaces: a fleet's interconnect, the API price importer, the sandbox's format/repeat/filter chains ---

LINK_WORDS = ["NVLink", "nvlink4", "NVSwitch", "NVL72", "NVL 36", "xGMI", "Infinity Fabric", "UALink", "HCCS", "PCIe", "PCIe Gen5",
              "x16", "NVLink bridge", "InfiniBand", "NDR", "400G", "RoCE", "Ethernet", "EFA", "H100", "8x", "+", ",", "(", ")", "/"]
NEGATIONS = ["no", "not", "without", "disabled", "off", "none of", "w/o", "non", "broken", "unused", "absent", "lacks"]


@FUZZ
@given(words=st.lists(st.one_of(st.sampled_from(LINK_WORDS), st.sampled_from(NEGATIONS),
                                st.text(string.printable + "é\x1b", max_size=6)), min_size=0, max_size=6))
def test_fleet_interconnects(capsys, tmp_path_factory, words):
    from advisor.inputs import links
    said = " ".join(words)
    negated = any(w.lower() in NEGATIONS for w in " ".join(words).replace("/", " / ").split()) or "w/o" in said.lower()
    try:
        link = links.read(said)
    except ValueError as exc:
        assert "is not a word of the interconnect vocabulary" in str(exc)
    else:
        # no wording that denies a link is ever read as one (issue 42: 'no NVLink' planned TP 8 over NVLink)
        assert not negated or said.strip().lower() == "none", said
        assert link.kind in ("scale-up", "pcie", "unknown")
    d = tmp_path_factory.mktemp("fleet")
    text = (EXAMPLES / "fleet-h100.yaml").read_text().replace("interconnect: NVLink + InfiniBand NDR", f"interconnect: {json.dumps(said)}")
    (d / "w.yaml").write_text(text)
    run(capsys, "fleet_interconnect", ["estimate", str(d / "w.yaml"), "--format", "json"])


API_IDS = ["together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "groq/openai/gpt-oss-120b", "deepinfra/openai/gpt-oss-120b",
           "meta.llama3-1-70b-instruct-v1:0", "x/unknown-model", "\x1b]0;pwned\x07/llama-3.1-70b", "a" * 300]
api_numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30), st.just(0),
                        st.floats(1e-15, 1e-3), st.sampled_from(["1e-06", "x", None, True, [], {}]))
api_entries = st.fixed_dictionaries({"mode": st.sampled_from(["chat", "completion", "embedding", 5]),
                                     "input_cost_per_token": api_numbers, "output_cost_per_token": api_numbers},
                                    optional={"cache_read_input_token_cost": api_numbers,
                                              "litellm_provider": st.one_of(st.text(string.printable + "\x00\x1b\u202e\x85", max_size=12),
                                                                            api_numbers)})


def _json_text(table, raw_numbers) -> str:
    text = json.dumps(table, allow_nan=True)
    for token in raw_numbers:                # numbers json.dumps cannot write: 5,000 digits, 1e999
        text = text.replace('"@@"', token, 1)
    return text


@FUZZ
@given(table=st.dictionaries(st.one_of(st.sampled_from(API_IDS), st.text(max_size=12)),
                             st.one_of(api_entries, api_numbers), max_size=6),
       raw=st.lists(st.sampled_from(["9" * 5000, "1e999", "-0", "[" * 5000 + "]" * 5000]), max_size=2), nest=st.booleans())
def test_api_price_tables(capsys, tmp_path_factory, table, raw, nest):
    d = tmp_path_factory.mktemp("api")
    if raw:
        table["together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"] = {"mode": "chat", "input_cost_per_token": "@@",
                                                                            "output_cost_per_token": "@@"}
    text = _json_text(table, raw * 2)
    if nest:
        text = '{"deep": ' + "[" * 100_000 + "]" * 100_000 + ", " + text[1:] if len(text) > 2 else text
    f = d / "prices.json"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    out = d / "api.yaml"
    if run(capsys, "api_price_table", ["prices", "import-api", str(f), "--out", str(out)]) != 0:
        assert not out.exists()
        return
    from advisor.inputs.apiprices import load_api_prices
    for a in load_api_prices(out, catalog_mod.default().models):      # the file it wrote loads as the catalog reads it
        for v in (a.usd_per_million_input, a.usd_per_million_output, a.usd_per_million_cached_input or 0):
            assert math.isfinite(v) and 0 <= v < 1e18, a
        assert all(s.isprintable() for s in (a.provider, a.provider_model, a.source)), a


# the sandbox: whatever a chain of repeats, widths from arguments, format fields and filters builds, one rendering
# either answers or is refused by the sandbox, under an address-space limit a bomb would hit first (MemoryError)
sources = st.sampled_from(["'s'", "'s' * 1000", "'s' * 999999", "['x'] * 1000000", "['s' * 1000] * 1000", "range(10000)",
                           "[[1] * 1000] * 1000", "'a\\nb' * 100000"])
steps_ = st.sampled_from(["| map('upper')", "| map('center', 9999)", "| list", "| join('--')", "| batch(3)", "| sum(start=[])",
                          "| wordwrap(1, wrapstring='y' * 1000)", "| replace('s', 'xyz' * 100)", "| unique", "| tojson(indent=16)",
                          "| string", "| indent(9999)", "| map('string')", "| first", "| reverse", "* 1000", "* 10", "~ 'tail'",
                          "| format(1)", "| length", "| map('format', 'x' * 9999)", "| select", "| slice(3)"])
wrappers = st.sampled_from(["{{ X }}", "{{ '{:{}}'.format(X, '2500000000') }}", "{{ '{0}{0}{0}{0}'.format(X) }}",
                            "{{ ('{:' ~ (X | length) ~ '}').format('a') }}", "{{ '%s%s' % (X, X) }}",
                            "{% for i in range(1000) %}{% set y = X %}{% endfor %}", "{% for a in X %}{% for b in X %}{% endfor %}{% endfor %}",
                            "{% set z %}{% for i in range(1000) %}{{ X }}{% endfor %}{% endset %}{{ z | length }}",
                            "{% macro m(v) %}{{ v }}{{ v }}{% endmacro %}{{ m(X) | length }}"])


@FUZZ
@given(source=sources, chain=st.lists(steps_, max_size=4), wrapper=wrappers)
def test_sandbox_format_repeat_and_filter_chains(source, chain, wrapper):
    import resource
    from jinja2 import DictLoader, TemplateError
    from advisor.base import sandbox
    expr = source
    for step in chain:
        expr = f"({expr}) {step}"
    src = wrapper.replace("X", f"({expr})")
    TRIED["sandbox_chain"] = TRIED.get("sandbox_chain", 0) + 1
    env = sandbox.environment(DictLoader({}), layout=False)
    with open("/proc/self/statm") as f:
        now = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (now + 1_500_000_000, hard))

    def hang(signum, frame):
        raise _Hang(f"no answer in {HANG_SECONDS} s: {src}")
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS)
    try:
        out = env.from_string(src).render()
        assert len(out) <= sandbox.MAX_TEXT * 10
    except MemoryError:
        pytest.fail(f"the sandbox let this build past 1.5 GB: {src}")
    except (TemplateError, TypeError, ValueError, OverflowError, AttributeError, ZeroDivisionError, RecursionError):
        pass                                    # refused (SecurityError is a TemplateError) or a plain template error
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
