"""Any model from its Hugging Face config.json: parameter counts against the published figures, KV bytes
per token, workloads that name a config, and hf:ORG/NAME through huggingface_hub's cache (never the network)."""
import json
import sys
from pathlib import Path

import pytest
import yaml

from advisor import hfconfig
from advisor.cli import main
from advisor.errors import InputError

FIX = Path(__file__).resolve().parent / "fixtures"
CONFIGS = FIX / "configs"
SOURCES = yaml.safe_load((CONFIGS / "SOURCES.yaml").read_text())["models"]


def derive(name):
    return hfconfig.derive(json.loads((CONFIGS / name / "config.json").read_text()), name)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_parameter_count_matches_the_published_figure(name):
    pub = SOURCES[name]["published"]
    fig = derive(name)
    tol = 0.01 if pub["exact"] else 0.03        # a nominal "70B" or "1T" is rounded
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


@pytest.mark.parametrize("config, message", [
    ({"model_type": "gpt2", "vocab_size": 1}, "model_type 'gpt2' is not one the advisor can count"),
    ({"model_type": "falcon", "vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71},
     "new_decoder_architecture: only Falcon's new decoder architecture"),
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
    assert "hf:nobody/not-cached: model: cannot reach the Hugging Face Hub" in err and "Traceback" not in err


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
    """Every catalog model with a config fixture carries the figures computed from it (advisor.modelbuild),
    and the catalog holds at least 40 models with no unverified parameter count where a config exists."""
    assert len(catalog.models) >= 40
    for mid in SOURCES:
        m, fig = catalog.models[mid], derive(mid)
        assert m.num("params_b") == pytest.approx(fig["params_b"], rel=1e-3), mid
        for k in ("layers", "hidden_size", "kv_heads", "head_dim", "experts", "experts_per_token", "mla_kv_dim",
                  "sliding_window", "sliding_window_layers"):
            assert m.num(k) == fig.get(k), (mid, k)
        assert "unknown_explicit" not in m.fig("params_b").sources + m.fig("active_params_b").sources, mid
    from advisor import modelbuild
    models, sources = modelbuild.build()
    assert models == (Path(modelbuild.ROOT) / "catalog" / "models.yaml").read_text()     # not edited by hand
