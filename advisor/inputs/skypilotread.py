"""Reading a SkyPilot price source: its `vms.csv` files (a skypilot-catalog checkout or
`~/.sky/catalogs/v7`) or the compact per-instance snapshot (`<cloud>.csv` and its README), each row
checked and aggregated per instance type into an `Offer`; the commit each file was read at (given,
the snapshot README's, or the checkout's .git read without running git). Bounds and what is skipped:
advisor/inputs/skypilot.py's docstring.
"""
from __future__ import annotations

import codecs
import csv
import io
import os
import re
import stat
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from advisor.base.errors import InputError, Problem
from advisor.base.files import open_input
from advisor.inputs.prices import MAX_NAME, plain_text
from advisor.inputs.skypilotnames import PROVIDERS, TPU

SOURCE_REPO = "skypilot-org/skypilot-catalog"

#: a CSV larger than this is refused before it is read (SkyPilot's largest vms.csv is a few tens of MB)
MAX_CSV_BYTES = 256 * 2**20
#: data rows one CSV may have: reading stops with an error past it, before memory runs out
MAX_ROWS = 200_000
#: characters one field may have (GpuInfo, the longest, is a few hundred)
MAX_FIELD = 1024
#: GPUs in one instance, and USD per instance-hour: what the price file's loader reads (and `:g` writes as a number)
MAX_COUNT = 100_000
MIN_PRICE, MAX_PRICE = 1e-4, 1e5
#: a git file read for the commit (HEAD, a ref, packed-refs) and the snapshot's README
MAX_SMALL_FILE = 4 * 2**20


@dataclass
class Offer:
    """One instance type of one cloud, aggregated over its regions."""

    cloud: str
    instance: str
    accelerator: str
    count: int
    memory_gib: float | None
    prices: list[float] = field(default_factory=list)
    spots: list[float] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    region_count: int | None = None
    price_min: float | None = None
    price_median: float | None = None
    spot_min: float | None = None
    spot_median: float | None = None
    commit: str | None = None
    source: str = ""

    def finish(self) -> None:
        if self.prices:
            self.price_min, self.price_median = min(self.prices), round(statistics.median(self.prices), 4)
        if self.spots:
            self.spot_min, self.spot_median = min(self.spots), round(statistics.median(self.spots), 4)
        if self.regions:
            self.region_count = len(set(self.regions))


@dataclass
class Report:
    """What an import read and left out: rows skipped for a bad value (per column: how many, and the
    first one's file:line), how files were decoded, and every file read (an output must not be one)."""

    skipped: dict[str, list] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    read: list[Path] = field(default_factory=list)

    def skip(self, column: str, where: str) -> None:
        entry = self.skipped.setdefault(plain_text(column)[:MAX_NAME], [0, plain_text(where)])
        entry[0] += 1

    def skipped_text(self) -> str:
        return ", ".join(f"{k} ({n}, first at {where})" for k, (n, where) in sorted(self.skipped.items()))


class _BadValue(Exception):
    """A row's value that no price can be made of: the row is skipped and counted under its column."""

    def __init__(self, column: str):
        self.column = column


def _price(text: str, column: str) -> float | None:
    """USD per hour from a CSV field: None when empty; a text, NaN, infinity, zero, a negative or an
    absurd figure is a bad value."""
    if not text:
        return None
    try:
        v = float(text)
    except ValueError:
        raise _BadValue(column) from None
    if not MIN_PRICE <= v <= MAX_PRICE:          # False for NaN too
        raise _BadValue(column)
    return v


def _whole(text: str, column: str, default: int | None = 1, low: int = 1) -> int | None:
    """A count from a CSV field (SkyPilot writes 8.0): a whole number from `low` to MAX_COUNT."""
    if not text:
        return default
    try:
        v = float(text)
    except ValueError:
        raise _BadValue(column) from None
    if not (low <= v <= MAX_COUNT and v == int(v)):
        raise _BadValue(column)
    return int(v)


def _name(text: str, column: str) -> str:
    text = plain_text(text)
    if len(text) > MAX_NAME:
        raise _BadValue(column)
    return text


def _gpu_memory(info: str) -> float | None:
    """GiB per accelerator from SkyPilot's GpuInfo (a Python-literal dict): SizeInMiB of the first GPU."""
    m = re.search(r"'SizeInMiB':\s*([0-9]{1,9}(?:\.[0-9]{1,9})?)(?![0-9.])", info or "")
    return float(m.group(1)) / 1024 if m else None


class _NotUTF8(Exception):
    pass


def _encodings(path: Path) -> tuple[str, ...]:
    """UTF-8 with or without a BOM, UTF-16 with a BOM; a file that is not UTF-8 is read again as Latin-1
    (every byte is a Latin-1 character: a CSV saved by a Western-European spreadsheet imports, noted)."""
    with open_input(path, MAX_CSV_BYTES, "CSV file") as f:
        head = f.read(4)
    if head.startswith(codecs.BOM_UTF8):
        return ("utf-8-sig",)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return ("utf-16",)
    return ("utf-8", "latin-1")


def _records(path: Path, encoding: str, need: tuple[str, ...], what: str):
    """(line, {column: stripped text}) for each data row of a CSV, read as a stream: a missing column,
    a malformed CSV, a field over the csv module's limit or more than MAX_ROWS rows is one InputError."""
    with open_input(path, MAX_CSV_BYTES, "CSV file") as raw:
        text = io.TextIOWrapper(raw, encoding=encoding, errors="strict", newline="")
        reader = csv.reader(text)
        try:
            header = next(reader, None) or []
            names = [h.strip().lstrip("\ufeff") for h in header]
            missing = [c for c in need if c not in names]
            if missing and "AcceleratorName" in names and path.name != "vms.csv":
                # SkyPilot's own vms.csv under another name: its folder is what names the cloud (review 14)
                raise InputError(Problem("a SkyPilot vms.csv: name it CLOUD/vms.csv (its folder names the cloud, "
                                         "e.g. lambda/vms.csv)", str(path), 1))
            if missing:
                raise InputError(Problem(f"not a {what}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                                         f"(needs {', '.join(need)})", str(path), 1))
            index: dict[str, int] = {}
            for i, n in enumerate(names):
                index.setdefault(n, i)          # a column given twice: the first one counts
            rows = 0
            for row in reader:
                if not row:
                    continue
                rows += 1
                if rows > MAX_ROWS:
                    raise InputError(Problem(f"more than {MAX_ROWS:,} rows: not a price table this tool imports "
                                             "(split it, or import one cloud at a time)", str(path), reader.line_num))
                yield reader.line_num, {n: (row[i].strip() if i < len(row) else "") for n, i in index.items()}
        except UnicodeDecodeError:
            if encoding == "utf-8":
                raise _NotUTF8() from None
            raise InputError(Problem(f"not readable as {encoding} text", str(path), reader.line_num + 1)) from None
        except csv.Error as exc:
            raise InputError(Problem(f"not a readable CSV: {exc}", str(path), reader.line_num)) from None


def _read(path: Path, need: tuple[str, ...], what: str, report: Report, build):
    """build(records) over the CSV's rows, in the first encoding that decodes the whole file."""
    report.read.append(path)
    for enc in _encodings(path):
        try:
            return build(_records(path, enc, need, what))
        except _NotUTF8:
            report.notes.append(f"{path}: not UTF-8, read as Latin-1")
    raise AssertionError("Latin-1 decodes every byte")


def _row(report: Report, path: Path, line: int, parse):
    """parse() of one row, or None when a value is bad (counted in the report)."""
    try:
        return parse()
    except _BadValue as bad:
        report.skip(bad.column, f"{path}:{line}")
        return None


def read_vms_csv(path: Path, cloud: str, commit: str | None, report: Report | None = None) -> list[Offer]:
    """SkyPilot's vms.csv: one row per instance type and region/zone. GCP's accelerator-only rows (no
    InstanceType: the price of the GPUs without the host VM) and host rows without accelerators are
    skipped: neither is the price of a whole GPU machine. A row with a bad value is skipped and counted."""
    report = report if report is not None else Report()
    need = ("AcceleratorName", "AcceleratorCount", "Price")

    def build(records) -> list[Offer]:
        offers: dict[tuple, Offer] = {}
        for line, row in records:
            def parse():
                if any(len(v) > MAX_FIELD for v in row.values()):
                    raise _BadValue(next(k for k, v in row.items() if len(v) > MAX_FIELD))
                acc, inst = _name(row["AcceleratorName"], "AcceleratorName"), _name(row.get("InstanceType", ""), "InstanceType")
                if not acc:
                    return None
                if not inst:
                    if not TPU.match(acc):
                        return None             # GPU-only part of a GCP price: the host VM is extra
                    inst = acc                  # TPU slices are priced whole on an accelerator row
                count = _whole(row["AcceleratorCount"], "AcceleratorCount")
                price, spot = _price(row["Price"], "Price"), _price(row.get("SpotPrice", ""), "SpotPrice")
                return acc, inst, count, price, spot, _name(row.get("Region", ""), "Region")
            got = _row(report, path, line, parse)
            if got is None:
                continue
            acc, inst, count, price, spot, region = got
            key = (inst, acc, count)
            o = offers.get(key)
            if o is None:
                o = offers[key] = Offer(cloud, inst, acc, count, _gpu_memory(row.get("GpuInfo", "")), commit=commit,
                                        source=f"{SOURCE_REPO} catalogs/v7/{cloud}/vms.csv")
            if TPU.match(acc) and (price or 0) >= 700:   # 700.0: GCP's placeholder TPU rows (the snapshot's README)
                continue
            if price is not None:
                o.prices.append(price)
            if spot is not None:
                o.spots.append(spot)
            if region and (price is not None or spot is not None):
                o.regions.append(region)
        for o in offers.values():
            o.finish()
            o.regions = sorted(set(o.regions))
        return list(offers.values())

    return _read(path, need, "SkyPilot vms.csv", report, build)


SNAPSHOT_COLUMNS = ("cloud", "instance_type", "accelerator", "accelerator_count", "price_usd_per_hour_min",
                    "price_usd_per_hour_median")


def read_snapshot_csv(path: Path, commit: str | None, report: Report | None = None) -> list[Offer]:
    """The reference snapshot's <cloud>.csv (already aggregated per instance type). Rows the snapshot
    marks as partial prices ('[host VM only ...]', 'accel:... [GPU only ...]') are skipped, and so is a
    row with a bad value (counted)."""
    report = report if report is not None else Report()

    def build(records) -> list[Offer]:
        out = []
        for line, row in records:
            def parse():
                if any(len(v) > MAX_FIELD for v in row.values()):
                    raise _BadValue(next(k for k, v in row.items() if len(v) > MAX_FIELD))
                inst = _name(row["instance_type"], "instance_type")
                if "host VM only" in inst or "GPU only" in inst:
                    return None
                cloud = _name(row["cloud"], "cloud").lower()
                if not cloud or not inst:
                    raise _BadValue("cloud" if not cloud else "instance_type")
                note = None
                m = re.search(r"\s*\[(.*)\]$", inst)
                if m:
                    note, inst = m.group(1), inst[:m.start()]
                o = Offer(cloud, inst, _name(row["accelerator"], "accelerator"),
                          _whole(row["accelerator_count"], "accelerator_count"),
                          _price(row.get("gpu_memory_gib", ""), "gpu_memory_gib"), commit=commit,
                          source=f"{SOURCE_REPO} catalogs/v7/{cloud}/vms.csv (via the snapshot in {plain_text(path.parent.name)}/)")
                o.price_min = _price(row["price_usd_per_hour_min"], "price_usd_per_hour_min")
                o.price_median = _price(row["price_usd_per_hour_median"], "price_usd_per_hour_median")
                o.spot_min = _price(row.get("spot_usd_per_hour_min", ""), "spot_usd_per_hour_min")
                o.spot_median = _price(row.get("spot_usd_per_hour_median", ""), "spot_usd_per_hour_median")
                o.region_count = _whole(row.get("regions_count", ""), "regions_count", default=None, low=0) or None
                if note:
                    o.source += f"; {note}"
                return o
            o = _row(report, path, line, parse)
            if o is not None:
                out.append(o)
        return out

    return _read(path, SNAPSHOT_COLUMNS, "price snapshot CSV", report, build)


def _small_text(path: Path) -> str | None:
    """A small regular file's text (a README, a git file), or None when it is anything else."""
    try:
        with open_input(path, MAX_SMALL_FILE, "file") as f:
            return f.read(MAX_SMALL_FILE).decode("utf-8", errors="replace")
    except InputError:
        return None


def _readme_facts(folder: Path, report: Report) -> tuple[dict[str, str], str | None]:
    """Commits per cloud and the retrieval date from the snapshot's README table."""
    readme = folder / "README.md"
    if not os.path.lexists(readme):
        return {}, None
    text = _small_text(readme)
    if text is None:
        raise InputError(Problem("is not a regular file of at most 4 MB: not read", str(readme)))
    report.read.append(readme)
    commits = {m.group(1): m.group(2) for m in re.finditer(r"^\|\s*([a-z]+)\s*\|\s*catalogs/v7/\S+\s*\|\s*`([0-9a-f]{40})`", text, re.M)}
    if not commits:                 # a README naming one commit for every file of the folder
        found = set(re.findall(r"`([0-9a-f]{40})`", text))
        if len(found) == 1:
            commits = {"*": found.pop()}
    m = re.search(r"(?:Retrieved|read) (\d{4}-\d{2}-\d{2})", text)
    return commits, (m.group(1) if m else None)


COMMIT = re.compile(r"^[0-9a-f]{40}$")
#: a branch ref as git writes one: refs/..., no '..', no component starting with '.' or ending in '.lock'
REF = re.compile(r"^refs/(?:[A-Za-z0-9_+-][A-Za-z0-9._+-]*/)*[A-Za-z0-9_+-][A-Za-z0-9._+-]*$")


def _git_file(git: Path, name: str) -> str | None:
    """The text of a file inside the .git folder `git`, only if it really is inside it (no link out)
    and a small regular file."""
    path = git / name
    try:
        real, root = os.path.realpath(path), os.path.realpath(git)
    except OSError:
        return None
    if not real.startswith(root + os.sep):
        return None
    return _small_text(Path(real))


def _git_commit(folder: Path) -> str | None:
    """HEAD of a git checkout holding `folder`, read from its .git folder without running git: a
    detached HEAD's commit, or a branch ref under .git (or in packed-refs). Anything else (a .git file
    pointing elsewhere, a ref outside refs/, a value that is not 40 hex digits) leaves it unknown."""
    for d in [folder, *folder.parents]:
        git = d / ".git"
        try:
            st = os.lstat(git)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):       # a worktree's .git file or a link: a path this import did not choose
            return None
        head = (_git_file(git, "HEAD") or "").strip()
        if COMMIT.match(head):
            return head
        ref = head[5:].strip() if head.startswith("ref: ") else ""
        if not REF.match(ref) or any(p.endswith(".lock") for p in ref.split("/")):
            return None
        sha = (_git_file(git, ref) or "").strip()
        if COMMIT.match(sha):
            return sha
        for line in (_git_file(git, "packed-refs") or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref and COMMIT.match(parts[0]):
                return parts[0]
        return None
    return None


def collect(path: Path, skip: tuple[str, ...] = (), commit: str | None = None,
            report: Report | None = None) -> tuple[list[Offer], str | None]:
    """Every offer under PATH: a vms.csv, a folder of cloud folders holding vms.csv, or the snapshot folder.
    Returns the offers and the retrieval date the source states (None: not stated)."""
    report = report if report is not None else Report()
    path = Path(path).expanduser()
    try:
        st = os.stat(path)
    except OSError:
        raise InputError(Problem("no such file or folder", str(path))) from None
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise InputError(Problem("is not a regular file or a folder (a FIFO, device or socket is not read)", str(path)))
    offers: list[Offer] = []
    if (path / "catalogs" / "v7").is_dir():      # a skypilot-catalog checkout's root
        path = path / "catalogs" / "v7"
    if path.is_dir():
        files = sorted(path.glob("*/vms.csv")) or sorted(path.glob("*.csv"))
        if not files:
            raise InputError(Problem("holds no <cloud>/vms.csv (a skypilot-catalog catalogs/v7 folder or ~/.sky/catalogs/v7) "
                                     "and no snapshot <cloud>.csv", str(path)))
    else:
        files = [path]
    commits, date = _readme_facts(path if path.is_dir() else path.parent, report)
    for f in files:
        if f.name == "vms.csv":
            cloud = plain_text(f.parent.name)
            if cloud in skip:
                continue
            # a commit is SkyPilot's only from a skypilot-catalog checkout (catalogs/v7/CLOUD/vms.csv), not from
            # whatever repository holds the file (review 14: gpu-advisor's own HEAD was recorded)
            checkout = f.parent.parent.name == "v7" and f.parent.parent.parent.name == "catalogs"
            read = read_vms_csv(f, cloud, commit or commits.get(cloud) or commits.get("*")
                                or (_git_commit(f.parent) if checkout else None), report)
            if cloud not in PROVIDERS:
                # the folder names the cloud, and the offer's provider comes from it (review 14: a vms.csv in
                # Downloads/ became the provider "Downloads" in the memo)
                raise InputError(Problem(f"a vms.csv's folder names its cloud ({', '.join(sorted(PROVIDERS))}): "
                                         f"'{cloud[:40]}' is none of them; put the file in CLOUD/vms.csv", str(f)))
            offers += read
        else:
            cloud = f.stem
            if cloud in skip:
                continue
            offers += read_snapshot_csv(f, commit or commits.get(cloud), report)
    return offers, date
