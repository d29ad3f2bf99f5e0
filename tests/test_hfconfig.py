"""Any model from its Hugging Face config.json: parameter counts against the published figures, KV bytes
per token, workloads that name a config, and hf:ORG/NAME through huggingface_hub's cache (never the network)."""
import json
import sys
from pathlib import Path

import pytest
import yaml

from advisor.inputs import hfconfig
from advisor.shell.cli import main
from advisor.base.errors import InputError

FIX = Path(__file__).resolve().parent / "fixtures"
CONFIGS = FIX / "configs"
SOURCES = yaml.safe_load((CONFIGS / "SOURCES.yaml").read_text())["models"]


def derive(name):
    return hfconfig.derive(json.loads((CONFIGS / name / "config.json").read_text()), name)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_parameter_count_matches_the_published_figure(name):
    pub = SOURCES[name]["published"]
    fig = derive(name)
    tol = pub.get("rel", 0.01 if pub["exact"] else 0.03)     # a nominal "70B" or "1T" is rounded
    assert fig["params_b"] == pytest.approx(pub["total"], rel=tol)
    if "text" in pub:                            # multimodal: the language model alone
        assert fig["params_b"] - fig["_parts"]["vision"] / 1e9 == pytest.approx(pub["text"], rel=0.001)
    if "active" in pub:
        active = fig["active_params_b"]
        if pub.get("active_excludes_embedding"):     # OpenAI does not count the input embedding table
            active -= fig["_parts"]["embeddings"] / 1e9
        assert active == pytest.approx(pub["active"], rel=0.03)


# exact counts that the checkpoints hold (keras-hub presets), to the parameter
@pytest.mark.parametrize("name, params", [
    ("llama-3.1-8b", 8_030_261_248), ("mistral-7b", 7_241_732_096), ("mixtral-8x7b", 46_702_792_704),
    ("qwen2.5-72b", 72_706_203_648), ("qwen3-8b", 8_190_735_360), ("qwen3-235b-a22b", 235_093_634_560),
    ("gemma-2-9b", 9_241_705_984), ("gemma-3-1b", 999_885_952), ("phi-3-mini", 3_821_079_552),
])
def test_exact_counts(name, params):
    assert sum(derive(name)["_parts"].values()) == params


@pytest.mark.parametrize("name, tokens, kv_bytes", [
    ("llama-3.1-8b", 8192, 131_072),          # 2 x 8 KV heads x 128 x 2 B x 32 layers
    ("mistral-7b", 8192, 65_536),             # every layer slides over 4,096 tokens: half the 8K context
    ("mixtral-8x7b", 8192, 131_072),
    ("qwen2.5-7b", 8192, 57_344),             # 4 KV heads x 28 layers
    ("qwen3-30b-a3b", 8192, 98_304),
    ("deepseek-v3", 8192, 70_272),            # MLA: (512 latent + 64 rope) x 2 B x 61 layers
    ("gpt-oss-120b", 8192, 37_440),           # 18 full layers + 18 layers of a 128-token window
    ("gemma-2-9b", 8192, 258_048),            # 21 full + 21 layers of a 4,096-token window
    ("gemma-3-27b", 8192, 135_168),           # 2 x 16 x 128 x 2 B x (10 global + 52 x 1,024 / 8,192 window layers)
    ("phi-3-mini", 4096, 196_512),            # 2 x 32 x 96 x 2 B x 32 layers x 2,047 / 4,096 (window on all layers)
])
def test_kv_bytes_per_token(name, tokens, kv_bytes):
    assert hfconfig.kv_bytes_per_token(derive(name), 2, tokens) == pytest.approx(kv_bytes, rel=1e-9)


def test_architecture_fields():
    ds = derive("deepseek-v3")
    assert (ds["experts"], ds["experts_per_token"], ds["mla_kv_dim"], ds["precision"]) == (256, 8, 576, "fp8")
    oss = derive("gpt-oss-120b")
    assert oss["precision"] == {"experts": "mxfp4", "rest": "bf16"} and oss["sliding_window_layers"] == 18
    assert oss["expert_params_b"] == pytest.approx(114.6, rel=0.01)     # model card: MLP 114.71B incl. routers
    g = derive("gemma-3-27b")
    assert (g["layers"], g["head_dim"], g["sliding_window"], g["sliding_window_layers"]) == (62, 128, 1024, 52)
    assert g["tied_embeddings"] and derive("llama-3.2-1b")["tied_embeddings"] and not derive("llama-3.1-8b")["tied_embeddings"]
    assert derive("qwen2.5-7b").get("sliding_window") is None        # use_sliding_window: false


def test_the_estimator_reads_a_config_like_a_catalog_model(estimate_file):
    est = estimate_file(str(Path(__file__).resolve().parent.parent / "examples" / "chat-assistant.yaml"),
                        model=str(CONFIGS / "gpt-oss-120b"), precision=None)
    assert est.kv_bytes_per_token == pytest.approx(37_440, rel=1e-9)
    assert est.ledger.sized.params == pytest.approx(116.83e9, rel=0.001)


def test_workload_names_a_config_relative_to_itself(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text((CONFIGS / "qwen3-8b" / "config.json").read_text())
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: m\nconcurrency: 4\n")
    assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["workload"]["model"]["params_b"] == pytest.approx(8.1907, abs=1e-4)
    assert d["kv_bytes_per_token"] == 147_456
    # the decision record keeps the figures, so the record replays without the file
    assert main(["recommend", str(w), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["inputs"]["model"]["layers"] == 36 and "config.json" in rec["inputs"]["model"]["name"]


def test_falcons_first_decoder_counts_one_kv_head_and_one_norm_per_layer():
    # Falcon 7B (new_decoder_architecture: false, multi_query: true): query_key_value is 4544 -> 4672
    # (71 query heads and one K and one V head of 64), one LayerNorm per parallel block (KIMBORGEN_FALCON)
    f = derive("falcon-7b")
    assert (f["kv_heads"], f["head_dim"], f["layers"]) == (1, 64, 32)
    H, V, L = 4544, 65024, 32
    by_hand = V * H + L * (H * 4672 + H * H + 2 * H * 4 * H + 2 * H) + 2 * H
    assert f["params_b"] * 1e9 == pytest.approx(by_hand, abs=1)           # 6.92B, the card's nominal 7B
    no_mq = hfconfig.derive({**json.loads((CONFIGS / "falcon-7b" / "config.json").read_text()), "multi_query": False}, "x")
    assert no_mq["kv_heads"] == 71


@pytest.mark.parametrize("config, message", [
    ({"model_type": "gpt2", "vocab_size": 1}, "model_type 'gpt2' is not one the advisor can count"),
    ({"vocab_size": 1}, "model_type is missing"),
    ({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "num_attention_heads": 32},
     "num_hidden_layers is missing"),
    ({"model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 2,
      "num_attention_heads": 32, "intermediate_size": 8, "num_experts_per_tok": 2}, "num_local_experts is missing"),
    ({"model_type": "llama", "vocab_size": "many", "hidden_size": 4096}, "config.json: vocab_size: must be a number (got 'many')"),
])
def test_unreadable_configs_are_refused_naming_the_field(tmp_path, capsys, config, message):
    (tmp_path / "config.json").write_text(json.dumps(config))
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: config.json\n")
    assert main(["estimate", str(w)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_json_and_missing_files(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"model_type": "llama",\n  "vocab_size": }\n')
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: config.json\n")
    assert main(["estimate", str(w)]) == 2
    assert "config.json:2: model: JSON syntax error" in capsys.readouterr().err
    w.write_text("mode: inference\nmodel: nowhere/config.json\n")
    assert main(["estimate", str(w)]) == 2
    assert "no such config.json" in capsys.readouterr().err


# --- hf:ORG/NAME through huggingface_hub, from a recorded cache (never the network) -----------------

@pytest.fixture
def offline_hub(monkeypatch):
    hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(FIX / "hub"))
    return hub


def test_hf_reads_the_cached_config(offline_hub, tmp_path, capsys):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: hf:Qwen/Qwen3-8B\n")
    assert main(["estimate", str(w), "--gpu", "l40s", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["workload"]["model"]["params_b"] == pytest.approx(8.1907, abs=1e-4) and d["kv_bytes_per_token"] == 147_456


def test_hf_offline_and_not_cached_is_one_clear_line(offline_hub, tmp_path, capsys):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: hf:nobody/not-cached\n")
    assert main(["estimate", str(w)]) == 2
    err = capsys.readouterr().err
    # at the workload's own line (review: the Hub's errors named no file:line)
    assert f"{w}:2: model: hf:nobody/not-cached: cannot reach the Hugging Face Hub" in err and "Traceback" not in err


def test_hf_gated_repository(offline_hub, monkeypatch, tmp_path, capsys):
    from huggingface_hub import errors

    class Response:   # what the Hub answers for a gated repository (403), as huggingface_hub sees it
        status_code, headers, text, request = 403, {}, "", None
        url = "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json"

        def json(self):
            return {}

    def gated(**kw):
        raise errors.GatedRepoError("Access to model meta-llama/Llama-3.1-8B is restricted.", response=Response())
    monkeypatch.setattr(offline_hub, "hf_hub_download", gated)
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: hf:meta-llama/Llama-3.1-8B\n")
    assert main(["estimate", str(w)]) == 2
    assert "the repository is gated" in capsys.readouterr().err


def test_hf_without_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)       # import fails as if not installed
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: hf:Qwen/Qwen3-8B\n")
    assert main(["estimate", str(w)]) == 2
    assert "pip install 'gpu-advisor[hub]'" in capsys.readouterr().err


def test_hf_name_is_checked():
    with pytest.raises(InputError, match="expected hf:ORG/NAME"):
        hfconfig.fetch("just-a-name")


def test_catalog_models_are_the_configs(catalog):
    """Every catalog model with a config fixture carries the figures computed from it (catalog/build/modelbuild.py),
    and the catalog holds at least 40 models with no unverified parameter count where a config exists."""
    assert len(catalog.models) >= 40
    for mid in SOURCES:
        m, fig = catalog.models[mid], derive(mid)
        assert m.num("params_b") == pytest.approx(fig["params_b"], rel=1e-3), mid
        for k in ("layers", "hidden_size", "kv_heads", "head_dim", "experts", "experts_per_token", "mla_kv_dim",
                  "sliding_window", "sliding_window_layers"):
            assert m.num(k) == fig.get(k), (mid, k)
        assert "unknown_explicit" not in m.fig("params_b").sources + m.fig("active_params_b").sources, mid
    import importlib.util
    spec = importlib.util.spec_from_file_location("modelbuild", Path(__file__).parent.parent / "catalog" / "build" / "modelbuild.py")
    modelbuild = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(modelbuild)
    models, sources = modelbuild.build()
    assert models == (Path(modelbuild.ROOT) / "catalog" / "models.yaml").read_text()     # not edited by hand


# --- config.json checked like a workload's model mapping ---------------------------------------------

def write_config(folder: Path, name: str, change=None, text_config=None, vision_config=None) -> Path:
    """A fixture config with fields replaced (None as a value deletes the field); a workload beside it."""
    cfg = json.loads((CONFIGS / name / "config.json").read_text())
    for target, edits in ((cfg, change), (cfg.get("text_config"), text_config), (cfg.get("vision_config"), vision_config)):
        for k, v in (edits or {}).items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = v
    (folder / "config.json").write_text(json.dumps(cfg))
    w = folder / "w.yaml"
    w.write_text("mode: inference\nmodel: config.json\n")
    return w


def refused(capsys, argv) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out[-300:], err)
    assert "Traceback" not in err and len(err.strip().splitlines()) >= 1
    assert all(line.startswith("gpu-advisor: error: ") for line in err.strip().splitlines()), err
    return err


@pytest.mark.parametrize("name, change, expected", [
    ("mixtral-8x7b", {"num_key_value_heads": -8}, "config.json: num_key_value_heads: must be at least 1 (got -8)"),
    ("mixtral-8x7b", {"tie_word_embeddings": "false"}, "config.json: tie_word_embeddings: must be true or false (got 'false')"),
    ("mixtral-8x7b", {"num_hidden_layers": 0}, "config.json: num_hidden_layers: must be at least 1 (got 0)"),
    ("mixtral-8x7b", {"num_hidden_layers": 10**8}, "config.json: num_hidden_layers: must be at most 10,000 (got 100,000,000)"),
    ("mixtral-8x7b", {"num_hidden_layers": 32.5}, "config.json: num_hidden_layers: must be a whole number (got 32.5)"),
    ("mixtral-8x7b", {"num_hidden_layers": "32"}, "config.json: num_hidden_layers: must be a number (got '32')"),
    ("mixtral-8x7b", {"num_hidden_layers": [32]}, "config.json: num_hidden_layers: must be a number (got [32])"),
    ("mixtral-8x7b", {"num_hidden_layers": True}, "config.json: num_hidden_layers: must be a number (got True)"),
    ("mixtral-8x7b", {"hidden_size": 16}, "config.json: num_attention_heads: must divide hidden_size (16 / 32"),
    ("mixtral-8x7b", {"hidden_size": 4100}, "config.json: num_attention_heads: must divide hidden_size (4100 / 32"),
    ("mixtral-8x7b", {"num_key_value_heads": 5}, "config.json: num_key_value_heads: must divide num_attention_heads"),
    ("mixtral-8x7b", {"num_key_value_heads": 64}, "config.json: num_key_value_heads: cannot exceed num_attention_heads (64 > 32)"),
    ("mixtral-8x7b", {"num_experts_per_tok": 64}, "config.json: num_experts_per_tok: cannot exceed num_local_experts (64 > 8)"),
    ("mixtral-8x7b", {"num_local_experts": 0}, "config.json: num_local_experts: must be at least 1 (got 0)"),
    ("mixtral-8x7b", {"vocab_size": 10**200}, "config.json: vocab_size: must be a number of at most 10^18 (got a 201-digit number)"),
    ("mixtral-8x7b", {"vocab_size": 10**12}, "config.json: vocab_size: must be at most 10,000,000 (got 1,000,000,000,000)"),
    ("mixtral-8x7b", {"intermediate_size": 10**7, "hidden_size": 10**6, "num_attention_heads": 1000},
     "config.json: params_b: must be at most 100,000 B"),
    ("mixtral-8x7b", {"head_dim": 0}, "config.json: head_dim: must be at least 1 (got 0)"),
    ("mistral-7b", {"sliding_window": 40000}, "config.json: sliding_window: cannot exceed max_position_embeddings (40,000 > 32,768 tokens)"),
    ("deepseek-v3", {"kv_lora_rank": 0}, "config.json: kv_lora_rank: must be at least 1 (got 0)"),
    ("deepseek-v3", {"q_lora_rank": -1}, "config.json: q_lora_rank: must be at least 1 (got -1)"),
    ("deepseek-v3", {"moe_layer_freq": 0}, "config.json: moe_layer_freq: must be at least 1 (got 0)"),
    ("deepseek-v3", {"first_k_dense_replace": 99}, "config.json: first_k_dense_replace: cannot exceed num_hidden_layers (99 > 61)"),
    ("deepseek-v3", {"quantization_config": "fp8"}, "config.json: quantization_config: must be a JSON object (got str)"),
    ("gpt-oss-120b", {"layer_types": ["sliding_attention"] * 99}, "config.json: layer_types: must name one type per layer (99 types for 36 layers)"),
    ("gpt-oss-120b", {"model_type": ["gpt_oss"]}, "config.json: model_type: must be a text (got list)"),
    ("qwen3-30b-a3b", {"decoder_sparse_step": 0}, "config.json: decoder_sparse_step: must be at least 1 (got 0)"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [99]}, "config.json: mlp_only_layers: must name layers below num_hidden_layers (48)"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [-1]}, "config.json: mlp_only_layers: must be a list of layer numbers"),
    ("qwen3-30b-a3b", {"use_sliding_window": 1}, "config.json: use_sliding_window: must be true or false (got 1)"),
])
def test_config_fields_are_typed_bounded_and_consistent(tmp_path, capsys, name, change, expected):
    err = refused(capsys, ["estimate", str(write_config(tmp_path, name, change)), "--gpu", "h100"])
    assert f"{tmp_path}/{expected}" in err, err


@pytest.mark.parametrize("text_config, vision_config, expected", [
    ({"num_key_value_heads": -8}, None, "text_config.num_key_value_heads: must be at least 1 (got -8)"),
    ({"sliding_window_pattern": 0}, None, "text_config.sliding_window_pattern: must be at least 1 (got 0)"),
    ({"num_hidden_layers": None}, None, "text_config.num_hidden_layers: num_hidden_layers is missing"),
    (None, {"patch_size": 1000}, "vision_config.patch_size: cannot exceed vision_config.image_size"),
    (None, {"hidden_size": -1152}, "vision_config.hidden_size: must be at least 1 (got -1,152)"),
])
def test_multimodal_configs_name_the_nested_field(tmp_path, capsys, text_config, vision_config, expected):
    w = write_config(tmp_path, "gemma-3-27b", text_config=text_config, vision_config=vision_config)
    assert expected in refused(capsys, ["estimate", str(w)])


@pytest.mark.parametrize("change, mapping, field_config, field_mapping", [
    ({"num_key_value_heads": -8}, "{params_b: 47, kv_heads: -8}", "num_key_value_heads", "model.kv_heads"),
    ({"num_hidden_layers": 10**8}, "{params_b: 47, layers: 100000000}", "num_hidden_layers", "model.layers"),
    ({"num_hidden_layers": 2.5}, "{params_b: 47, layers: 2.5}", "num_hidden_layers", "model.layers"),
    ({"num_key_value_heads": 5}, "{params_b: 47, attention_heads: 32, kv_heads: 5}", "num_key_value_heads", "model.kv_heads"),
    ({"hidden_size": 16}, "{params_b: 47, hidden_size: 16, attention_heads: 32}", "num_attention_heads", "model.attention_heads"),
    ({"max_position_embeddings": 0}, "{params_b: 47, max_context: 0}", "max_position_embeddings", "model.max_context"),
])
def test_the_mapping_form_refuses_the_same_values_in_the_same_words(tmp_path, capsys, change, mapping, field_config, field_mapping):
    (tmp_path / "c").mkdir()
    from_config = refused(capsys, ["estimate", str(write_config(tmp_path / "c", "mixtral-8x7b", change))])
    m = tmp_path / "m.yaml"
    m.write_text(f"mode: inference\nmodel: {mapping}\n")
    from_mapping = refused(capsys, ["estimate", str(m)])
    said = from_config.split(f"config.json: {field_config}: ", 1)[1].split(" (")[0]
    assert f"m.yaml:2: {field_mapping}: {said.replace('num_attention_heads', 'attention_heads')}" in from_mapping


@pytest.mark.parametrize("mapping", ["{params_b: null}", "{params_b: null, layers: 3}", "{}"])
def test_a_mapping_without_params_b_is_one_line(tmp_path, capsys, mapping):
    m = tmp_path / "m.yaml"
    m.write_text(f"mode: inference\nmodel: {mapping}\n")
    err = refused(capsys, ["estimate", str(m)])
    assert "model.params_b: a model given as a mapping needs params_b" in err and len(err.strip().splitlines()) == 1


def test_an_integral_float_and_a_bom_read_as_the_plain_config(tmp_path, capsys):
    w = write_config(tmp_path, "qwen3-8b", {"num_hidden_layers": 36.0})
    assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    (tmp_path / "config.json").write_bytes(b"\xef\xbb\xbf" + (CONFIGS / "qwen3-8b" / "config.json").read_bytes())
    assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
    bom = json.loads(capsys.readouterr().out)
    assert plain["kv_bytes_per_token"] == bom["kv_bytes_per_token"] == 147_456
    assert plain["workload"]["model"]["params_b"] == bom["workload"]["model"]["params_b"] == pytest.approx(8.1907, abs=1e-4)


def test_tie_word_embeddings_is_a_json_boolean_not_a_truthy_value(tmp_path, capsys):
    sizes = []
    for tied in (False, True):
        w = write_config(tmp_path, "llama-3.1-8b", {"tie_word_embeddings": tied})
        assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
        sizes.append(json.loads(capsys.readouterr().out)["workload"]["model"]["params_b"])
    assert sizes[0] - sizes[1] == pytest.approx(128_256 * 4096 / 1e9, abs=1e-3)     # the LM head, 0.525B


BASE = (CONFIGS / "mixtral-8x7b" / "config.json").read_text()


@pytest.mark.parametrize("text, expected", [
    (BASE.replace('"rms_norm_eps": 1e-05', '"rms_norm_eps": NaN'), "config.json: rms_norm_eps: must be a finite number (got NaN)"),
    (BASE.replace('"vocab_size": 32000', '"vocab_size": Infinity'), "config.json: vocab_size: must be a finite number (got Infinity)"),
    (BASE.replace('"vocab_size": 32000', '"vocab_size": -Infinity'), "config.json: vocab_size: must be a finite number (got -Infinity)"),
    (BASE.replace('"vocab_size": 32000', '"vocab_size": ' + "9" * 5000), "vocab_size: must be a number of at most 10^18 (got a 5000-digit number)"),
    (BASE.replace('"rope_theta": 1000000.0', '"rope_theta": 1e200'), "config.json: rope_theta: must be a number of at most 10^18 (got 1e200)"),
    (BASE.replace('"rope_theta": 1000000.0', '"rope_theta": 1e400'), "config.json: rope_theta: must be a number of at most 10^18 (got 1e400)"),
    (BASE.replace('"hidden_act": "silu"', '"x": ' + "[" * 100_000 + "]" * 100_000), "config.json: model: nested more than 32 levels deep"),
    (BASE.replace('"hidden_act": "silu"', '"x": {"y": [1, NaN]}'), "config.json: x.y[1]: must be a finite number (got NaN)"),
    (BASE.replace('"hidden_act"', '"num_hidden_layers": 0, "hidden_act"'), "config.json: num_hidden_layers: appears twice in one object"),
    ("[1, 2]", "config.json: model: config.json must be a JSON object"),
    ('{"model_type": "llama",\n "vocab_size": }', "config.json:2: model: JSON syntax error"),
])
def test_json_is_parsed_with_limits(tmp_path, capsys, text, expected):
    (tmp_path / "config.json").write_text(text)
    (tmp_path / "w.yaml").write_text("mode: inference\nmodel: config.json\n")
    err = refused(capsys, ["estimate", str(tmp_path / "w.yaml")])
    assert expected in err and len(err.strip().splitlines()) == 1, err


def test_big_files_other_encodings_pipes_and_devices_are_refused_before_reading(tmp_path, capsys):
    import os
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: config.json\n")
    cfg = tmp_path / "config.json"
    cfg.write_text(BASE[:-2] + ', "pad": "' + "x" * (5 * 2**20) + '"}')
    assert "config.json: larger than 4 MB: not a config.json" in refused(capsys, ["estimate", str(w)])
    cfg.write_bytes(BASE.replace("silu", "silé").encode("latin-1"))
    assert "config.json:16: model: not UTF-8 text" in refused(capsys, ["estimate", str(w)])
    cfg.unlink()
    os.mkfifo(cfg)                       # nobody writes to it: reading would wait forever
    assert "config.json: is a named pipe (FIFO), not a config.json" in refused(capsys, ["estimate", str(w)])
    cfg.unlink()
    cfg.symlink_to("/dev/zero")          # a read that never ends
    assert "config.json: is a device, not a config.json" in refused(capsys, ["estimate", str(w)])


def test_a_relative_config_is_read_from_the_workload_folder_never_the_current_one(tmp_path, capsys, monkeypatch):
    (tmp_path / "wl").mkdir()
    (tmp_path / "elsewhere").mkdir()
    w = write_config(tmp_path / "wl", "qwen3-8b")
    (tmp_path / "elsewhere" / "config.json").write_text((CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    (tmp_path / "elsewhere" / "m").mkdir()
    (tmp_path / "elsewhere" / "m" / "config.json").write_text((CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["model"]["params_b"] == pytest.approx(8.1907, abs=1e-4)  # Qwen3, not Llama
    (tmp_path / "wl" / "config.json").unlink()       # only the current folder has one now
    err = refused(capsys, ["estimate", str(w)])
    # said at the workload's own line, naming the path it looked at
    assert f"{w}:2: model: no such config.json: {tmp_path}/wl/config.json" in err
    w.write_text("mode: inference\nmodel: m\n")      # a folder holding config.json, likewise
    assert "model: unknown model 'm'" in refused(capsys, ["estimate", str(w)])


@pytest.mark.parametrize("spec", ["hf:../x", "hf:a b/c", "hf:", "hf:just-a-name", "hf:a/b/c", "hf:" + "a" * 97 + "/b",
                                  "hf:-org/name", "hf:org/name.", "hf:org/na--me", "hf:org/na..me", "hf:é/x", "hf:org/name.git",
                                  "hf:org/\x1b]0;evil\x07"])
def test_hub_ids_are_checked_before_anything_is_fetched(tmp_path, capsys, monkeypatch, spec):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)     # reaching the Hub client would say "install the extra"
    w = tmp_path / "w.yaml"
    w.write_text(f"mode: inference\nmodel: {json.dumps(spec)}\n")
    err = refused(capsys, ["estimate", str(w)])
    assert ": model: expected hf:ORG/NAME" in err and len(err.strip().splitlines()) == 1 and "\x1b" not in err


@pytest.mark.parametrize("repo", ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B", "openai/gpt-oss-120b", "mistralai/Mistral-7B-v0.1",
                                  "deepseek-ai/DeepSeek-V3", "google/gemma-3-27b-pt", "a/b", "_org/x_" + "y" * 94])
def test_real_hub_ids_pass_the_check(repo):
    assert hfconfig.check_repo_id(repo) == repo


def test_names_from_a_config_are_plain_text(tmp_path, capsys):
    evil = tmp_path / "m\x1b[2J"
    evil.mkdir()
    write_config(evil, "qwen3-8b", {"_name_or_path": "\x1b]0;evil\x07Qwen\nQwen3\u202e-8B"})
    w = tmp_path / "w.yaml"
    w.write_text(f"mode: inference\nmodel: {json.dumps(str(evil / 'config.json'))}\n")
    assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["workload"]["model"]["name"] == "Qwen Qwen3-8B (config.json)"
    assert main(["estimate", str(w), "--gpu", "h100"]) == 0
    text = capsys.readouterr().out
    assert "Qwen Qwen3-8B (config.json)" in text
    assert not any(c in text for c in "\x1b\x07\u202e")
    write_config(evil, "qwen3-8b", {"_name_or_path": None})        # the folder's name, likewise
    assert main(["estimate", str(w), "--gpu", "h100", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["model"]["name"] == "m (config.json)"


@pytest.fixture
def unresolvable_hub(monkeypatch):
    # no network: the Hub's name does not resolve (review 11: five retries over 23 s, each a warning on stderr)
    hub = pytest.importorskip("huggingface_hub")
    import socket
    from huggingface_hub import constants

    def fail(*a, **k):
        raise socket.gaierror(-2, "Name or service not known")
    for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(FIX / "hub"))
    monkeypatch.setattr(socket, "getaddrinfo", fail)
    return hub


def test_hf_without_dns_answers_from_the_cache_at_once_or_says_so_in_one_line(unresolvable_hub, monkeypatch, tmp_path, capsys):
    calls = []
    real = unresolvable_hub.hf_hub_download

    def spy(*a, **k):
        calls.append(k.get("local_files_only"))
        return real(*a, **k)
    monkeypatch.setattr(unresolvable_hub, "hf_hub_download", spy)
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: hf:Qwen/Qwen3-8B\n")
    assert main(["estimate", str(w), "--gpu", "l40s", "--format", "json"]) == 0      # cached: read without the network
    assert json.loads(capsys.readouterr().out)["kv_bytes_per_token"] == 147_456
    w.write_text("mode: inference\nmodel: hf:nobody/not-cached\n")
    assert main(["estimate", str(w)]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "Retrying" not in err and "Traceback" not in err
    assert f"{w}:2: model: hf:nobody/not-cached: cannot reach the Hugging Face Hub (huggingface.co does not resolve" in err
    assert calls == [True, True]         # the cache only: never the library's five network retries
