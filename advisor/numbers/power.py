"""Power: the wall power one card stands for (the vendor's system figure, else TDP x the seed's host
factor, C14), the power of a node, whole nodes per rack, and how many cards one desk machine holds
(`deployment: workstation`: a tower's slots and its circuit). numbers.cost prices the plan with these;
the planner sizes a workstation within `workstation_cards`.
"""
from __future__ import annotations

HOST_POWER_FACTOR = 1.25           # C14: 8 x 700 W cards <-> a 6-8 kW node: 7 kW / 5.6 kW (fallback only)

#: what one desk machine holds: a tower's card slots (K02) and a household circuit's continuous load
#: (15 A x 120 V x 80%, NEC_15A; the rules workstation-four-cards and workstation-wall-circuit judge the same)
WORKSTATION_MAX_CARDS = 4
WORKSTATION_CIRCUIT_KW = 1.44


def kw_per_card(gpu) -> tuple[float | None, str | None]:
    """The wall power one card stands for: its share of the vendor's system figure (DGX/HGX: the whole
    8-GPU box with CPUs, NICs and fans), else TDP x the seed's host factor (C14), and which it was."""
    system = gpu.num("system_kw")
    if system:
        n = gpu.gpus_per_node
        src = ", ".join(gpu.fig("system_kw").sources)
        return system / n, f"{system:g} kW per {n}-GPU system ({src}: vendor specification)"
    tdp = gpu.num("tdp_w")
    if not tdp:
        return None, None
    return tdp * HOST_POWER_FACTOR / 1000, f"{tdp:g} W x 1.25 host factor (C14; no vendor system figure in the catalog)"


def workstation_cards(gpu, w) -> tuple[int, str] | None:
    """On a desk (`deployment: workstation`), the most cards of `gpu` one box and its circuit hold (the
    workload's power_kw_per_node when given, else a household circuit), and why; None elsewhere."""
    if w is None or w.constraints.deployment != "workstation":
        return None
    per, _ = kw_per_card(gpu)
    circuit = w.constraints.power_kw_per_node or WORKSTATION_CIRCUIT_KW
    by_power = int(circuit // per) if per else WORKSTATION_MAX_CARDS
    n = max(1, min(WORKSTATION_MAX_CARDS, by_power))
    # (the sources, K02, C14 and NEC_15A, go in the limit's `source`: memo texts carry no codes)
    why = (f"a workstation holds {n} x {gpu.id} (a tower takes {WORKSTATION_MAX_CARDS} cards, its "
           + ("power supply" if w.constraints.power_kw_per_node else "household circuit") + f" {circuit:g} kW"
           + (f", {per:.2f} kW a card with the host" if per else "") + ")")
    return n, why


def power(gpu, count: int) -> tuple[float | None, str | None]:
    """Power per node, and how it was had: the vendor's system figure for a full node, its share for a
    part-filled one; TDP x the host factor (C14) only where no system figure exists."""
    cards_in_node = min(count, gpu.gpus_per_node)
    per, how = kw_per_card(gpu)
    if per is None:
        return None, None
    if gpu.num("system_kw"):
        # an HGX/DGX board is bought and fed whole: the rack position must carry the system's rating
        # however many of its cards the plan uses
        return per * gpu.gpus_per_node, how + (f" ({cards_in_node} of its {gpu.gpus_per_node} GPUs used)"
                                               if cards_in_node < gpu.gpus_per_node else "")
    return per * cards_in_node, f"{cards_in_node} x {how}"


def nodes_per_rack(node_kw: float | None, rack_kw: float | None) -> int | None:
    """Density: whole nodes a rack's power feeds (C14); None when either figure is unknown."""
    if not node_kw or not rack_kw:
        return None
    return int(rack_kw // node_kw)
