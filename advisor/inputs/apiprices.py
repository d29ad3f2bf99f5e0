"""Per-token API prices for the catalog's open models, from LiteLLM's public price table.

LiteLLM (BerriAI/litellm) keeps `model_prices_and_context_window.json`: one entry per provider model id
with `litellm_provider`, `mode` and USD per token for input (`input_cost_per_token`), cached input
(`cache_read_input_token_cost`) and output (`output_cost_per_token`). The importer keeps the chat and
completion entries with a positive input and output price, maps each provider model id to a catalog
model (`map_model`: a normaliser checked against the catalog's own ids and aliases) and lists the ids of
a catalog model family it could not map (a fine-tune, another checkpoint), never guessing.

`gpu-advisor prices import-api FILE --out OUT.yaml --source TEXT --date DATE` writes the file the
catalog loads as `catalog/api-prices.yaml` (load_api_prices, below); docs/api-prices.md
says how the shipped one was built.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from dataclasses import dataclass

from advisor.base import yamlio
from advisor.base.errors import Collector, InputError, Problem
from advisor.base.files import read_input
from advisor.base.text import clean
from advisor.inputs.figures import is_number
from advisor.inputs.names import RELEASE_WORDS, name_index, resolve

#: the price table is ~3.5 MB (2026); anything past this is not that file
MAX_BYTES = 64 * 2**20
MODES = ("chat", "completion")
#: characters of a provider or model id written (LiteLLM's longest are ~120)
MAX_NAME = 300

#: the row fields of api-prices.yaml, in the order written
ORDER = ("model", "provider", "provider_model", "usd_per_million_input", "usd_per_million_cached_input",
         "usd_per_million_output", "usd_per_million_input_batch", "usd_per_million_output_batch", "date", "source")
#: the provider's batch price (OpenAI's Batch API, Bedrock batch inference, Vertex AI batch prediction: jobs
#: returned within 24 h), LiteLLM's `input_cost_per_token_batches` and `output_cost_per_token_batches`;
#: absent where the table lists none (never derived from a discount it does not state)
BATCH_FIELDS = ("usd_per_million_input_batch", "usd_per_million_output_batch")

#: region and vendor prefixes of cloud model ids (Bedrock's 'us.meta.llama3-1-70b-instruct-v1:0',
#: OCI's 'meta.llama-3.1-70b-instruct'): where the model is served or who published it, not which it is
_PREFIXES = re.compile(r"^(?:(?:us|eu|apac|jp|au|ca|global|us-gov)\.)?(?:meta|openai|mistral|qwen|deepseek|google|"
                       r"moonshotai|microsoft|tii)\.|^(?:meta|databricks|databricks-meta)-(?=llama)")
#: trailing words that name how a provider serves a model (instruction-tuned release: names.RELEASE_WORDS,
#: quantised fast tier, a cloud's own label), not another model: one price per token either way
SERVING_WORDS = RELEASE_WORDS | {"turbo", "versatile", "maas", "fp8", "fast", "dynamic", "instant", "reference"}


def canonical(name: str) -> str:
    """A provider's model id or a catalog name reduced to one spelling: the last path segment, lower
    case, prefixes and serving words dropped, version spellings unified ('llama-v3p1', 'llama3-1',
    'Llama-3_1' -> 'llama-3.1')."""
    s = str(name).strip().lower().rsplit("/", 1)[-1]
    s = _PREFIXES.sub("", s)
    s = re.sub(r"[\s_]+", "-", s)
    s = re.sub(r"-v?\d+:\d+$", "", s)                      # Bedrock's model version: -v1:0
    s = re.sub(r"^(llama-?\d)-(\d)(?=-\d)", r"\1.\2", s)     # llama3-1-70b
    s = re.sub(r"v(\d+)p(\d+)", r"\1.\2", s)                 # fireworks: llama-v3p1-70b
    s = re.sub(r"(?<=\d)_(?=\d)", ".", s)
    s = re.sub(r"^llama-?(\d)", r"llama-\1", s)               # llama3.1 -> llama-3.1
    words = s.split("-")
    words = [w for i, w in enumerate(words) if i == 0 or w not in SERVING_WORDS]
    return "-".join(words)


def model_index(catalog) -> dict[str, str]:
    """canonical name -> catalog model id, from every model's id, name and aliases (its Hugging Face repo)."""
    index: dict[str, str] = {}
    for m in catalog.models.values():
        for n in (m.id, m.name, *m.aliases):
            index.setdefault(canonical(n), m.id)
    return index


def families(catalog) -> tuple[str, ...]:
    """The leading words of the catalog's model ids ('llama', 'gpt-oss', 'qwen'): an unmapped provider id
    that starts with one is reported, since it may be a catalog model under a spelling not yet known."""
    out = set()
    for mid in catalog.models:
        words = []
        for w in mid.split("-"):
            if re.search(r"\d", w):
                head = re.match(r"[a-z]+", w)
                if head and not words:
                    words.append(head.group(0))
                break
            words.append(w)
        if words:
            out.add("-".join(words))
    return tuple(sorted(out))


def map_model(provider_model: str, index: dict[str, str]) -> str | None:
    """The catalog model id a provider model id names, or None."""
    return index.get(canonical(provider_model))


def _per_million(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0:
        return None
    return round(v * 1e6, 6)


def _bad_price(e: dict) -> str | None:
    """Why a mapped entry's prices are no prices the catalog's loader reads (infinite, or 10^18 and more
    per million tokens: `figures.is_number`), or None."""
    for k in ("input_cost_per_token", "cache_read_input_token_cost", "output_cost_per_token"):
        v = e.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v > 0 and not is_number(v * 1e6):
            return f"{k} {v:g}" if isinstance(v, float) else f"{k} a {len(str(v))}-digit number"
    return None


def rows_from(table: dict, catalog, date: str, source: str, skipped: list[str] | None = None) -> tuple[list[dict], list[str]]:
    """The api-prices rows of a parsed LiteLLM table and the unmapped ids of catalog model families.
    A catalog model's entry whose price is no number the loader reads (infinite, absurdly large) is
    left out and named in `skipped` (issue 42: it was written as `inf`, a file the loader refuses);
    names are written as plain text (control characters dropped, as `prices import` does)."""
    index, fams = model_index(catalog), families(catalog)
    rows, unmapped = [], []
    for key, e in table.items():
        if not isinstance(e, dict) or e.get("mode") not in MODES:
            continue
        key = clean(str(key), MAX_NAME)
        inp, out = _per_million(e.get("input_cost_per_token")), _per_million(e.get("output_cost_per_token"))
        if not inp or not out:
            continue      # no price, or 0: a local runtime or a free tier, not an offer to compare with
        mid = map_model(key, index)
        if mid is None:
            c = canonical(key)
            if any(re.search(rf"(?:^|[-.]){re.escape(f)}", c) for f in fams):
                unmapped.append(key)
            continue
        bad = _bad_price(e)
        if bad or not key:
            if skipped is not None:
                skipped.append(f"{key or '(no id)'} ({bad or 'no id'})")
            continue
        cached = _per_million(e.get("cache_read_input_token_cost"))
        provider = clean(str(e.get("litellm_provider") or ""), MAX_NAME) or key.split("/", 1)[0]
        b_in, b_out = _per_million(e.get("input_cost_per_token_batches")), _per_million(e.get("output_cost_per_token_batches"))
        batch = bool(b_in and b_out and is_number(b_in) and is_number(b_out))    # both, or no batch price
        rows.append({"model": mid, "provider": provider,
                     "provider_model": key, "usd_per_million_input": inp,
                     "usd_per_million_cached_input": cached if cached else None,
                     "usd_per_million_output": out,
                     "usd_per_million_input_batch": b_in if batch else None,
                     "usd_per_million_output_batch": b_out if batch else None, "date": date, "source": source})
    rows.sort(key=lambda r: (r["model"], r["usd_per_million_output"], r["provider"], r["provider_model"]))
    return rows, sorted(unmapped)


def _scalar(v) -> str:
    if isinstance(v, float):
        text = f"{v:g}"
        # YAML 1.1 (PyYAML) reads '1e-06' as text: a float in exponent form needs its '.0'
        return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    return json.dumps(v, ensure_ascii=False)


def to_yaml(rows: list[dict], unmapped: list[str], header: str) -> str:
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] + ["api_prices:" + ("" if rows else " []")]
    for r in rows:
        lines.append("  - {" + ", ".join(f"{k}: {_scalar(r[k])}" for k in ORDER if r.get(k) is not None) + "}")
    # kept in the file (the catalog does not read it) so a reviewer sees what the mapping left out
    lines.append("unmapped:" + ("" if unmapped else " []"))
    lines += [f"  - {_scalar(u)}" for u in unmapped]
    return "\n".join(lines) + "\n"


def _parse_int(text: str):
    # before int(): 5,000 digits exceed Python's own limit (a ValueError); no price has 20 digits
    return int(text) if len(text.lstrip("-")) <= 19 else math.inf


def read_table(path: str | Path) -> dict:
    """The parsed LiteLLM table: a JSON object; every failure (not UTF-8, not JSON, nested 100,000 deep,
    a 5,000-digit number) an InputError naming the file."""
    raw = read_input(path, MAX_BYTES, "LiteLLM price table (JSON)")
    try:
        table = json.loads(raw.decode("utf-8"), parse_int=_parse_int)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(Problem(f"not a JSON price table: {getattr(exc, 'msg', exc)}", str(path), line)) from None
    except RecursionError:
        raise InputError(Problem("not a LiteLLM price table: nested too deep to read", str(path))) from None
    except ValueError as exc:
        raise InputError(Problem(f"not a JSON price table: {str(exc)[:120]}", str(path))) from None
    if not isinstance(table, dict):
        raise InputError(Problem("not a LiteLLM price table (expected a JSON object of model ids)", str(path), 1))
    return table


def _loads_back(text: str, catalog) -> None:
    """Refuse (nothing written) a file the catalog's own loader would refuse: the text is read back by
    load_api_prices itself, from a private temporary folder, so every check the loader makes applies."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-api-") as folder:
        check = Path(folder) / API_PRICE_FILE
        check.write_text(text, encoding="utf-8")
        try:
            load_api_prices(check, catalog.models)
        except InputError as exc:
            first = str(exc.problems[0]).replace(str(check), "the imported file")
            raise InputError(Problem(f"the import made an API price file its own loader refuses, so nothing was written: {first}")) from None


def import_api_prices(path: str | Path, catalog, date: str, source: str,
                      skipped: list[str] | None = None) -> tuple[str, list[dict], list[str]]:
    """The api-prices file text for a LiteLLM price table, its rows and the unmapped ids (the entries
    left out for a price that is no number go to `skipped`). The text is one the loader reads."""
    date, source = clean(date, 40), clean(source, MAX_NAME)
    rows, unmapped = rows_from(read_table(path), catalog, date, source, skipped)
    header = (f"Per-token API prices for catalog models, imported by\n"
              f"`gpu-advisor prices import-api {clean(Path(path).name, MAX_NAME)} --date {date}` (do not edit by hand: re-run it; docs/api-prices.md).\n"
              f"Source: {source}. USD per million tokens: input, cached input (absent: the provider lists none), output; "
              f"input and output of the provider's batch API (absent: none listed).\n"
              f"{len(rows)} rows for {len({r['model'] for r in rows})} catalog models; ids of catalog model families not mapped "
              f"(listed under unmapped): {len(unmapped)}"
              + (f"; entries left out for a price that is no number: {len(skipped)}" if skipped else ""))
    text = to_yaml(rows, unmapped, header)
    _loads_back(text, catalog)
    return text, rows, unmapped


# --- the catalog's API price rows (catalog/api-prices.yaml), as the catalog loads them ---------------

API_PRICE_FILE = "api-prices.yaml"
API_PRICE_FIELDS = ("model", "provider", "provider_model", "usd_per_million_input", "usd_per_million_cached_input",
                    "usd_per_million_output", "usd_per_million_input_batch", "usd_per_million_output_batch", "date", "source")
_OPTIONAL = ("usd_per_million_cached_input",) + BATCH_FIELDS


@dataclass(frozen=True)
class ApiPrice:
    """One API offer for a catalog model: USD per million tokens (cached input: None when not listed)."""

    model: str
    provider: str
    provider_model: str
    usd_per_million_input: float
    usd_per_million_cached_input: float | None
    usd_per_million_output: float
    date: str
    source: str
    file: str
    line: int
    # the provider's batch API price (BATCH_FIELDS); None: it lists none
    usd_per_million_input_batch: float | None = None
    usd_per_million_output_batch: float | None = None


def load_api_prices(path: Path, models: dict) -> list[ApiPrice]:
    """api-prices.yaml (written by `prices import-api`): one row per provider model id, every price a
    number >= 0 per million tokens, each row dated and sourced; problems reported with file:line."""
    col = Collector(str(path))
    data = yamlio.load(path)
    items = data.get("api_prices") if isinstance(data, dict) else None
    if not isinstance(items, list):
        col.add("expected a mapping with an 'api_prices' list", getattr(data, "line", 1), "api_prices")
        col.raise_if_any()
    index = name_index(models.values())
    out: list[ApiPrice] = []
    for i, e in enumerate(items):
        line = yamlio.line_of(items, i)
        if not isinstance(e, dict):
            col.add("each API price must be a mapping", line)
            continue
        bad = [k for k in API_PRICE_FIELDS if k not in _OPTIONAL and e.get(k) in (None, "")]
        for k in bad:
            col.add("required field is missing", line, k)
        for k in set(e) - set(API_PRICE_FIELDS):
            col.add(f"unknown field (known: {', '.join(API_PRICE_FIELDS)})", yamlio.line_of(e, k, line), k)
        if (e.get(BATCH_FIELDS[0]) is None) != (e.get(BATCH_FIELDS[1]) is None):
            col.add("a batch price gives both usd_per_million_input_batch and usd_per_million_output_batch", line,
                    BATCH_FIELDS[0] if e.get(BATCH_FIELDS[0]) is None else BATCH_FIELDS[1])
            bad.append("batch")
        for k in ("usd_per_million_input", "usd_per_million_cached_input", "usd_per_million_output") + BATCH_FIELDS:
            v = e.get(k)
            if v is not None and (not is_number(v) or v < 0):
                col.add(f"must be a number >= 0 (got {v!r})", yamlio.line_of(e, k, line), k)
                bad.append(k)
        if bad:
            continue
        try:
            mid = resolve(e["model"], index, "model", "model", str(path), yamlio.line_of(e, "model", line))
        except InputError as exc:
            col.problems.extend(exc.problems)
            continue
        cached = e.get("usd_per_million_cached_input")
        out.append(ApiPrice(mid, str(e["provider"]), str(e["provider_model"]), float(e["usd_per_million_input"]),
                            float(cached) if cached is not None else None, float(e["usd_per_million_output"]),
                            str(e["date"]), str(e["source"]), str(path), line,
                            *(float(e[k]) if e.get(k) is not None else None for k in BATCH_FIELDS)))
    col.raise_if_any()
    return out
