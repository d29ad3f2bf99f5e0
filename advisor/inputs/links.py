"""A fleet's `interconnect:` read as a closed vocabulary (issue 42): every word of it must be a link,
a network or a harmless qualifier the advisor knows, or the file is refused naming the word.

The field is free text people write as they would on a purchase order ("NVLink + InfiniBand NDR",
"8x H100 SXM, NVSwitch, 400G RoCE"). A substring match read "no NVLink" and "PCIe switch (NVLink
disabled)" as NVLink and planned tensor parallelism of 8 over a link the nodes do not have. Parsing
negation ("no", "not", "without", "disabled", "w/o", "-less", "off", "broken", ...) can never be
complete, so no negation is read: a word outside the vocabulary is refused, with the accepted words,
and the user writes the link the nodes have ("PCIe") instead of the one they lack.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: scale-up links between the GPUs of a node (NVIDIA NVLink and NVSwitch, AMD xGMI / Infinity Fabric,
#: UALink, Huawei HCCS), with an optional generation ("nvlink4", "nvlink-5", "xgmi-3", "nvlink-c2c")
_SCALE_UP = re.compile(r"(?:nvlink|nvswitch|xgmi|ualink|hccs)(?:-?(?:v?\d+|c2c))?|infinity(?:-fabric)?")
#: a rack-scale NVLink domain (GB200/GB300 NVL72, NVL36): the rack is the domain
_RACK = re.compile(r"nvl(?:72|36)")
_PCIE = re.compile(r"pci-?e(?:-?(?:gen)?\d+)?|pci|express")
#: scale-out networks between nodes: named, they change nothing about the links inside a node
_NETWORK = re.compile(r"infiniband|ib|ndr|hdr|xdr|edr|roce(?:-?v?\d)?|ethernet|eth|gbe|efa(?:-?v?\d)?|rdma|gpudirect|"
                      r"spectrum(?:-x)?|connectx(?:-?\d)?|cx-?\d|quantum(?:-?\d)?|slingshot|omni-path|tcpxo?|ultra|"
                      r"bluefield(?:-?\d)?|nics?|network|fabric|rail(?:-optimi[sz]ed)?|optimi[sz]ed|scale-out|out")
#: words that only qualify: generations, speeds and counts ("400G", "8x", "3.2", "gen5"), GPU and board
#: names ("H100", "GB200", "MI300X"), joining words; none of them denies a link
_QUALIFIER = re.compile(r"\d[\w.]*|x\d+|[a-z]{1,3}\d{2,4}[a-z]{0,3}|gen-?\d*|generation|v\d+|\d+(?:st|nd|rd|th)|"
                        r"and|with|plus|over|via|to|the|a|an|of|in|on|each|per|between|inside|within|across|only|"
                        r"nodes?|gpus?|cards?|servers?|boards?|baseboard|rack|racks|domain|hgx|dgx|mgx|sxm\d*|oam|"
                        r"switch(?:ed|es)?|links?|ports?|lanes?|host|cpu|full|fully|connected|mesh|all-to-all|"
                        r"scale-up|scale|up|dual|single|quad|gb|gbps|gbit|tb|tbps|gt|s|bit|bandwidth|bidirectional|"
                        r"fast|high-speed|speed|nvl")
_BRIDGE = re.compile(r"bridges?|bridged")
_WORD = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")

ACCEPTED = ("scale-up links: NVLink, NVSwitch, NVL72, NVL36, xGMI, Infinity Fabric, UALink, HCCS; "
            "NVLink bridge (pairs only); PCIe; networks: InfiniBand, RoCE, Ethernet, EFA; or none, unknown")


@dataclass(frozen=True)
class Link:
    """What a fleet's interconnect says: 'scale-up' (a link between all the cards of a node), 'pcie'
    (PCIe only, or NVLink bridges that join pairs), 'unknown' (no link inside a node named);
    `rack_scale`: an NVL72/NVL36 rack is one NVLink domain."""

    kind: str
    rack_scale: bool = False


def read(text: str | None) -> Link:
    """The link a fleet's `interconnect` names; ValueError (its message says which word and what is
    accepted) for any word outside the vocabulary."""
    raw = (text or "").strip()
    low = raw.lower()
    if not low:
        return Link("unknown")
    if low == "none":
        return Link("pcie")              # no link between the cards: they talk over PCIe
    if low == "unknown":
        return Link("unknown")
    scale_up = pcie = bridge = rack = False
    for word in _WORD.findall(low):
        if _RACK.fullmatch(word):
            rack = scale_up = True
        elif _SCALE_UP.fullmatch(word):
            scale_up = True
        elif _PCIE.fullmatch(word):
            pcie = True
        elif _BRIDGE.fullmatch(word):
            bridge = True
        elif not (_NETWORK.fullmatch(word) or _QUALIFIER.fullmatch(word)):
            raise ValueError(f"{raw[:80]!r}: {word[:40]!r} is not a word of the interconnect vocabulary (negations are not "
                             f"read: name the links the nodes have, e.g. 'PCIe' or 'NVLink + InfiniBand'); accepted: {ACCEPTED}")
    rack = rack or bool(re.search(r"\bnvl[\s-]?(?:72|36)\b", low))
    if rack:
        return Link("scale-up", True)
    if scale_up and bridge and not re.search(r"nvswitch|xgmi|infinity|ualink|hccs", low):
        return Link("pcie")              # an NVLink bridge joins pairs only: PCIe between more cards (comm.scale_up_link)
    if scale_up:
        return Link("scale-up")
    return Link("pcie" if pcie else "unknown")
