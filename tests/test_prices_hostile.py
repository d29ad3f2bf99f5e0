"""`prices import` and price files against hostile input (issue 18): the commit read from .git without
leaving it, FIFOs refused, encodings, missing columns, bad values skipped and counted, bounds, the
output checked by its own loader and never written onto an input; price files with NaN or control
characters; providers matched by whole name; an unknown precision in a catalog copy."""
import hashlib
import os
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest

from advisor.base.errors import InputError

from advisor.inputs import catalog as catalog_mod
from advisor.inputs import skypilot, skypilotread
from advisor.inputs.prices import load_prices
from advisor.shell.cli import main

FIX = Path(__file__).resolve().parent / "fixtures" / "skypilot"
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LAMBDA = (FIX / "lambda" / "vms.csv").read_text()
SHA = "0123456789abcdef0123456789abcdef01234567"


@contextmanager
def deadline(seconds=20):
    """Fail instead of hanging (a FIFO opened for reading waits for a writer forever)."""
    def hang(signum, frame):
        raise AssertionError(f"no answer in {seconds} s")
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refuse(capsys, argv, *expected):
    with deadline():
        code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-advisor: error: "), err
    for e in expected:
        assert e in err, err
    return err


def imported(capsys, tmp_path, *argv):
    """Rows of the price file `prices import ARGV --out FILE` writes, loaded as `--prices FILE` loads it, and stderr."""
    out = tmp_path / "out.yaml"
    with deadline():
        assert main(["prices", "import", *map(str, argv), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    return load_prices(out, catalog_mod.default()), err


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def checkout(tmp_path, head: str, **files) -> Path:
    """A skypilot-catalog checkout, catalogs/v7/lambda/vms.csv under a .git folder with this HEAD and these
    files (a commit is read from such a checkout only: review 14)."""
    root = tmp_path / "checkout"
    (root / "catalogs" / "v7" / "lambda").mkdir(parents=True)
    (root / "catalogs" / "v7" / "lambda" / "vms.csv").write_text(LAMBDA)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text(head)
    for name, text in files.items():
        f = root / ".git" / name.replace("__", "/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return root


# --- the commit ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("head, files, commit", [
    (SHA + "\n", {}, SHA),                                                   # a detached HEAD
    ("ref: refs/heads/main\n", {"refs__heads__main": SHA + "\n"}, SHA),      # a loose ref
    ("ref: refs/heads/main\n", {"packed-refs": f"# pack-refs\n{'f' * 40} refs/heads/xmain\n{SHA} refs/heads/main\n"}, SHA),
    ("ref: /etc/hostname\n", {}, None),                                      # an absolute path: not followed
    ("ref: refs/../../catalogs/v7/lambda/vms.csv\n", {}, None),              # out of .git with '..'
    ("ref: refs/heads/main\n", {"refs__heads__main": "not a commit\n"}, None),
    ("ref: refs/heads/main\n", {"packed-refs": f"{'f' * 40} refs/heads/xmain\n"}, None),   # no suffix match
    ("ref: refs/heads/main\n", {}, None),
])
def test_the_commit_is_read_inside_git_only(capsys, tmp_path, head, files, commit):
    rows, _ = imported(capsys, tmp_path, checkout(tmp_path, head, **files))
    assert rows and {p.commit for p in rows} == {commit}


def test_a_ref_linked_out_of_git_is_not_followed(capsys, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(SHA + "\n")
    root = checkout(tmp_path, "ref: refs/heads/main\n")
    (root / ".git" / "refs").mkdir()
    (root / ".git" / "refs" / "heads").symlink_to(tmp_path)          # refs/heads/main -> ../secret's folder
    (tmp_path / "main").symlink_to(secret)
    rows, _ = imported(capsys, tmp_path, root)
    assert {p.commit for p in rows} == {None}


def test_a_fifo_as_head_leaves_the_commit_unknown(capsys, tmp_path):
    root = checkout(tmp_path, "")
    os.unlink(root / ".git" / "HEAD")
    os.mkfifo(root / ".git" / "HEAD")
    rows, _ = imported(capsys, tmp_path, root)
    assert {p.commit for p in rows} == {None}


@pytest.mark.parametrize("commit", ["zz", "abc; rm -rf /", "\x1b]0;x\x07", "a" * 41])
def test_a_given_commit_must_be_hex(capsys, tmp_path, commit):
    refuse(capsys, ["prices", "import", str(FIX / "lambda" / "vms.csv"), "--commit", commit], "--commit: must be a git commit")


# --- what is read ----------------------------------------------------------------------------------------

def test_a_fifo_as_csv_is_refused_unopened(capsys, tmp_path):
    d = tmp_path / "lambda"
    d.mkdir()
    os.mkfifo(d / "vms.csv")
    refuse(capsys, ["prices", "import", str(d / "vms.csv")], "vms.csv: is not a regular file or a folder")
    refuse(capsys, ["prices", "import", str(tmp_path)], "vms.csv: is a named pipe (FIFO), not a CSV file")


def test_a_fifo_as_catalog_file_or_price_file_is_refused(capsys, tmp_path, monkeypatch):
    fifo = tmp_path / "q.yaml"
    os.mkfifo(fifo)
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--prices", str(fifo)], "q.yaml: is a named pipe (FIFO), not a YAML file")
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    os.unlink(d / "prices-skypilot.yaml")
    os.mkfifo(d / "prices-skypilot.yaml")
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(d))
    catalog_mod._CACHE.clear()
    try:
        refuse(capsys, ["prices", "list"], "prices-skypilot.yaml: is a named pipe (FIFO), not a catalog file")
    finally:
        catalog_mod._CACHE.clear()


@pytest.mark.parametrize("encode", [
    lambda t: t.encode("utf-8"),
    lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"),                # a BOM imported 0 rows, exit 0
    lambda t: t.encode("utf-16"),                                  # with its BOM
    lambda t: t.replace("us-east-1", "us-\xe9ast-1").encode("latin-1"),
])
def test_encodings_import_the_same_rows(capsys, tmp_path, encode):
    f = tmp_path / "lambda" / "vms.csv"
    f.parent.mkdir()
    f.write_bytes(encode(LAMBDA))
    rows, err = imported(capsys, tmp_path, f)
    a100 = [p for p in rows if p.instance == "gpu_8x_a100"]
    assert [(p.usd_per_hour, p.gpus_per_instance, len(p.regions)) for p in a100] == [(10.32, 8, 3)]
    if "\xe9" in LAMBDA or b"\xe9" in encode(LAMBDA):
        assert "us-\xe9ast-1" in a100[0].regions and "not UTF-8, read as Latin-1" in err


def test_missing_columns_are_named(capsys, tmp_path):
    f = tmp_path / "vms.csv"
    f.write_text(LAMBDA.replace("AcceleratorCount", "Count", 1).replace(",Price,", ",Cost,", 1))
    refuse(capsys, ["prices", "import", str(f)], f"{f}:1: not a SkyPilot vms.csv: missing columns AcceleratorCount, Price")
    snap = tmp_path / "aws.csv"
    snap.write_text("cloud,instance_type,accelerator\naws,p5.48xlarge,H100\n")
    refuse(capsys, ["prices", "import", str(snap)], "not a price snapshot CSV: missing columns accelerator_count")


def test_rows_with_bad_values_are_skipped_and_counted(capsys, tmp_path):
    good = "gpu_8x_a100,A100,8.0,124.0,1800.0,10.32,us-east-1,\"{'SizeInMiB': 40960}\",\n"
    bad = [good.replace("8.0,124", f"{c},124") for c in ("abc", "inf", "nan", "2.5", "-1")]
    bad += [good.replace("10.32", p) for p in ("-3", "nan", "inf", "0", "1e300")]
    bad += [good.replace("us-east-1", "r" * 300)]
    f = tmp_path / "lambda" / "vms.csv"
    f.parent.mkdir()
    f.write_text(LAMBDA + "".join(bad))
    rows, err = imported(capsys, tmp_path, f)
    first = len(LAMBDA.splitlines()) + 1
    assert (f"rows skipped for a bad value (no row written): AcceleratorCount (5, first at {f}:{first}), "
            f"Price (5, first at {f}:{first + 5}), Region (1, first at {f}:{first + 10})") in err
    a100 = [p for p in rows if p.instance == "gpu_8x_a100"]
    assert [(p.usd_per_hour, p.usd_per_hour_median, p.gpus_per_instance) for p in a100] == [(10.32, 10.32, 8)]
    assert "Rows skipped for a bad value: AcceleratorCount (5" in (tmp_path / "out.yaml").read_text()


def test_a_huge_csv_is_refused_before_it_is_read(capsys, tmp_path):
    f = tmp_path / "vms.csv"
    with open(f, "wb") as fh:           # 2.6 GB, sparse: nothing to read, everything to refuse
        fh.write(LAMBDA.encode())
        fh.truncate(2_600_000_000)
    refuse(capsys, ["prices", "import", str(f)], "vms.csv: larger than 256 MB: not a CSV file this tool reads")


def test_too_many_rows_stop_the_stream(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(skypilotread, "MAX_ROWS", 1000)
    f = tmp_path / "vms.csv"
    f.write_text(LAMBDA.splitlines()[0] + "\n" + "gpu_1x_a10,A10,1,30,200,0.75,us-east-1,,\n" * 1001)
    refuse(capsys, ["prices", "import", str(f)], f"{f}:1002: more than 1,000 rows")


def test_a_field_over_the_csv_limit_is_one_line(capsys, tmp_path):
    f = tmp_path / "vms.csv"
    f.write_text(LAMBDA + 'gpu_1x_a10,A10,1,30,200,0.75,"' + "x" * 200_000 + '",,\n')
    refuse(capsys, ["prices", "import", str(f)], "not a readable CSV: field larger than field limit")


def test_names_with_control_characters_are_imported_plain(capsys, tmp_path):
    f = tmp_path / "lambda" / "vms.csv"
    f.parent.mkdir()
    f.write_text(LAMBDA.replace("gpu_8x_a100,", "gpu_8x_\x1b]0;pwned\x07a100,"))
    rows, _ = imported(capsys, tmp_path, f)
    assert "gpu_8x_a100" in {p.instance for p in rows}            # the whole sequence, not just ESC and BEL
    assert not any(not p.instance.isprintable() for p in rows)


# --- what is written -------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["csv", "catalog/prices.yaml", "catalog/efficiency.yaml", "catalog/prices-skypilot.yaml"])
def test_out_onto_an_input_is_refused_and_the_file_unchanged(capsys, tmp_path, target):
    f = tmp_path / "lambda" / "vms.csv"
    f.parent.mkdir()
    f.write_text(LAMBDA)
    out = f if target == "csv" else ROOT / target
    before = digest(out)
    refuse(capsys, ["prices", "import", str(f), "--out", str(out)],
           f"{out}: is an input of this command" if target == "csv" else f"{out}: is inside the shipped catalog/ folder")
    assert digest(out) == before


def test_a_file_its_loader_refuses_is_never_written(capsys, tmp_path, monkeypatch):
    out = tmp_path / "p.yaml"
    monkeypatch.setattr(skypilot, "_yaml_scalar", lambda v: "NaN-ish ]" if isinstance(v, float) else repr(v))
    refuse(capsys, ["prices", "import", str(FIX / "lambda" / "vms.csv"), "--out", str(out)],
           "the import made a price file its own loader refuses, so nothing was written")
    assert not out.exists() and os.listdir(tmp_path) == []


def test_rows_for_a_gpu_the_catalog_lacks_are_unmapped(tmp_path):
    cat = catalog_mod.default()
    lacking = catalog_mod.Catalog({k: v for k, v in cat.gpus.items() if k != "a100-40gb-sxm"}, cat.models, [], cat.efficiency,
                                  cat.sources, cat.knowledge, "x")
    imp = skypilot.import_prices(FIX / "lambda" / "vms.csv", catalog=lacking)
    assert imp.rows == [] and imp.unmapped == {"A100": 1, "A6000": 1, "V100": 1}


# --- price files -----------------------------------------------------------------------------------------

ROW = "{gpu: h100, gpus_per_instance: 8, usd_per_hour: 20, provider: X, date: 2026-12, source: s"


@pytest.mark.parametrize("extra, message", [
    (", usd_per_hour_median: .nan}", ":2: usd_per_hour_median: must be a finite number (got nan)"),
    (", usd_per_hour_median: .inf}", ":2: usd_per_hour_median: must be a finite number (got inf)"),
    (", region_count: .inf}", ":2: region_count: must be a finite number (got inf)"),
    (", instance: " + "i" * 201 + "}", ":2: instance: must be at most 200 characters (got 201)"),
    (", note: [a, b]}", ":2: note: must be a text"),
])
def test_price_file_values_refused_with_file_line_and_field(capsys, tmp_path, extra, message):
    f = tmp_path / "q.yaml"
    f.write_text(f"prices:\n  - {ROW}{extra}\n")
    refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--prices", str(f)], f"{f}{message}")


def test_price_file_texts_lose_their_control_characters(tmp_path, catalog):
    f = tmp_path / "q.yaml"
    f.write_text('prices:\n  - {gpu: h100, gpus_per_instance: 8, usd_per_hour: 20, provider: "Evil\\e]0;owned\\a\\nCloud",'
                 ' instance: "a\\u202eb", date: 2026-12, source: "line\\nbreak", regions: ["us\\tx"]}\n')
    p, = load_prices(f, catalog)
    assert (p.provider, p.instance, p.source, p.regions) == ("Evil Cloud", "ab", "line break", ("us x",))   # the whole escape sequence goes


# --- providers ---------------------------------------------------------------------------------------------

def test_providers_match_whole_names_not_prefixes(tmp_path, estimate_file):
    f = tmp_path / "q.yaml"
    f.write_text("prices:\n  - {gpu: h200-sxm, gpus_per_instance: 8, usd_per_hour: 1.0, provider: AWSOME Cheap Cloud, date: 2026-12,"
                 " source: s}\n")
    from advisor.numbers import estimate as estimator
    from advisor.inputs import workload
    cat = catalog_mod.default().with_prices(f)

    def offer(providers):
        w = workload.parse({"mode": "inference", "model": "llama-3.1-70b", "concurrency": 8,
                            "constraints": {"gpus": ["h200-sxm"], "providers": providers}}, cat, "t")
        c = estimator.estimate(w, cat).candidate("h200-sxm")
        return c.price["provider"] if c.price else c.price_unknown
    assert offer(["AWS"]) == "AWS" and offer(["aws"]) == "AWS"
    assert offer(["awsome cheap cloud"]) == "AWSOME Cheap Cloud"
    # a name no price row answers to is refused where it is written, naming the known providers
    with pytest.raises(InputError) as exc:
        offer(["AWSOME"])
    assert str(exc.value.problems[0]).startswith("t: constraints.providers: no price row names provider 'AWSOME'; known: AWS, AWSOME Cheap Cloud")
    assert offer(["TensorWave"]).startswith("no usable quote")     # a provider with no H200 quote


def test_ten_thousand_providers_are_one_line(capsys, tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text((EXAMPLES / "chat-assistant.yaml").read_text()
                 + "constraints:\n  providers: [" + ", ".join(f"p{i}" for i in range(10_000)) + "]\n")
    refuse(capsys, ["recommend", str(w)], "constraints.providers: must be at most 100 names (got 10,000)")


# --- a catalog copy ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("file, old, new, message", [
    ("models.yaml", "experts: mxfp4, rest: bf16", "experts: fp3, rest: bf16", "gpt-oss-120b.precision: must map all, experts, rest"),
    ("models.yaml", 'precision: {v: "bf16"', 'precision: {v: "fp3"', "llama-3.1-8b.precision: 'fp3' is not one of fp32"),
    ("gpus.yaml", "native_precisions: {v: [fp32, fp16, int8]", "native_precisions: {v: [fp32, fp3, int8]",
     "t4.native_precisions: must be a list of precisions"),
])
def test_an_unknown_precision_in_a_catalog_copy_is_one_line(capsys, tmp_path, monkeypatch, file, old, new, message):
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    text = (d / file).read_text()
    assert old in text
    (d / file).write_text(text.replace(old, new, 1))
    line = text[:text.index(old)].count("\n") + 1
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(d))
    catalog_mod._CACHE.clear()
    try:
        refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml")], f"{d / file}:{line}: {message}")
    finally:
        catalog_mod._CACHE.clear()
