"""Tensor parallelism on cards without peer-to-peer (issue 20, GeForce): the catalog's `p2p` fact and
the all-reduce staged in host memory (advisor/numbers/comm.py link_gb_s, calibration
collective_latency_us, speed.group_latency_s), pinned by hand; a card with P2P keeps its figures."""
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.inputs import catalog as catalog_mod
from advisor.inputs import workload
from advisor.numbers import comm, speed
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import inference_ledger

from conftest import refuse

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MODEL = {"params_b": 8, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8, "head_dim": 128}


@pytest.fixture
def cal(catalog):
    """Round fitted factors (10 us P2P floor, the link at its spec rate); the host-staged figures are the
    shipped, sourced ones: base 3.6 us (NCCL_TUNING) and a 11.7 us exchange (TINYGRAD_P2P_ISSUE17)."""
    c = replace(speed.calibration(catalog), allreduce_us=10.0, link_share=1.0, _links={})
    assert (c.host_base_us, c.host_exchange_us) == (3.6, 11.7)
    return c


def tp_allreduce_ms(catalog, cal, gpu, tp):
    w = workload.parse({"mode": "inference", "model": MODEL, "precision": "bf16", "prompt_tokens": 1000,
                        "output_tokens": 1000, "concurrency": 1}, catalog)
    led = inference_ledger(w)
    g = catalog.gpus[gpu]
    rate = speed.achievable_tflops(catalog, g, speed.compute_precision(w, g, led.sized))
    return speed.inference_speed(w, led, g, Layout(tp, 1, 1, 0.0), rate, cal).speed_explained["tp_allreduce_ms"]


def test_geforce_cards_have_no_peer_to_peer(catalog):
    no_p2p = sorted(g.id for g in catalog.gpus.values() if not g.p2p)
    assert no_p2p == ["rtx-4060-ti-16gb", "rtx-4090", "rtx-5060-ti-16gb", "rtx-5070-ti", "rtx-5090"]
    assert catalog.gpus["rtx-5090"].fig("p2p").sources == ("NCCL_TESTS_287", "TINYGRAD_P2P", "NCCL_ENV_SHM")
    assert catalog.gpus["rtx-pro-6000"].p2p and catalog.gpus["l40s"].p2p and catalog.gpus["h100-sxm"].p2p


def test_one_layer_all_reduce_on_four_rtx_5090_by_hand(catalog, cal):
    g = catalog.gpus["rtx-5090"]
    link, how = cal.link_bytes_s(g)
    assert link == 32e9                                  # PCIe Gen5 x16 64 GB/s, each byte copied twice via host memory
    assert "no peer-to-peer" in how
    floor = speed.group_latency_s(g, cal, 4)
    assert floor == pytest.approx(52.2e-6)               # 3.6 us + 2 x (4 - 1) hops x (11.7 - 3.6) us
    # one decode step of 8 sequences of Llama 3.1 70B (hidden 8192, 16-bit): 131,072 B reduced per all-reduce,
    # 2 x 3/4 of it through each card's link: 196,608 B / 32 GB/s = 6.144 us; two all-reduces per layer
    one = comm.allreduce_s(8 * 8192 * 2, 4, link, floor)
    assert one == pytest.approx(52.2e-6 + 6.144e-6)
    assert 2 * one == pytest.approx(116.688e-6)
    # the same through the speed model: the 8B model above, one sequence, 32 layers x 2 all-reduces
    got = tp_allreduce_ms(catalog, cal, "rtx-5090", 4)
    assert got["value"] == pytest.approx(64 * (52.2 + 2 * 0.75 * 4096 * 2 / 32e3) / 1e3)   # 3.365 ms
    assert got["factor"]["host_staged_latency_us"] == pytest.approx(52.2)


def test_the_host_staged_floor_grows_with_the_ring(catalog, cal):
    g = catalog.gpus["rtx-4090"]
    assert [round(speed.group_latency_s(g, cal, n) * 1e6, 1) for n in (1, 2, 8)] == [11.7, 19.8, 117.0]
    # beyond one box the group runs over the network and takes the fitted floor
    assert speed.group_latency_s(g, cal, 16) == pytest.approx(10e-6)


@pytest.mark.parametrize("gpu, link", [("h100-sxm", 450e9), ("l40s", 32e9), ("rtx-pro-6000", 64e9)])
def test_a_card_with_peer_to_peer_is_unchanged(catalog, cal, gpu, link):
    g = catalog.gpus[gpu]
    assert cal.link_bytes_s(g)[0] == link               # NVLink 4 900 / 2; PCIe Gen4 / Gen5 x16, no halving
    assert speed.group_latency_s(g, cal, 4) == pytest.approx(10e-6)
    got = tp_allreduce_ms(catalog, cal, gpu, 4)
    assert got["value"] == pytest.approx(64 * (10 + 2 * 0.75 * 4096 * 2 / (link / 1e6)) / 1e3)
    assert got["factor"]["allreduce_latency_us"] == 10.0


def test_a_p2p_field_that_is_not_true_or_false_is_refused(capsys, tmp_path, monkeypatch):
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    text = (d / "gpus.yaml").read_text()
    old = "p2p: {v: false, src: [NCCL_TESTS_287"
    assert old in text
    (d / "gpus.yaml").write_text(text.replace(old, "p2p: {v: sometimes, src: [NCCL_TESTS_287", 1))
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(d))
    catalog_mod._CACHE.clear()
    try:
        err = refuse(capsys, ["estimate", str(EXAMPLES / "chat-assistant.yaml")], "gpus.yaml:")
        assert "rtx-4090.p2p" in err and "true or false" in err
    finally:
        catalog_mod._CACHE.clear()
