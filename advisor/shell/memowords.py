"""Memo words a reader understands (issue 42): a record field's name with its units written as units,
the plan's power for what is rented, and the text of a memo with the estimator's internal names worded
and its sources given as addresses a reader can open. advisor/shell/wording.py words money and values."""
from __future__ import annotations

import re

RENTED = ("on-demand", "spot", "reserved", "contract")


def power(c: dict, gpu) -> str:
    """The plan's power as the reader plans for it: a rented instance draws its cards' share of the wall
    power (numbers.power.kw_per_card: 10.2 kW per 8-GPU DGX H100 is about 2.6 kW for a 2-GPU instance),
    said per instance; bought or owned cards, the node's figure. `c` is the estimate's candidate."""
    from advisor.numbers.power import kw_per_card
    kw, o = c["power_kw_per_node"], c.get("price") or {}
    per, n = o.get("gpus_per_instance"), o.get("instances") or 1
    card_kw, _ = kw_per_card(gpu)
    if o.get("kind") in RENTED and per and card_kw:
        rented = f"{n} instances rented" if n > 1 else "one instance rented"
        return (f"about {card_kw * per:,.1f} kW for each {per}-GPU instance ({rented}, {card_kw * 1000:,.0f} W per card "
                "with its share of the host; the provider supplies it)")
    return f"about {kw:,.1f} kW per node"


#: unit words as people write them, wherever a field's name is shown in words ("Usd per million tokens")
_UNIT_WORDS = {"usd": "USD", "kw": "kW", "kwh": "kWh", "gb": "GB", "tb": "TB", "tflops": "TFLOPS", "gpu": "GPU", "gpus": "GPUs",
               "pue": "PUE", "tco": "TCO", "ms": "ms", "kv": "KV", "api": "API", "mfu": "MFU", "ttft": "TTFT", "tpot": "TPOT"}


def field_words(key: str) -> str:
    """A record field's name in words, its first letter capitalised and units written as units:
    usd_per_million_tokens -> "USD per million tokens", hosting_usd_per_kw_month -> "Hosting USD per kW month"."""
    words = [_UNIT_WORDS.get(w.lower(), w) for w in key.replace("_", " ").split()]
    if words and words[0] == words[0].lower():
        words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words)


#: the estimator's internal names, worded for a memo's reader (issue 42: "no internal names in a memo")
_TERMS = [(re.compile(r"\(separate kernels, AIC_OP_SUM\)"), "(weights and KV cache read by separate kernels, their times added)"),
          (re.compile(r"\bAIC_OP_SUM\b"), "separate kernels' times added"),
          (re.compile(r"\bmeasured MAMF\b"), "measured matmul rate"),
          (re.compile(r"\bmeasured (\S+) MAMF share\b"), r"measured \1 share of the matmul rate"),
          (re.compile(r"\bMAMF table\b"), "table of measured matmul rates"),
          (re.compile(r"\bMAMF\b"), "measured matmul rate")]
#: where a source names a repository's file or a local copy, the address a reader can open instead
_SOURCES = [(re.compile(r"\bskypilot-org/skypilot-catalog (catalogs/\S+)"), r"https://github.com/skypilot-org/skypilot-catalog/blob/master/\1"),
            (re.compile(r" ?\(via the snapshot in prices/\)"), ""),
            (re.compile(r"\bgithub ([\w.-]+/[\w.-]+)\b"), r"https://github.com/\1"),
            (re.compile(r"(?<![/\w])epoch-research/training-cost-trends\b"), "https://github.com/epoch-research/training-cost-trends"),
            (re.compile(r"(?:\.\./|/work/)shared/[\w./{},-]*"), "the project's reference data")]


def readable(text: str) -> str:
    """A memo's text with the estimator's internal names worded and sources given as addresses a reader
    can open (never a path of the build)."""
    for pattern, words in _TERMS + _SOURCES:
        text = pattern.sub(words, text)
    return text


def readable_all(obj):
    """`readable` on every string inside plain data."""
    if isinstance(obj, str):
        return readable(obj)
    if isinstance(obj, dict):
        return {k: readable_all(v) for k, v in obj.items()}
    if type(obj) in (list, tuple):
        return type(obj)(readable_all(v) for v in obj)
    return obj
