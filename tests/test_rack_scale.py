"""Rack-scale and new accelerators (issue 20): GB200/GB300 NVL72 as a 72-GPU NVLink domain rented and
bought as the whole rack, H20 and MI350X, each figure as its source gives it."""
import json

import pytest

from advisor.inputs import workload
from advisor.numbers import comm, layouts, speed
from advisor.numbers.ledger import inference_ledger
from advisor.shell.cli import main


@pytest.mark.parametrize("gid, memory, kw, tdp", [("gb200-nvl72", 186, 120, 1200), ("gb300-nvl72", 288, 132, 1400)])
def test_an_nvl72_is_one_72_gpu_nvlink_domain_fed_and_cooled_as_a_rack(catalog, gid, memory, kw, tdp):
    g = catalog.gpus[gid]
    assert (g.memory_gb, g.bandwidth_tb_s, g.gpus_per_node, comm.nvlink_domain(g)) == (memory, 8.0, 72, 72)
    assert (g.num("system_kw"), g.num("tdp_w"), g.fig("cooling").value) == (kw, tdp, "liquid")
    assert g.fig("system_kw").sources and g.fig("nvlink_domain").sources == ("SETLOOP_NVL72",)
    assert layouts.rack_unit(g) == 72 and layouts.tensor_split_max(g) == 8
    assert layouts.rack_unit(catalog.gpus["h200-sxm"]) is None


def test_h20_and_mi350x_figures(catalog):
    h20, mi = catalog.gpus["h20"], catalog.gpus["mi350x"]
    assert (h20.memory_gb, h20.bandwidth_tb_s, h20.tflops("bf16"), h20.tflops("fp8"), h20.num("tdp_w")) == (96, 4.0, 148, 296, 400)
    assert (mi.memory_gb, mi.bandwidth_tb_s, mi.num("tdp_w"), mi.fig("cooling").value) == (288, 8.0, 1000, "air")
    assert mi.tflops("fp8") == 4600 and mi.fig("tdp_w").sources == ("WCCF_MI350", "REG_MI355X")


def test_dep_groups_span_the_rack_while_tensor_splits_stay_at_eight(catalog):
    w = workload.parse({"mode": "inference", "model": "deepseek-v3", "concurrency": 256}, catalog)
    led = inference_ledger(w)
    g = catalog.gpus["gb200-nvl72"]
    got = {(lay.tp, lay.ep, lay.attention_dp) for lay in layouts.inference_layouts(w, led, g, 4096)}
    assert {(8, 8, 8), (16, 16, 16), (32, 32, 32), (64, 64, 64)} <= got
    assert all(max(tp // adp, tp // ep) <= 8 for tp, ep, adp in got)     # no TP 16 of attention or experts
    # a 64-GPU DEP group's all-to-all stays on NVLink inside the rack
    cal = speed.calibration(catalog)
    assert speed.group_link(g, cal, 64) == cal.link_bytes_s(g)


def _estimate(capsys, tmp_path, text):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    assert main(["estimate", str(f), "--format", "json"]) == 0
    return {c["gpu"]: c for c in json.loads(capsys.readouterr().out)["candidates"]}


def test_the_rack_is_rented_whole_even_without_a_price(capsys, tmp_path):
    c = _estimate(capsys, tmp_path, "mode: inference\nmodel: deepseek-v3\nconcurrency: 256\n"
                                    "constraints: {gpus: [gb200-nvl72]}\n")["gb200-nvl72"]
    # DEP 8 on 8 of the rack's GPUs holds the 256 users: the plan is one rack (one "node" of 72 GPUs, its 120 kW),
    # not 72 GPUs spread over 9 replicas to fill it (the rules then refuse a rack for a job this small)
    assert c["count"] == 8 and c["nodes"] == 1 and c["power_kw_per_node"] == 120
    assert c["price_unknown"] == "no price known for this GPU"


def test_an_owned_rack_is_priced_as_the_analysts_rack_estimates_with_its_servers_inside(capsys, tmp_path):
    c = _estimate(capsys, tmp_path, "mode: inference\nmodel: deepseek-v3\nconcurrency: 256\n"
                                    "constraints: {gpus: [gb200-nvl72], deployment: on-prem}\n")["gb200-nvl72"]
    # median of $3.0M and $3.75M (the midpoint of $3.5-4M) = $3.375M per rack, / 72 = $46,875 per GPU;
    # the rack holds its Grace CPUs, switch trays and power shelves: no 1.3x server overhead on top
    assert c["price"]["usd_per_gpu"] == 46875 and c["price"]["instance"] == "1 x 72-GPU rack"
    assert c["tco"]["capex_usd"] == pytest.approx(3_375_000)
    assert c["tco"]["it_kw"] == pytest.approx(120)


def test_a_rack_source_that_prices_a_part_or_more_than_the_rack_is_left_out(catalog):
    e = catalog.purchase["gpus"]["gb300-nvl72"]["usd_per_gpu"]
    # $4.0M and $3.0M racks; the $50,000 liquid-cooling parts and no "all-in" figure
    assert (e["v"], e["range"]) == (48611, [41667, 55556])
    assert not any("50,000" in s for s in e["sources"])
