"""What the dialogue says to `?` and `why`: a question's help in plain words with its glossary terms
and what it accepts (for the model question, the catalog with sizes), wrapped at the terminal's width;
and MYCIN's WHY, the rules that test an answer and what they conclude; and how an answer reads back
on the confirmation screen (`show`, `question_label`) and the speed a user gets (`speed_line`)."""
from __future__ import annotations

import re

from advisor.inputs.catalog import Catalog
from advisor.judgement.knowledge import KnowledgeBase
from advisor.numbers.terms import HOURS_PER_MONTH
from advisor.shell.memoworkload import MODEL_LABELS, label
from advisor.shell.questions import SERVICE_LEVEL, Question, accepted
from advisor.shell.wording import asked_rate, rate_beside


def help_lines(q: Question, catalog: Catalog, width: int) -> list[str]:
    """`?`: the question in plain words, a line on each term it uses, what is accepted (for the model
    question, the catalog with sizes), wrapped at the terminal's width."""
    lines = wrap(q.help, width) + [x for t in q.terms for x in wrap(t, width)]
    if q.kind == "model":
        lines += model_list(catalog, width)
    lines += wrap(accepted(q), width) + wrap("Commands: ? help, why (rules that use this answer), back, quit.", width)
    return lines


def model_list(catalog: Catalog, width: int) -> list[str]:
    """The catalog's models with their sizes, in columns that fit the terminal."""
    items = []
    for m in catalog.models.values():
        total, active = m.num("params_b"), m.num("active_params_b")
        size = _size(total) + (f" ({_size(active)} active)" if active and total and active < total else "")
        items.append(f"{m.id}: {size}")
    col = max(len(x) for x in items) + 3
    per_line = max(1, (width - 4) // col)
    return ["    " + "".join(x.ljust(col) for x in items[i:i + per_line]).rstrip() for i in range(0, len(items), per_line)]


def wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """A help text wrapped at the terminal's width, continuation lines indented."""
    import textwrap
    return textwrap.wrap(text, width=max(30, width - 1), initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=False) or [indent]


def why_lines(q: Question, kb: KnowledgeBase, answers: dict) -> list[str]:
    """MYCIN's WHY: the rules that test this answer, and what they conclude."""
    name = q.field.split(".", 1)[1] if q.field.startswith(("constraints.", "model.")) else q.field
    facts = {f"workload.{name}"}
    if q.field == "model" or q.field.startswith("model."):
        facts |= {"workload.model", "workload.params_b", "workload.active_params_b", "workload.per_card_need_gb",
                  "workload.weights_gb", "workload.moe"}
    if q.field in ("context_tokens", "concurrency", "precision", "method"):
        facts |= {"workload.per_card_need_gb"}
    rules = [r for r in kb.rules if facts & set(r.facts_used) and _may_apply(r, answers)]
    if not rules:
        return ["  No rule tests this answer directly; the estimator uses it for the memory and speed figures."]
    lines = [f"  {len(rules)} rule(s) use this answer:"]
    for r in rules[:12]:
        effects = ", ".join(_effect_word(k, v) for k, v in r.effects.items())
        lines.append(f"  - {r.title} ({', '.join(r.source)}): {effects}")
    if len(rules) > 12:
        lines.append(f"  ... and {len(rules) - 12} more (gpu-advisor rules list)")
    return lines


def _may_apply(rule, answers: dict) -> bool:
    """False for a rule whose top-level tests on answers already given exclude it (a training rule
    in an inference session)."""
    from advisor.judgement.engine import guard
    from advisor.judgement.knowledge import evaluate
    known = {}
    for k, v in answers.items():
        name = k.split(".", 1)[1] if k.startswith(("constraints.", "model.")) else k
        if not k.startswith("model."):
            known[f"w_{name}"] = v
    for leaf in guard(rule.when):
        if leaf.fact.startswith("workload.") and f"w_{leaf.fact[9:]}" in known and not evaluate(leaf, known):
            return False
    return True


def _size(b) -> str:
    if not b:
        return "size unknown"
    return f"{b / 1000:.3g}T" if b >= 1000 else f"{b:.3g}B"


def _effect_word(kind: str, v) -> str:
    if kind in ("prefer", "avoid"):
        target = ", ".join(str(v[s]) for s in ("gpu", "vendor", "generation", "class") if s in v) or "the candidate"
        return f"{kind} {target} ({v['weight']:g})"
    if kind == "exclude":
        return "exclude"
    if kind == "derive":
        return "derive " + ", ".join(v)
    return kind


# --- answers read back ----------------------------------------------------------------------------------

def speed_line(rec: dict) -> str:
    """What each user sees of the recommended serving plan: tokens/s per user and the time to the first
    token, beside the service level they were sized for (record: estimate, service_level)."""
    r = rec.get("recommendation")
    if not r or rec.get("inputs", {}).get("mode") != "inference":
        return ""
    c = next((k for k in rec["estimate"]["candidates"] if k["gpu"] == r["gpu"]), {})
    tps, ttft = c.get("tokens_per_s_per_user"), c.get("ttft_ms", c.get("prefill_ms"))
    if tps is None:
        return ""
    sl = rec.get("service_level") or {}
    asked = " and ".join(x for x in (f"{asked_rate(sl['tpot_ms'])} tokens/s" if sl.get("tpot_ms") else "",
                                     f"{sl['ttft_ms'] / 1000:,.2g} s" if sl.get("ttft_ms") else "") if x)
    return (f"  each user: {rate_beside(tps, sl)} tokens/s" + (f", first token in {ttft / 1000:,.2g} s" if ttft is not None else "")
            + (f" (the service level asks {asked})" if asked else ""))


def question_label(q: Question) -> str:
    """A question's answer named in words on the confirmation screen (the memo's labels, memoworkload)."""
    if q.field == SERVICE_LEVEL:
        return "Speed for each user"
    if q.field.startswith("model."):
        return "Model " + MODEL_LABELS.get(q.field[6:], q.field[6:].replace("_", " "))
    return label(q.field.split(".", 1)[-1], None)


def plainly(text: str) -> str:
    return re.sub(r"[\s,]+", "", str(text).lower())


def human(x: float) -> str:
    """A figure as people say it: 30.0003 is 30, 33.3333 is 33.3 (three significant digits)."""
    return f"{round(x):,}" if abs(x - round(x)) < 0.005 * max(1.0, abs(x)) else f"{x:,.3g}"


def show(v, unit: str | None = None) -> str:
    if unit == "share" and isinstance(v, (int, float)) and not isinstance(v, bool):
        # 8x5 reads back as "24% of the month (174 h)", not 0.238095
        return f"{v:.0%} of the month ({v * HOURS_PER_MONTH:,.0f} h)"
    if isinstance(v, dict) and v.get("tpot_ms"):            # a service level, in the words it was asked in
        return f"{human(1000 / v['tpot_ms'])} tokens/s per user" + (f", first token within {human(v['ttft_ms'] / 1000)} s"
                                                                     if v.get("ttft_ms") else "")
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    if isinstance(v, float):
        # 1e8 training tokens read back as "100 million", not Python's "1e+08"
        from advisor.shell.wording import count
        return count(v) if abs(v) >= 1e6 else f"{v:g}"
    return str(v)
