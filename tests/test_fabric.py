"""Fabric (issue 46 item 1): offers carry the network between their instances (catalog/fabric.yaml); a
plan whose traffic crosses rented instances is priced only on a listing with RDMA or GPUDirect between
them, and refused, with the reason, for a GPU none of whose listings has it."""
import pytest

from conftest import decide
from advisor.base.errors import InputError
from advisor.inputs import fabric

DEP16 = {"name": "deepseek-dep16", "mode": "inference", "model": "deepseek-v3", "precision": "fp8", "concurrency": 256,
         "prompt_tokens": 2000, "output_tokens": 500, "layout": {"tp": 16, "ep": 16, "attention_dp": 16},
         "constraints": {"gpus": ["h100-sxm", "mi300x"]}}


def test_cross_vm_expert_parallelism_is_priced_on_an_rdma_cluster_or_refused(catalog, kb):
    # before: DEP 16 over two Hyperbolic 8 x H100 VMs (no network between them stated), priced as if joined
    d = decide(catalog, kb, DEP16)
    h100 = d.estimate.candidate("h100-sxm")
    assert h100.price["fabric"]["rdma"] is True and h100.price["instances"] == 2
    assert h100.price["provider"] == "Nebius" and h100.price["fabric"]["gbps"] == 3200
    # MI300X is rented only as RunPod Pods (100 Mbps between them): the plan is refused, with the reason
    why = [f.exclusion()["reason"] for f in d.exclusions["mi300x"] if f.rule.id == "fabric-needed-not-offered"]
    assert why and "its model copy crosses rented instances, needing RDMA or GPUDirect between them" in why[0]
    assert "cheapest: RunPod, Ethernet between Pods, 100 Mbps; 4 listings" in why[0]


def test_an_offer_within_one_instance_carries_its_network_and_is_not_refused(catalog, kb):
    d = decide(catalog, kb, {**DEP16, "layout": None, "model": "llama-3.1-8b", "precision": "bf16", "concurrency": 8})
    p = d.estimate.candidate("h100-sxm")
    assert p.price["instances"] == 1 and "fabric" in p.price
    assert "mi300x" not in d.exclusions or not any(f.rule.id == "fabric-needed-not-offered" for f in d.exclusions["mi300x"])


def test_the_listings_network_is_read_by_provider_and_instance(catalog):
    assert fabric.of(catalog.fabric, "AWS", "p5.48xlarge")["kind"].startswith("EFA")
    assert fabric.of(catalog.fabric, "AWS", "g5.48xlarge")["gpu_direct"] is False       # not a P instance: not stated
    assert fabric.of(catalog.fabric, "GCP", "a3-megagpu-8g")["gpu_direct"] is True
    assert fabric.of(catalog.fabric, "GCP", "a3-megagpu-8g")["rdma"] is False


def test_a_bad_fabric_row_is_named_with_its_line(tmp_path):
    f = tmp_path / "fabric.yaml"
    f.write_text("offers:\n  - {provider: X, kind: IB, rdma: yes-ish, gpu_direct: true, src: s, date: 2026}\n")
    with pytest.raises(InputError) as e:
        fabric.load_fabric(f)
    assert "rdma" in str(e.value) and ":2" in str(e.value)
