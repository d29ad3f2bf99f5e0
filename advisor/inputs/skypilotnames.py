"""SkyPilot's names in the catalog's words: its clouds as provider names and its accelerator names as
catalog GPU ids (`map_accelerator`, a tested table). A name it cannot map is left unmapped, never
guessed: `prices import` counts and reports those.
"""
from __future__ import annotations

import re

PROVIDERS = {"aws": "AWS", "gcp": "GCP", "azure": "Azure", "lambda": "Lambda", "runpod": "RunPod", "nebius": "Nebius",
             "primeintellect": "Prime Intellect", "shadeform": "Shadeform", "cudo": "Cudo Compute",
             "hyperbolic": "Hyperbolic", "mithril": "Mithril", "seeweb": "Seeweb", "simplepod": "SimplePod",
             "vast": "Vast.ai", "oci": "OCI", "paperspace": "Paperspace", "fluidstack": "Fluidstack",
             "do": "DigitalOcean", "ibm": "IBM", "vultr": "Vultr", "scp": "SCP"}


#: SkyPilot accelerator name (upper case, '_' read as '-') -> catalog GPU id. Names that need the
#: instance type or the memory to decide (A100, H100) are handled in map_accelerator.
SIMPLE = {
    "H200": "h200-sxm", "H200-SXM": "h200-sxm", "B200": "b200", "B300": "b300",
    "L40S": "l40s", "L40": "l40", "L4": "l4", "A10": "a10", "T4": "t4",
    "RTX4090": "rtx-4090", "RTX5090": "rtx-5090", "RTXPRO6000BLACKWELL": "rtx-pro-6000", "RTXPRO6000": "rtx-pro-6000",
    "MI300X": "mi300x", "MI325X": "mi325x", "MI355X": "mi355x", "GAUDI3": "gaudi-3",
    # in the catalog since issue 20; no row of today's snapshot names them
    "GB200": "gb200-nvl72", "GB300": "gb300-nvl72", "H20": "h20", "MI350X": "mi350x",
}
#: names known and deliberately not mapped: the catalog has no such GPU (A10G is AWS's own A10 variant
#: with other figures; H100 NVL and GH200 lack a sourced bf16 rate in ../shared/reference/gpus.yaml)
NOT_IN_CATALOG = {"A10G", "H100-NVL", "H200-NVL", "GH200", "V100", "V100-32GB", "V100-32G", "P100", "P4", "A40",
                  "A30", "A16", "A800", "A6000", "RTXA6000", "A5000", "RTXA5000", "A4000", "RTXA4000", "RTXA4500",
                  "RTXA2000", "RTX6000", "RTX6000-ADA", "RTX6000ADA", "RTX4000-ADA", "RTX3090", "RTX3080", "RTX3070",
                  "RTX3060", "RTX3060TI", "RTX5070", "RTX5080", "T4G", "RADEON PRO V520", "GAUDI2", "GRAYSKULL-E75",
                  "GRAYSKULL-E150", "TPU-V2-8", "TPU-V3-8", "TPU-V4-8"}
TPU = re.compile(r"^tpu-(v5litepod|v5p|v6e)-([0-9]{1,5})$", re.I)
TPU_IDS = {"v5litepod": "tpu-v5e", "v5p": "tpu-v5p", "v6e": "tpu-v6e"}


def map_accelerator(name: str, count: int, memory_gib: float | None, instance: str, cloud: str = "") -> tuple[str | None, int]:
    """(catalog GPU id or None, GPUs per instance) for one SkyPilot row. TPU slices are priced whole:
    tpu-v5litepod-N and tpu-v6e-N are N chips, tpu-v5p-N counts TensorCores (two per chip)."""
    name = (name or "").strip()
    m = TPU.match(name)
    if m:
        gen, n = m.group(1).lower(), int(m.group(2))
        chips = n // 2 if gen == "v5p" else n
        return (TPU_IDS[gen], chips) if chips >= 1 else (None, count)
    key = name.upper().replace("_", "-")
    inst = (instance or "").lower()
    pcie = "pcie" in inst
    nvl = re.search(r"nvl(?!ink)", inst) is not None      # H100/H200 NVL cards, not "NVLINK" servers
    if key in SIMPLE:
        if nvl and key.startswith("H200"):
            return None, count
        return SIMPLE[key], count
    if key in ("H100", "H100-SXM", "H100-MEGA", "H100-PCIE"):
        if (memory_gib and memory_gib > 90) or nvl:
            return None, count                     # H100 NVL 94 GB (cudo files it as "H100")
        if key == "H100-PCIE" or pcie or (cloud == "runpod" and key == "H100"):
            return "h100-pcie", count              # runpod: "H100" is its PCIe card, "H100-SXM" the SXM one
        return "h100-sxm", count
    if key in ("A100", "A100-80GB", "A100-80GB-SXM", "A100-80G", "A100-80GB-PCIE", "A100-40GB"):
        if key == "A100":
            if memory_gib:
                size = 80 if memory_gib > 60 else 40
            elif re.search(r"80g", inst):
                size = 80
            elif re.search(r"40g", inst):
                size = 40
            else:
                return None, count                 # shadeform files 40 and 80 GB cards alike as "A100"
        else:
            size = 40 if key == "A100-40GB" else 80
        if key == "A100-80GB-PCIE" or pcie or (cloud == "runpod" and key == "A100-80GB"):
            return f"a100-{size}gb-pcie", count    # runpod: "A100-80GB" is PCIe, "A100-80GB-SXM" the SXM one
        return f"a100-{size}gb-sxm", count
    return None, count
