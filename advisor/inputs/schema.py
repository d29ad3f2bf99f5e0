"""The schema's building blocks: a field's Spec, the check of one value against it, and the figures
of a model with the checks between them. Workload files (advisor.workload, the dialogue) and
Hugging Face configs (advisor.hfconfig) both validate with these, so one value gets one verdict in
the same words wherever it is written.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.inputs.catalog import PRECISIONS, model_invariants  # noqa: F401  (the workload's precisions are the catalog's)
from advisor.base.errors import Collector

MODES = ("inference", "training", "fine-tuning")


@dataclass(frozen=True)
class Spec:
    """One field of the workload schema."""

    kind: str                      # enum | int | float | bool | str | model | gpus
    help: str
    choices: tuple = ()
    min: float | None = None
    max: float | None = None
    default: object = None
    unit: str = ""
    modes: tuple = MODES           # the modes for which the field is relevant
    kinds: tuple = ()              # the kinds of work (advisor.inputs.kinds) it applies to; (): every kind of its modes
    reads: str = ""                # how a number written as text is read (advisor/inputs/units.py); "": by `unit`


MODEL_FIELDS: dict[str, Spec] = {
    "name": Spec("str", "Model name."),
    "params_b": Spec("float", "Total parameters, billions.", min=0.001, max=100_000, unit="B"),
    "active_params_b": Spec("float", "Parameters active per token, billions (MoE); default: all.", min=0.001, max=100_000, unit="B"),
    "expert_params_b": Spec("float", "Parameters inside routed experts, billions.", min=0, max=100_000, unit="B"),
    "experts": Spec("int", "Routed experts per layer.", min=1, max=100_000),
    "experts_per_token": Spec("int", "Experts each token is routed to.", min=1, max=100_000),
    "layers": Spec("int", "Transformer layers.", min=1, max=10_000),
    "hidden_size": Spec("int", "Hidden size.", min=1, max=1_000_000),
    "attention_heads": Spec("int", "Attention heads.", min=1, max=100_000),
    "kv_heads": Spec("int", "Key/value heads (grouped-query attention).", min=1, max=100_000),
    "head_dim": Spec("int", "Dimension per head.", min=1, max=100_000),
    "sliding_window": Spec("int", "Sliding-window size in tokens.", min=1, max=10_000_000),
    "sliding_window_layers": Spec("int", "Layers that use the sliding window.", min=0, max=10_000),
    "mla_kv_dim": Spec("int", "MLA: cached elements per token per layer.", min=1, max=1_000_000),
    "mtp_params_b": Spec("float", "Multi-token-prediction module's parameters, billions (loaded only for speculative decoding).", min=0, max=100_000, unit="B"),
    "mtp_layers": Spec("int", "Decoder layers of the multi-token-prediction module (tokens it predicts ahead).", min=0, max=100),
    "precision": Spec("enum", "Shipped precision of the weights.", PRECISIONS),
    "max_context": Spec("int", "Longest context the model supports.", min=1, max=100_000_000),
}


def applies(spec: Spec, mode: str | None, kind: str | None) -> bool:
    """The field means something for a workload of this mode and kind (kind None: not known yet)."""
    return mode in spec.modes and (not spec.kinds or kind is None or kind in spec.kinds)


def _suggest(key: str, known) -> str:
    import difflib      # only when there is something to suggest
    # two names about as near as each other are both offered ('modle': mode or model), a far second is not
    close = difflib.get_close_matches(str(key), list(known), n=2, cutoff=0.6)
    near = [difflib.SequenceMatcher(None, str(key), c).ratio() for c in close]
    if len(close) == 2 and not (near[1] >= 0.8 and near[0] - near[1] <= 0.1):
        close = close[:1]
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else f"; known: {', '.join(known)}"


def suggest_value(value, choices) -> str:
    import difflib
    close = difflib.get_close_matches(str(value).lower(), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def read_value(spec: Spec, value, col: Collector, name: str, line):
    """check_value for what a person wrote in a workload file: a number written as text (`8k`, `2 days`,
    `50%`, `$20/h`) is read first by the same parser as the dialogue's answers (advisor/inputs/units.py),
    by the field's unit; a config.json's figures keep check_value's strict types."""
    if spec.kind in ("int", "float") and isinstance(value, str):
        from advisor.inputs.units import UnitError, parse_number, unit_of
        try:
            value = parse_number(value, unit_of(spec))
        except UnitError as exc:
            # a word where a number goes reads as it always has; a unit the field does not take says which
            plain = str(exc).endswith(" is not a number")
            col.add(f"must be a number (got {value!r})" if plain else f"must be a number: {exc}", line, name)
            return None
        if spec.kind == "int" and isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
            value = int(value)
    return check_value(spec, value, col, name, line)


def _n(x: float) -> str:
    """1,000,000 rather than 1e+06 in messages; large or fractional values stay readable."""
    try:
        return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e18 else f"{x:,g}"
    except OverflowError:            # an integer of hundreds of digits
        return f"a {len(str(abs(x)))}-digit number"


_CONTROL = frozenset(chr(i) for i in range(32))


def check_value(spec: Spec, value, col: Collector, name: str, line):
    """Validate one scalar against its Spec; returns the value (coerced) or None after reporting."""
    if spec.kind == "enum":
        if value not in spec.choices:
            # a misspelt value gets the same "did you mean" as a misspelt field name (mode: inferance)
            col.add(f"'{value}' is not one of {', '.join(spec.choices)}{suggest_value(value, spec.choices)}", line, name)
            return None
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            col.add(f"must be true or false (got {value!r})", line, name)
            return None
        return value
    if spec.kind == "str":
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            col.add("must be a short text", line, name)
            return None
        if any(c in value for c in _CONTROL) or any(0x7f <= ord(c) < 0xa0 or 0x202a <= ord(c) <= 0x202e
                                                     or 0x2066 <= ord(c) <= 0x2069 for c in value):
            col.add("must be plain text: no control characters (terminal escapes, line breaks, tabs)", line, name)
            return None
        if "<" in value or ">" in value:       # it goes into Markdown and HTML memos and sweep summaries
            col.add("must be plain text: no markup (< or >)", line, name)
            return None
        return value
    if spec.kind in ("int", "float"):
        # YAML 1.1 reads 134e9 (and context_tokens: 32e3) as a string: a float field takes any number
        # written as text, an integer field the exponent form only (a quoted "32" stays refused)
        if isinstance(value, str) and (spec.kind == "float" or "e" in value.lower()):
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            col.add(f"must be a number (got {value!r})", line, name)
            return None
        if value != value or value in (float("inf"), float("-inf")):
            col.add("must be a finite number", line, name)
            return None
        if isinstance(value, int) and abs(value) > 10 ** 18:
            col.add(f"must be at most {_n(spec.max) if spec.max is not None else '10^18'}{' ' + spec.unit if spec.unit else ''} "
                    f"(got {_n(value)})", line, name)
            return None
        if spec.kind == "int" and value != int(value):
            col.add(f"must be a whole number (got {value})", line, name)
            return None
        if spec.min is not None and value < spec.min:
            col.add(f"must be at least {_n(spec.min)}{' ' + spec.unit if spec.unit else ''} (got {_n(value)})", line, name)
            return None
        if spec.max is not None and value > spec.max:
            col.add(f"must be at most {_n(spec.max)}{' ' + spec.unit if spec.unit else ''} (got {_n(value)})", line, name)
            return None
        return int(value) if spec.kind == "int" else float(value)
    raise AssertionError(spec.kind)


def model_problems(v: dict) -> list[tuple[str, str]]:
    """(field, problem) for figures of one model (by MODEL_FIELDS name) that contradict each other: the
    catalog's invariants and the shape of attention and of the window. Shared by the mapping form of
    `model:` and by config.json (advisor.hfconfig), so both refuse the same values with the same words."""
    out = model_invariants(v)

    def whole(k):
        x = v.get(k)
        return x if isinstance(x, int) and not isinstance(x, bool) else None
    heads, kv, hidden = whole("attention_heads"), whole("kv_heads"), whole("hidden_size")
    if heads and kv and kv <= heads and heads % kv:
        out.append(("kv_heads", f"must divide attention_heads ({heads} heads do not share {kv} key/value heads evenly)"))
    if heads and hidden and "head_dim" not in v and hidden % heads:
        # the head size is hidden_size / heads unless given: a remainder (or a hidden size below the head
        # count, head size 0) is no model
        out.append(("attention_heads", f"must divide hidden_size ({hidden} / {heads} is not a whole head size; "
                                       "give head_dim if the heads are sized apart)"))
    window, context = whole("sliding_window"), whole("max_context")
    if window and context and window > context:
        out.append(("sliding_window", f"cannot exceed max_context ({window:,} > {context:,} tokens)"))
    return out


def check_model(raw: dict, col: Collector, line_of=lambda k: None, name=lambda k: f"model.{k}",
                typed: bool = False) -> dict | None:
    """The figures of one model by MODEL_FIELDS name, each type-checked and bounded, then checked
    against each other (model_problems); None once the problems are reported to `col`. The one
    validator of a workload's `model:` mapping (`typed`: numbers as people write them, 70b) and of the
    figures a config.json gives."""
    check = read_value if typed else check_value
    ok = True
    values: dict = {}
    for k, v in raw.items():
        if k not in MODEL_FIELDS:
            col.add(f"unknown model field{_suggest(k, MODEL_FIELDS)}", line_of(k), name(k))
            ok = False
            continue
        if v is None:
            continue
        checked = check(MODEL_FIELDS[k], v, col, name(k), line_of(k))
        if checked is None:
            ok = False
            continue
        values[k] = checked
    if not ok:
        return None
    bad = model_problems(values)
    for k, problem in bad:
        col.add(problem, line_of(k), name(k))
    return None if bad else values
