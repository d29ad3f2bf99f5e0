"""The team's fleet as it is (issue 22): a plan on cards the team owns keeps to the fleet's own nodes
and links, not to the catalog's idea of a server of that GPU.

A fleet entry (`fleet: [{gpu, count, nodes, interconnect, ...}]`) says how many cards sit in each of
its nodes and what joins them. The planner is given the GPU shaped by it (`shaped`): at most the
fleet node's cards in a node (so no tensor-parallel group takes more cards than one fleet node holds,
and no NVLink domain reaches across its nodes), and, when the fleet names PCIe (or, for a PCIe card,
nothing the advisor recognises), no NVLink at all, so the speed model, the layouts and the PCIe rules
treat the plan like any PCIe part; an SXM or OAM module whose link the fleet does not name keeps its
board's own (no such module is built without it). Every other figure (prices, power per card) stays the catalog's.
"""
from __future__ import annotations

from dataclasses import replace

from advisor.inputs import links
from advisor.inputs.catalog import GPU
from advisor.inputs.figures import Figure


def link_kind(interconnect: str | None) -> str:
    """'scale-up' when the fleet names a scale-up link, 'pcie' when it names PCIe only (or NVLink
    bridges, which join pairs), 'unknown' when it names neither (or nothing): the last two plan like
    PCIe. The workload loader has refused every wording outside the vocabulary (inputs.links)."""
    return links.read(interconnect).kind


def entry_for(gpu: GPU, w) -> object | None:
    """The workload's fleet entry for this GPU, or None."""
    return next((f for f in w.fleet if f.gpu == gpu.id), None) if w is not None else None


def cards_per_node(entry, gpu: GPU) -> int:
    """Cards in one of the fleet's nodes: count / nodes, rounded down (a tensor-parallel group must fit
    the smallest of them), at most the catalog's node; the catalog's node when the fleet gives no nodes."""
    if not entry.nodes:
        return gpu.gpus_per_node
    return max(1, min(gpu.gpus_per_node, entry.count // entry.nodes))


def shaped(gpu: GPU, w) -> GPU:
    """The GPU as the team's fleet holds it (the catalog's entry itself when there is no fleet entry
    or the fleet changes nothing)."""
    entry = entry_for(gpu, w)
    if entry is None:
        return gpu
    figures = dict(gpu.figures)
    per_node = cards_per_node(entry, gpu)
    where = f"the fleet's {entry.count} {gpu.id} in {entry.nodes} node{'s' if (entry.nodes or 0) > 1 else ''}"
    if per_node < gpu.gpus_per_node:
        figures["gpus_per_node"] = Figure(per_node, ("fleet",), f"{where}: {per_node} per node (fleet file)")
        system = gpu.fig("system_kw")
        if system.value:
            # the vendor's figure is for the catalog's full system: each card keeps its share of it
            share = system.value * per_node / gpu.gpus_per_node
            figures["system_kw"] = replace(system, value=share,
                                           sources=tuple(f"{s} x {per_node}/{gpu.gpus_per_node} for the fleet's nodes" for s in system.sources))
    domain = gpu.num("nvlink_domain") or gpu.gpus_per_node
    rack_scale = links.read(entry.interconnect).rack_scale
    if domain > per_node and not rack_scale:
        figures["nvlink_domain"] = Figure(per_node, ("fleet",), f"{where}: NVLink ends at the fleet's node")
    kind = link_kind(entry.interconnect)
    link = gpu.fig("interconnect")
    module = gpu.fig("form_factor").value in ("sxm", "oam", "module")
    if kind == "unknown" and module and link.value:
        # an SXM or OAM module only exists on a board with its scale-up link (HGX/DGX NVLink, OAM xGMI):
        # a fleet file that names no link gets the module's own, and a note says so (rule fleet-link-assumed)
        figures["interconnect"] = replace(link, extra={**link.extra, "fleet": "assumed"})
    elif kind != "scale-up" and link.value:
        said = f"interconnect: {entry.interconnect}" if entry.interconnect else "no interconnect given"
        gen = "Gen5" if (gpu.num("launch_year") or 0) >= 2022 else "Gen4"
        figures["interconnect"] = Figure(None, ("fleet",), f"PCIe {gen} x16: {where}, {said} in the fleet file, "
                                         f"planned as PCIe (write the scale-up link, e.g. interconnect: NVLink, if the nodes have it)",
                                         extra={"gb_s": None, "fleet": kind})
    if figures == gpu.figures:
        return gpu
    return replace(gpu, figures=figures)
