"""GPU-to-GPU communication: the time of an all-reduce or an all-to-all over a link.

Ring algorithms (the NCCL/RCCL default for large messages): an all-reduce over n GPUs moves
2 (n - 1) / n of the message through each GPU's link, an all-to-all (n - 1) / n of it. Each
collective also pays a fixed latency (the floor that dominates small decode-step messages),
a fitted factor in catalog/efficiency.yaml (serving.allreduce_latency_us).

Cards without peer-to-peer (GeForce: gpus.yaml `p2p: false`) cannot write each other's memory, so
NCCL stages every transfer in host memory (its SHM transport, NCCL_ENV_SHM): each byte crosses PCIe
twice, device -> host and host -> device (half the link's bandwidth, link_gb_s), and each collective
pays NCCL's ring latency over host-staged hops instead (efficiency.yaml host_staged, Calibration.collective_latency_us).
"""
from __future__ import annotations

# DeepEP (deepseek-ai/DeepEP README: "FP8 dispatching and BF16 combining", the DeepSeek-V3/R1 setting;
# AMD's MoRI-EP the same on MI300X): the tokens go out to the experts as FP8 with one float32 scale per
# 128 channels (1 + 4/128 bytes per value), the experts' outputs come back in BF16. A plan whose matmuls
# run in 16 bits (no FP8 expert GEMM to feed) dispatches BF16 too.
DISPATCH_FP8_BYTES = 1 + 4 / 128
COMBINE_BYTES = 2


def allreduce_bytes(message_bytes: float, n: int) -> float:
    """Bytes each GPU sends (and receives) in a ring all-reduce of `message_bytes` over n GPUs."""
    return 2 * (n - 1) / n * message_bytes if n > 1 else 0.0


def alltoall_bytes(bytes_per_gpu: float, n: int) -> float:
    """Bytes each GPU sends in an all-to-all that spreads `bytes_per_gpu` evenly over n GPUs."""
    return (n - 1) / n * bytes_per_gpu if n > 1 else 0.0


def moe_alltoall_bytes(tokens_per_gpu: float, k: int, hidden: float, ep: int, bytes_per_value: float = 2) -> float:
    """Bytes each GPU sends in one MoE dispatch (or combine): each of its tokens goes to k experts as
    a hidden-size vector, and the share (ep - 1) / ep of those experts lives on other ranks."""
    return alltoall_bytes(tokens_per_gpu * k * hidden * bytes_per_value, ep)


def dispatch_bytes(compute_precision: str) -> float:
    """Bytes per hidden value of a MoE dispatch: FP8 with its scales where the expert matmuls take FP8
    (or lower) inputs, else BF16."""
    return DISPATCH_FP8_BYTES if compute_precision in ("fp8", "fp4") else COMBINE_BYTES


def moe_layer_alltoall_s(tokens_per_gpu: float, k: int, hidden: float, ep: int, link_bytes_s: float,
                         latency_s: float, dispatch_bytes_per_value: float = DISPATCH_FP8_BYTES) -> float:
    """Seconds of one MoE layer's expert-parallel traffic: a dispatch (FP8 with scales, or BF16) and a
    combine (BF16) all-to-all of each GPU's tokens x top-k hidden vectors, each with the latency floor."""
    if ep <= 1:
        return 0.0
    return (alltoall_s(tokens_per_gpu * k * hidden * dispatch_bytes_per_value, ep, link_bytes_s, latency_s)
            + alltoall_s(tokens_per_gpu * k * hidden * COMBINE_BYTES, ep, link_bytes_s, latency_s))


def moe_layer_alltoall_split_s(tokens_per_gpu: float, k: int, hidden: float, ep: int, domain: int, nvlink_bytes_s: float,
                               net_bytes_s: float, latency_s: float, dispatch_bytes_per_value: float = DISPATCH_FP8_BYTES) -> float:
    """One MoE layer's dispatch and combine over an EP group wider than the NVLink domain: the peers on
    the card's own domain over NVLink, the rest over the network, both at once (DeepEP: NVLink inside a
    node, RDMA between nodes), each with the latency floor."""
    local, remote = (domain - 1) / ep, (ep - domain) / ep
    sent = tokens_per_gpu * k * hidden * (dispatch_bytes_per_value + COMBINE_BYTES)
    return 2 * latency_s + sent * max(local / nvlink_bytes_s, remote / net_bytes_s)


def nvlink_domain(gpu) -> int:
    """GPUs that reach each other over the scale-up link (NVLink/NVSwitch, xGMI): the catalog's
    `nvlink_domain` (72 for an NVL72 rack), else one node."""
    n = gpu.num("nvlink_domain")
    return int(n) if n else gpu.gpus_per_node


def scale_up_link(gpu) -> bool:
    """Whether the GPU's cards reach each other over a scale-up link (NVLink/NVSwitch, xGMI, HCCS, ICI,
    Gaudi's RoCE) rather than PCIe: none given, or an NVLink bridge that joins pairs only, is PCIe, as
    link_gb_s times it."""
    kind = gpu.fig("interconnect").value
    return bool(kind) and kind != "nvlink-bridge"


def allreduce_s(message_bytes: float, n: int, link_bytes_s: float, latency_s: float) -> float:
    """Seconds for one all-reduce: the latency floor plus the ring's bytes over the link."""
    if n <= 1:
        return 0.0
    return latency_s + allreduce_bytes(message_bytes, n) / link_bytes_s


def alltoall_s(bytes_per_gpu: float, n: int, link_bytes_s: float, latency_s: float) -> float:
    """Seconds for one all-to-all (expert-parallel dispatch or combine)."""
    if n <= 1:
        return 0.0
    return latency_s + alltoall_bytes(bytes_per_gpu, n) / link_bytes_s


def link_gb_s(gpu, pcie: dict) -> tuple[float, str]:
    """Unidirectional GPU-to-GPU bandwidth per GPU (GB/s) inside a node and where it comes from.

    NVIDIA quotes NVLink bidirectional (halved here); AMD and Gaudi figures in the catalog are
    already unidirectional (their notes say so). Cards without a scale-up link talk over PCIe."""
    f = gpu.fig("interconnect")
    kind, gb_s = f.value, (f.extra or {}).get("gb_s")
    if isinstance(gb_s, (int, float)) and gb_s > 0:
        if str(kind).startswith("nvlink") and kind != "nvlink-bridge":
            return gb_s / 2, f"{kind} {gb_s:g} GB/s bidirectional / 2"
        if kind == "nvlink-bridge":
            # a bridge joins pairs only; beyond two cards the traffic crosses PCIe
            return pcie["gen4"], f"NVLink bridge pairs only: PCIe {pcie['gen4']:g} GB/s between more cards"
        return float(gb_s), f"{kind} {gb_s:g} GB/s unidirectional"
    note = (f.note or "") + " " + str(gpu.fig("form_factor").note or "")
    gen = "gen5" if "Gen5" in note or "gen5" in note else ("gen3" if "Gen3" in note else "gen4")
    if not gpu.p2p:
        return pcie[gen] / 2, (f"PCIe {gen} x16 {pcie[gen]:g} GB/s / 2: no peer-to-peer, every transfer goes device -> host "
                               "memory -> device, two PCIe copies (NCCL SHM)")
    return pcie[gen], f"PCIe {gen} x16 {pcie[gen]:g} GB/s (no scale-up link)"
