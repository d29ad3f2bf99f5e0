"""Prices: SkyPilot's catalog imported (names mapped by a tested table), kinds of price used where they
apply (endpoints serve on one node only; spot only when allowed), provider and region filters, and the
shipped table's coverage."""
import json
from pathlib import Path

import pytest

from advisor.inputs import catalog as catalog_mod, skypilot, workload
from advisor.inputs.prices import load_prices
from advisor.shell.cli import main
from advisor.base.errors import InputError
from advisor.numbers import cost

FIX = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name, count, mem, instance, cloud, expected", [
    ("H100", 8, 80, "gpu_8x_h100_sxm5", "lambda", ("h100-sxm", 8)),
    ("H100", 1, 80, "gpu_1x_h100_pcie", "lambda", ("h100-pcie", 1)),
    ("H100", 1, None, "1x_H100_SECURE", "runpod", ("h100-pcie", 1)),         # runpod's plain H100 is its PCIe card
    ("H100-SXM", 8, None, "8x_H100-SXM_SECURE", "runpod", ("h100-sxm", 8)),
    ("H100", 1, 94, "epyc-genoa-h100-nvl-pcie_1x2v4gb", "cudo", (None, 1)),   # H100 NVL 94 GB: not in the catalog
    ("H100-MEGA", 8, 80, "a3-megagpu-8g", "gcp", ("h100-sxm", 8)),
    ("H200", 8, None, "amaya_H200_sxm5x8_NVLINK", "shadeform", ("h200-sxm", 8)),   # NVLINK is not NVL
    ("A100", 8, 40, "gpu_8x_a100", "lambda", ("a100-40gb-sxm", 8)),
    ("A100", 1, 80, "epyc-genoa-a100-pcie_1x2v4gb", "cudo", ("a100-80gb-pcie", 1)),
    ("A100", 8, None, "denvr_A100_sxm4x8", "shadeform", (None, 8)),           # 40 or 80 GB: not said, not guessed
    ("A100-80GB", 1, None, "1x_A100-80GB_SECURE", "runpod", ("a100-80gb-pcie", 1)),
    ("A100-80GB", 8, 80, "p4de.24xlarge", "aws", ("a100-80gb-sxm", 8)),
    ("A100_80G", 8, None, "latitude_A100_80Gx8", "shadeform", ("a100-80gb-sxm", 8)),
    ("L40s", 1, None, "x", "vast", ("l40s", 1)), ("L4", 1, 24, "g6.xlarge", "aws", ("l4", 1)),
    ("RTXPRO6000Blackwell", 1, 96, "gpu_1x_rtxpro6000blackwell_96", "simplepod", ("rtx-pro-6000", 1)),
    ("tpu-v5litepod-8", 1, None, "tpu-v5litepod-8", "gcp", ("tpu-v5e", 8)),
    ("tpu-v5p-8", 1, None, "tpu-v5p-8", "gcp", ("tpu-v5p", 4)),               # v5p-N counts TensorCores, 2 per chip
    ("tpu-v6e-4", 1, None, "tpu-v6e-4", "gcp", ("tpu-v6e", 4)),
    ("A10G", 1, 24, "g5.xlarge", "aws", (None, 1)), ("V100", 8, 16, "gpu_8x_v100", "lambda", (None, 8)),
])
def test_accelerator_names_map_to_catalog_ids(name, count, mem, instance, cloud, expected):
    assert skypilot.map_accelerator(name, count, mem, instance, cloud) == expected


def test_every_mapped_id_is_in_the_catalog(catalog):
    assert set(skypilot.SIMPLE.values()) <= set(catalog.gpus) | {"b300", "mi355x", "gaudi-3"}
    assert set(skypilot.TPU_IDS.values()) <= set(catalog.gpus)


def test_import_reads_skypilot_vms_csv(tmp_path, capsys):
    out = tmp_path / "p.yaml"
    assert main(["prices", "import", str(FIX / "skypilot"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "not mapped to a catalog GPU (no row written): A6000 (1), V100 (1)" in err
    rows = {(p.gpu, p.kind, p.instance): p for p in load_prices(out, catalog_mod.default())}
    a100 = rows[("a100-40gb-sxm", "on-demand", "gpu_8x_a100")]
    assert (a100.usd_per_hour, a100.gpus_per_instance, a100.provider) == (10.32, 8, "Lambda")
    assert a100.regions == ("asia-south-1", "europe-central-1", "us-east-1")
    assert a100.commit == "11580132cea293395776b033c8533714d42abb4e" and a100.date == "2026-11-30"
    v5p = rows[("tpu-v5p", "on-demand", "tpu-v5p-8")]
    assert (v5p.usd_per_hour, v5p.usd_per_hour_median, v5p.gpus_per_instance) == (16.8, 17.01, 4)
    assert rows[("tpu-v5p", "spot", "tpu-v5p-8")].usd_per_hour == 4.91589
    v6e = rows[("tpu-v6e", "on-demand", "tpu-v6e-1")]
    assert v6e.usd_per_hour_median == 2.97 and "asia-east1" not in v6e.regions      # GCP's 700.0 placeholder dropped


def test_import_of_something_else_is_one_line(tmp_path, capsys):
    bad = tmp_path / "vms.csv"
    bad.write_text("a,b\n1,2\n")
    assert main(["prices", "import", str(bad)]) == 2
    assert "not a SkyPilot vms.csv" in capsys.readouterr().err
    assert main(["prices", "import", str(tmp_path / "nowhere")]) == 2


def test_shipped_table_is_the_import_of_its_sources():
    snapshot = (ROOT / ".." / "shared" / "reference" / "prices").resolve()
    if not snapshot.is_dir():
        pytest.skip("the reference snapshot is not beside the checkout")
    text = skypilot.import_prices([snapshot, ROOT / "catalog" / "skypilot-excerpts"], skip=("seeweb",)).text
    shipped = (ROOT / "catalog" / "prices-skypilot.yaml").read_text()
    assert shipped.split("prices:\n", 1)[1] == text.split("prices:\n", 1)[1]


def test_prices_list_json_covers_twenty_gpus_on_demand(capsys):
    assert main(["prices", "list", "--format", "json", "--kind", "on-demand"]) == 0
    rows = json.loads(capsys.readouterr().out)
    dated = {r["gpu"] for r in rows if r["provider"] and r["source"] and (r["date"] != "unknown" or r["commit"])}
    assert len(dated) >= 20
    assert all(r["kind"] == "on-demand" for r in rows)


def test_prices_list_text_for_one_gpu(capsys):
    assert main(["prices", "list", "--gpu", "H200", "--kind", "endpoint"]) == 0
    out = capsys.readouterr().out
    # a table laid out by rich (issue 42): the row's cells in order, whatever the padding
    rows = [line.split() for line in out.splitlines()]
    assert "h200-sxm endpoint 5.00 8 40.00 Hugging Face Inference Endpoints (AWS) 2026-09".split() in rows


def _w(catalog, **data):
    base = {"mode": "inference", "model": "llama-3.1-70b", "concurrency": 8}
    base.update(data)
    return workload.parse(base, catalog, "test")


def test_endpoints_price_single_node_serving_only(catalog):
    h200 = catalog.gpus["h200-sxm"]
    serve = _w(catalog)
    assert any(p.kind == "endpoint" for p in cost.offers(h200, catalog, serve, nodes=1))
    assert not any(p.kind == "endpoint" for p in cost.offers(h200, catalog, serve, nodes=3))
    train = _w(catalog, mode="training", training_tokens=1e9)
    assert not any(p.kind == "endpoint" for p in cost.offers(h200, catalog, train))


def test_no_training_or_multi_node_plan_is_priced_from_an_endpoint(estimate_file):
    for name in ("gpt-oss-120b-training", "kimi-k3-serving", "llama-13b-full-finetune"):
        for c in estimate_file(name).candidates:
            if c.price:
                assert c.price["kind"] != "endpoint", (name, c.gpu.id)
            if c.nodes and c.nodes > 1 and c.price:
                assert c.price["kind"] in ("on-demand", "reserved")


def test_spot_only_when_allowed_with_a_checkpointing_note(estimate_file):
    plain = estimate_file("llama-13b-full-finetune", constraints={"gpus": ["h100-sxm"], "providers": ["RunPod"]})
    c = plain.candidate("h100-sxm")
    assert c.price["kind"] == "on-demand" and "spot" not in c.why
    spot = estimate_file("llama-13b-full-finetune", constraints={"gpus": ["h100-sxm"], "providers": ["RunPod"], "spot": True})
    s = spot.candidate("h100-sxm")
    assert s.price["kind"] == "spot" and s.usd_per_hour < c.usd_per_hour        # RunPod H100 SXM spot $2.69 vs $2.99 a GPU
    assert "checkpoint" in s.why["spot"]


def test_providers_and_regions_filter_the_offers(estimate_file):
    aws = estimate_file("chat-assistant", constraints={"gpus": ["h200-sxm"], "providers": ["aws"]})
    c = aws.candidate("h200-sxm")
    assert c.price["provider"] == "AWS" and c.price["instance"] == "p5en.48xlarge" and c.price["idle_gpus"] == 0   # the planner fills the instance
    nowhere = estimate_file("chat-assistant", constraints={"gpus": ["h200-sxm"], "regions": ["mars-north-1"]})
    u = nowhere.candidate("h200-sxm")
    assert u.usd_per_hour is None and "no usable quote in mars-north-1" in u.price_unknown
    tpu = estimate_file("chat-assistant", constraints={"gpus": ["tpu-v5p"], "regions": ["us-east5"]}).candidate("tpu-v5p")
    assert tpu.price["provider"] == "GCP" and tpu.price["instance"].startswith("tpu-v5p-")


def test_offer_is_named_in_the_record(catalog):
    from advisor.judgement import decision, knowledge
    from advisor.numbers import estimate as estimator
    kb = knowledge.load()
    w = workload.load(ROOT / "examples" / "chat-assistant.yaml", catalog)
    rec = decision.decide(estimator.estimate(w, catalog), kb, catalog).record["recommendation"]
    p = rec["price"]
    assert {"provider", "instance", "region", "kind", "date", "commit", "source"} <= set(p)
    assert p["kind"] == "on-demand" and p["date"] == "2026-11-30" and p["instance"]


def test_user_quotes_replace_the_same_offer(tmp_path, catalog):
    f = tmp_path / "q.yaml"
    f.write_text("prices:\n  - {gpu: h100-sxm, gpus_per_instance: 8, usd_per_hour: 9.0, provider: Lambda, instance: gpu_8x_h100_sxm5,"
                 " kind: on-demand, date: 2026-12-01, source: 'our contract'}\n"
                 "  - {gpu: h100-sxm, gpus_per_instance: 8, usd_per_hour: 60.0, kind: reserved, provider: AWS, date: 2026-12, source: quote}\n")
    cat = catalog.with_prices(f)
    lam = [p for p in cat.prices_for("h100-sxm") if p.provider == "Lambda" and p.instance == "gpu_8x_h100_sxm5"]
    assert [p.usd_per_hour for p in lam] == [9.0]
    assert any(p.kind == "reserved" and p.usd_per_hour == 60.0 for p in cat.prices_for("h100-sxm"))
    assert len(cat.prices) == len(catalog.prices) + 1


@pytest.mark.parametrize("row, message", [
    ("{gpu: h100, gpus_per_instance: 1, usd_per_hour: 2, provider: X, date: 2026, source: s, kind: rent}", "'rent' is not one of"),
    ("{gpu: h100, gpus_per_instance: 1, usd_per_hour: 2, provider: X, date: 2026, source: s, kind: purchase}", "purchase prices belong in purchase.yaml"),
    ("{gpu: h100, gpus_per_instance: 1, usd_per_hour: 2, provider: X, date: 2026, source: s, regions: 5}", "regions: must be a list of region names"),
    ("{gpu: h100, gpus_per_instance: 1, usd_per_hour: 2, provider: X, date: 2026, source: s, usd_per_hour_median: 1}", "must be a number >= usd_per_hour"),
    ("{gpu: h100, gpus_per_instance: 1, usd_per_hour: 2, provider: X, date: 2026, source: s, colour: red}", "colour: unknown field"),
])
def test_bad_price_rows_name_the_field(tmp_path, catalog, row, message):
    f = tmp_path / "q.yaml"
    f.write_text(f"prices:\n  - {row}\n")
    with pytest.raises(InputError) as exc:
        catalog.with_prices(f)
    assert message in str(exc.value.problems[0]) and ":2:" in str(exc.value.problems[0])


def test_constraints_names_are_checked(catalog):
    with pytest.raises(InputError, match="constraints.providers: must be a list of names"):
        _w(catalog, constraints={"providers": [3]})
    w = _w(catalog, constraints={"providers": "Lambda", "spot": True})
    assert w.constraints.providers == ("Lambda",) and w.inputs()["constraints"]["providers"] == ["Lambda"]


def test_a_gpu_without_quotes_stays_unknown(estimate_file):
    c = estimate_file("chat-assistant", constraints={"gpus": ["gaudi-3"]}).candidate("gaudi-3")
    assert c.usd_per_hour is None and c.price_unknown == "no price known for this GPU"


def test_import_takes_a_skypilot_catalog_checkout(tmp_path, capsys):
    v7 = tmp_path / "skypilot-catalog" / "catalogs" / "v7" / "lambda"
    v7.mkdir(parents=True)
    (v7 / "vms.csv").write_text((FIX / "skypilot" / "lambda" / "vms.csv").read_text())
    assert main(["prices", "import", str(tmp_path / "skypilot-catalog"), "--commit", "abc123", "--date", "2026-12-01"]) == 0
    out = capsys.readouterr().out
    assert 'gpu: "a100-40gb-sxm", gpus_per_instance: 8, kind: "on-demand", usd_per_hour: 10.32' in out
    assert 'date: "2026-12-01", commit: "abc123"' in out


def test_bad_purchase_file_names_the_field(tmp_path):
    import shutil
    from advisor.inputs import catalog as catalog_mod
    d = tmp_path / "cat"
    shutil.copytree(ROOT / "catalog", d)
    text = (d / "purchase.yaml").read_text().replace("unit_gpus: 8", "unit_gpus: eight", 1)
    (d / "purchase.yaml").write_text(text)
    with pytest.raises(InputError) as exc:
        catalog_mod._load(d, "x")
    assert "unit_gpus: must be a whole number >= 1" in str(exc.value.problems[0])
