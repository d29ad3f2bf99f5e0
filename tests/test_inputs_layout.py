"""advisor/inputs split by job (issue 19): modules and functions of bounded size, price rows from any
PriceSource through one loader, and a compiled-catalog cache key that covers the code deciding it."""
import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.base.errors import InputError
from advisor.inputs import catalog as catalog_mod, skypilot
from advisor.inputs.prices import PriceFile, PriceText

INPUTS = Path(catalog_mod.__file__).parent
FIX = Path(__file__).resolve().parent / "fixtures" / "skypilot"


def test_no_module_over_600_lines_no_function_over_120():
    sizes = {p.name: p.read_text().count("\n") for p in INPUTS.glob("*.py")}
    assert {n: s for n, s in sizes.items() if s > 600} == {}
    long = [(p.name, f.name, f.end_lineno - f.lineno + 1) for p in INPUTS.glob("*.py")
            for f in ast.walk(ast.parse(p.read_text())) if isinstance(f, ast.FunctionDef) and f.end_lineno - f.lineno >= 120]
    assert long == []


def test_the_catalog_cache_key_covers_every_inputs_module_the_catalog_reads_with():
    """A compiled catalog holds what these modules' code made of the files: each one of advisor.inputs
    that catalog.py imports, directly or through another, is in its key."""
    def imports(module):
        tree = ast.parse((INPUTS / f"{module}.py").read_text())
        return {n.module.split(".")[-1] for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("advisor.inputs.")} | \
               {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "advisor.inputs"
                for a in n.names}
    seen, todo = set(), ["catalog"]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += imports(m)
    assert seen == {"catalog", "prices", "figures", "names", "apiprices", "engines", "capacity", "skypilotnames",
                    "sitefiles", "modelchecks", "parallel", "fabric"}
    assert {f"inputs.{m}" for m in seen} <= set(catalog_mod.CODE)
    assert {"base.yamlio", "base.text"} <= set(catalog_mod.CODE)      # the parser, and the cleaning of every text


@dataclass(frozen=True)
class _Quotes:
    """A source that is not a file (as a provider's API would be): rows typed in, checked by the same loader."""

    name: str
    text: str

    def rows(self, gpus):
        return PriceText(self.text, self.name).rows(gpus)

    def fingerprint(self) -> bytes:
        return self.text.encode()


ROW = ("prices:\n  - {gpu: h100-sxm, gpus_per_instance: 8, usd_per_hour: 9.0, provider: Lambda, instance: gpu_8x_h100_sxm5,"
       " kind: on-demand, date: 2026-12-01, source: 'our contract'}\n")


def test_any_price_source_replaces_the_same_offer_and_changes_the_digest(catalog):
    cat = catalog.with_prices(_Quotes("the contract feed", ROW))
    lam = [p for p in cat.prices_for("h100-sxm") if p.provider == "Lambda" and p.instance == "gpu_8x_h100_sxm5"]
    assert [(p.usd_per_hour, p.source, p.file, p.line) for p in lam] == [(9.0, "our contract", "the contract feed", 2)]
    assert len(cat.prices) == len(catalog.prices)          # replaced, not added
    assert cat.digest != catalog.digest and cat.digest == catalog.with_prices(_Quotes("another name", ROW)).digest


def test_a_file_and_its_text_give_the_same_rows_and_digest(tmp_path, catalog):
    f = tmp_path / "q.yaml"
    f.write_text(ROW)
    by_path, by_file, by_text = catalog.with_prices(f), catalog.with_prices(PriceFile(f)), catalog.with_prices(PriceText(ROW, str(f)))
    assert by_path.digest == by_file.digest == by_text.digest
    assert by_path.prices == by_file.prices == by_text.prices


def test_a_bad_row_from_any_source_names_the_source_line_and_field(catalog):
    with pytest.raises(InputError) as exc:
        catalog.with_prices(_Quotes("the contract feed", ROW.replace("usd_per_hour: 9.0", "usd_per_hour: -1")))
    assert str(exc.value.problems[0]) == "the contract feed:2: usd_per_hour: must be a positive number (got -1)"


def test_the_skypilot_import_loads_as_its_own_price_text(catalog):
    imp = skypilot.import_prices(FIX / "lambda" / "vms.csv", date="2026-12-01", commit="abc123", catalog=catalog)
    rows = PriceText(imp.text, "imported").rows(catalog.gpus)
    assert len(rows) == len(imp.rows) > 0
    assert {(p.provider, p.date, p.commit) for p in rows} == {("Lambda", "2026-12-01", "abc123")}
