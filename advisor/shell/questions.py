"""The dialogue's questions (rules/questions.yaml): each asks one workload field, checked by that
field's Spec in the workload schema (advisor/inputs/workload.py), with its help, glossary terms,
synonyms and the ways its number may be typed (advisor/inputs/units.py, which workload files read too); and how a typed answer is
read (`read_answer`) or refused with what is accepted (`accepted`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from advisor import HOME
from advisor.base import yamlio
from advisor.base.errors import Collector, InputError
from advisor.inputs.catalog import Catalog
from advisor.inputs.units import unit_of
from advisor.inputs.workload import CONSTRAINTS, FIELDS, MODEL_FIELDS, Spec, check_value

QUESTIONS_FILE = HOME / "rules" / "questions.yaml"
#: what every question accepts besides an answer (offered by completion, handled by the dialogue)
COMMANDS = ("?", "why", "back", "quit")
YES = {"y", "yes", "true", "1", "on"}
NO = {"n", "no", "false", "0", "off"}


@dataclass(frozen=True)
class Question:
    """One question of the dialogue (rules/questions.yaml)."""

    id: str
    field: str
    prompt: str
    help: str
    spec: Spec
    default: object = None
    optional: bool = False
    when: dict = field(default_factory=dict)
    kind: str = ""
    unit: str = "count"            # how a number may be typed (advisor/units.py)
    synonyms: dict = field(default_factory=dict)   # normalised typed text -> accepted answer
    terms: tuple = ()              # glossary lines shown by `?`
    said: tuple = ()               # (synonym as written in the questions file, its answer), for the help
    unset: str = ""                # what Enter leaves to the advisor ("the planner's choice"), shown as the default
    presets: dict = field(default_factory=dict)    # service level: name -> {ttft_ms, tpot_ms} (empty: the default)


#: the service level is asked apart from `latency: interactive | batch` and written into it as
#: {ttft_ms, tpot_ms} (dialogue.workload_data): people answer in tokens/s and seconds, not ms per token
SERVICE_LEVEL = "service_level"
SERVICE_LEVEL_SPEC = Spec("service_level", "How fast each user's answer streams and starts: tokens/s per user and "
                          "seconds to the first token.", ("standard", "fast"), default="standard",
                          modes=("inference",))


def spec_of(field_name: str) -> Spec:
    """The schema's Spec of a question's field (`constraints.X` and `model.X` name nested ones)."""
    if field_name == SERVICE_LEVEL:
        return SERVICE_LEVEL_SPEC
    if field_name.startswith("constraints."):
        return CONSTRAINTS[field_name.split(".", 1)[1]]
    if field_name.startswith("model."):
        return MODEL_FIELDS[field_name.split(".", 1)[1]]
    return FIELDS[field_name]



def norm(text: str) -> str:
    """What people type, compared without case, spaces, hyphens or underscores ('Fine tune' = 'finetune')."""
    return re.sub(r"[\s_-]+", "", str(text).lower())


def glossary(path: Path = QUESTIONS_FILE) -> dict:
    """The one-line explanations of terms (KV cache, tensor parallelism, ...) in the questions file."""
    return dict((yamlio.load(path) or {}).get("terms") or {})


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    """The questions in the order asked; a malformed file is an InputError naming file:line."""
    data = yamlio.load(path)
    col = Collector(str(path))
    out, seen = [], set()
    terms = (data or {}).get("terms") or {}
    for i, q in enumerate((data or {}).get("questions") or []):
        line = yamlio.line_of(data["questions"], i)
        try:
            spec = spec_of(q["field"])
        except (KeyError, TypeError):
            col.add(f"question needs an id and a workload field (got {q!r})", line)
            continue
        if q["id"] in seen:
            col.add(f"duplicate question id '{q['id']}'", line)
        seen.add(q["id"])
        unknown = [t for t in q.get("terms") or [] if t not in terms]
        if unknown:
            col.add(f"question '{q['id']}' names unknown terms: {', '.join(unknown)}", line)
        out.append(Question(q["id"], q["field"], q["prompt"], q.get("help", ""), spec,
                            q.get("default", spec.default), bool(q.get("optional")), dict(q.get("when") or {}),
                            q.get("type", spec.kind), q.get("unit") or unit_of(spec),
                            {norm(k): v for k, v in (q.get("synonyms") or {}).items()},
                            tuple(terms[t] for t in q.get("terms") or [] if t in terms),
                            tuple((str(k), str(v)) for k, v in (q.get("synonyms") or {}).items()),
                            str(q.get("unset") or ""),
                            {str(k): dict(v or {}) for k, v in (q.get("presets") or {}).items()}))
    col.raise_if_any()
    return out


#: how each kind of number may be typed, for the "Accepted:" line
UNIT_FORMS = {"billions": "27, 27B, 1.5T or 600M", "tokens": "e.g. 2000, 2k, 60M, 1.5T", "context": "e.g. 8192, 8k, 128K",
              "count": "e.g. 64 or 1k", "usd_per_hour": "e.g. 20, $20 or 20/h", "kw": "e.g. 5, 5kW or 5000 W",
              "share": "e.g. 0.5, 50%, 12h/day or 8x5", "fraction": "e.g. 0.25 or 25%",
              "hours": "e.g. 48, 48h, 2 days or 90 min", "usd": "e.g. 0.12 or $0.12"}


def read_answer(q: Question, text: str, catalog: Catalog, default=None):
    """(value, None) for an accepted answer, (None, reason) for a refused one; Enter takes `default`."""
    if q.kind == SERVICE_LEVEL and text == "" and isinstance(default, str):
        text = default              # a preset's name: read like a typed one (a previous answer is its value)
    if text == "":
        if default is not None:
            return default, None
        if q.optional:
            return None, None
        return None, f"An answer is needed. {accepted(q)}"
    if q.kind == "model":
        if text.lower() == "other":
            return "other", None
        try:
            return catalog.model_release(text)[0].id, None     # a release name (Llama-3.1-8B-Instruct) too
        except InputError as exc:
            from advisor.inputs import diffusionmodels
            if diffusionmodels.knows(text):        # an image or video model (catalog/diffusion-models.yaml)
                return diffusionmodels.resolve_id(text), None
            return None, exc.problems[0].message.replace("unknown model", "Unknown model") + " (or 'other')"
    if q.spec.kind == "resolution":
        from advisor.inputs.kindfields import read_resolution
        col = Collector()
        got = read_resolution(text, col, None)
        if got is None:
            return None, f"{col.problems[0].message[0].upper()}{col.problems[0].message[1:]}. {accepted(q)}"
        return f"{got[0]}x{got[1]}", None
    if norm(text) in q.synonyms:
        text = str(q.synonyms[norm(text)])
    if q.kind == SERVICE_LEVEL:
        return service_level(q, text)
    if q.kind == "volume":
        return volume(q, text)
    if q.kind == "bool":
        if text.lower() in YES:
            return True, None
        if text.lower() in NO:
            return False, None
        return None, f"Please answer yes or no. {accepted(q)}"
    if q.kind == "enum":
        matches = [c for c in q.spec.choices if c.startswith(text.lower())]
        if text.lower() in q.spec.choices:
            return text.lower(), None
        if len(matches) == 1:
            return matches[0], None
        # a misspelt choice gets the "did you mean" a workload file's value gets (schema.suggest_value)
        from advisor.inputs.schema import suggest_value
        hint = suggest_value(text, q.spec.choices).replace("; did you mean", " Did you mean")
        return None, f"'{text}' is not one of the choices.{hint} {accepted(q)}"
    value = text
    if q.kind in ("int", "float"):
        from advisor.inputs.units import UnitError, parse_number
        try:
            value = parse_number(text, q.unit)
        except UnitError as exc:
            return None, f"{str(exc)[0].upper()}{str(exc)[1:]}. {accepted(q)}"
        if q.kind == "int" and isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
            value = int(value)
    col = Collector()
    checked = check_value(q.spec, value, col, q.field, None)
    if col.problems:
        return None, f"{col.problems[0].message[0].upper()}{col.problems[0].message[1:]}. {accepted(q)}"
    return checked, None


_SPEED = re.compile(r"^\s*(?P<tps>\d+(?:\.\d+)?)\s*(?:tok(?:en)?s?\s*/\s*s(?:ec)?|tps|t/s)?\s*(?:per\s+user)?"
                    r"(?:\s*(?:,|and|;)?\s*(?P<first>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|sec|seconds?)?(?:\s+to\s+(?:the\s+)?first\s+token)?)?\s*$",
                    re.I)


def service_level(q: Question, text: str):
    """A preset by name ('standard': the catalog's default, no value; 'fast'), or tokens/s per user and
    optionally the seconds to the first token ('20 tokens/s, 1 s', '20, 1', '20 tps 800 ms'), as the
    workload's {tpot_ms, ttft_ms}."""
    name = norm(text)
    for preset, value in q.presets.items():
        if norm(preset) == name or norm(preset).startswith(name) and len(name) >= 2:
            return ({k: float(v) for k, v in value.items() if k in ("ttft_ms", "tpot_ms")} or None), None
    m = _SPEED.match(text)
    if not m:
        return None, f"'{text}' is not a preset or a speed. {accepted(q)}"
    tps = float(m["tps"])
    first = None if m["first"] is None else float(m["first"]) * (1 if (m["unit"] or "s").lower() == "ms" else 1000)
    if tps <= 0 or (first is not None and first <= 0):
        return None, f"The speed and the time to the first token must be above zero. {accepted(q)}"
    return {"tpot_ms": round(1000 / tps, 3), **({"ttft_ms": first} if first is not None else {})}, None


_VOLUME = re.compile(r"^\s*(?P<n>.+?)\s*(?P<what>tokens?|requests?|reqs?|prompts?)?\s*$", re.I)


def volume(q: Question, text: str):
    """A batch job's volume: a count of tokens (the default) or requests ('1B tokens', '1e9', '300k
    requests'), as the workload's {tokens: N} or {requests: N}."""
    from advisor.inputs.units import UnitError, parse_number
    m = _VOLUME.match(text)
    if not m:
        return None, f"'{text}' is not a number of tokens or requests. {accepted(q)}"
    key = "requests" if (m["what"] or "").lower().startswith(("req", "prompt")) else "tokens"
    try:
        n = parse_number(m["n"].strip(), "tokens")
    except UnitError as exc:
        return None, f"{str(exc)[0].upper()}{str(exc)[1:]}. {accepted(q)}"
    if not 1 <= n <= 1e16:
        return None, f"The volume must be from 1 to 10^16 {key}. {accepted(q)}"
    return {key: int(n) if float(n).is_integer() else n}, None


def accepted(q: Question) -> str:
    """What the question accepts, said for the help and for a refused answer."""
    s = q.spec
    if q.kind == "volume":
        return "Accepted: a number of tokens or requests (e.g. 1B tokens, 1e9, 300k requests), or Enter to skip."
    if q.kind == SERVICE_LEVEL:
        return (f"Accepted: {', '.join(q.presets)}, or tokens/s per user and seconds to the first token "
                "(e.g. '20 tokens/s, 1 s' or '20, 1').")
    if q.kind == "model":
        return "Accepted: a catalog model id (Tab completes) or 'other'."
    if q.kind == "bool":
        return "Accepted: yes or no."
    if q.kind == "enum":
        firsts = {}
        for text, target in q.said:             # one synonym per choice, as the file writes it
            firsts.setdefault(target, text)
        also = list(firsts.values())[:5]
        return f"Accepted: {', '.join(s.choices)}" + (f" (also {', '.join(also)} and more)." if also else ".")
    if q.kind in ("int", "float"):
        unit = {"B": " billion"}.get(s.unit, f" {s.unit}" if s.unit else "")
        rng = f"a {'whole ' if q.kind == 'int' else ''}number from {_n(s.min)} to {_n(s.max)}{unit}"
        forms = UNIT_FORMS.get(q.unit, "")
        return f"Accepted: {rng}" + (f" ({forms})" if forms else "") + (", or Enter to skip." if q.optional else ".")
    return "Accepted: a short text."


def _n(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,g}"
