"""Numbers as people type them: `70b`, `27B`, `4k`, `128K`, `1.5T`, `60M`, `$20`, `20/h`, `5 kW`, `1,000`,
`48h`, `2 days`, `50%`, `8x5`.

One parser for every number a person writes: the dialogue's answers and a workload file's values written
as text (`context_tokens: 8k`, `deadline_hours: 2 days`); `parse_number` reads them, and the field's unit
(`unit_of`, from the schema's Spec) decides what a suffix means:

- `billions` (parameter counts asked in billions): `27B` and `27` are 27, `1.5T` is 1,500, `60M` is 0.06.
- `tokens` (counts): `60M` is 60,000,000, `1.5T` is 1.5 x 10^12, `4k` is 4,000.
- `context` (a context length, where 4K and 128K mean powers of two): `4k` is 4,096, `128K` is 131,072;
  `M` is 1,048,576.
- `usd_per_hour`: `$20`, `20/h`, `$20/hour`, `20 USD/h`, `$2k` (2,000).
- `kw`: `5`, `5kW`, `5000 W`.
- `count`: `64`, `1k` (1,000).
- `share` (of the time, 0-1): `0.5`, `50%`, `50` (a percentage), `12h/day`, `12 hours a day`, `24x7`,
  `24/7`, `8x5` (8 hours a day, 5 days a week).
- `fraction` (a share of something else, 0-1): `0.25`, `25%`.
- `hours` (a duration): `48`, `48h`, `2 days`, `2d`, `90 min`, `1.5 weeks`.
- `usd` (an amount of money): `0.12`, `$0.12`, `$0.12/kWh`, `2k USD`.
"""
from __future__ import annotations

import re

DECIMAL = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
BINARY = {"k": 1024, "m": 1024 ** 2}
_NUMBER = re.compile(r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*(?P<suffix>[a-z]*)$")
WORDS = {"thousand": "k", "million": "m", "billion": "b", "trillion": "t"}


def _q(text) -> str:
    """The text quoted for a one-line message: a line break or control character shown escaped."""
    text = str(text)[:60]
    return f"'{text}'" if text.isprintable() else repr(text)


class UnitError(ValueError):
    """The text is not a number in the question's unit; the message says what was expected."""


def parse_number(text: str, unit: str = "count"):
    """The number `text` stands for, in the question's unit (see the module's docstring); int when whole
    and the unit counts things, float otherwise. Raises UnitError with a short reason."""
    s = str(text).strip().lower().replace(",", "").replace("_", "")
    if unit == "usd_per_hour":
        s = re.sub(r"^(?:us)?\$|^usd\s*", "", s)
        s = re.sub(r"\s*(?:usd)?\s*(?:/|per\s+)(?:h|hr|hour)$|\s*usd$|\s*\$$", "", s)
    elif unit == "share":
        return _share(s, text)
    elif unit == "fraction":
        value = _plain(s[:-1].strip()) / 100 if s.endswith("%") else _plain(s)
        if not 0 <= value <= 1:
            raise UnitError(f"{_q(text)}: a share is from 0 to 1 (or 0 to 100%)")
        return value
    elif unit == "hours":
        return _hours(s, text)
    elif unit == "usd":
        s = re.sub(r"^(?:us)?\$|^usd\s*", "", s)
        s = re.sub(r"\s*(?:usd)?\s*(?:/|per\s+)[a-z-]+$|\s*usd$|\s*\$$", "", s)
    elif unit == "kw":
        m = re.fullmatch(r"(.+?)\s*(kw|w)", s)
        if m:
            value = _plain(m.group(1))
            return value / 1000 if m.group(2) == "w" else value
    for word, short in WORDS.items():
        s = re.sub(rf"\s*{word}s?$", short, s)
    s = re.sub(r"\s*(?:tokens?|tok|params?|parameters?|cards?|gpus?|users?|sequences?)$", "", s)
    m = _NUMBER.match(s.replace(" ", ""))
    if not m and ":" in s:
        # YAML 1.1 read 1:30 as 90 (base 60); this tool reads YAML 1.2, where it is text
        raise UnitError(f"{_q(text)} is not a number (a base-60 or clock figure: write the number itself)")
    if not m:
        raise UnitError(f"{_q(text)} is not a number")
    num, suffix = float(m.group("num")), m.group("suffix")
    if suffix and suffix not in DECIMAL:
        raise UnitError(f"{_q(text)}: unknown unit '{suffix}' (use k, M, B or T)")
    if unit == "billions":
        value = num * DECIMAL[suffix] / 1e9 if suffix else num
    elif unit == "context" and suffix in BINARY:
        value = num * BINARY[suffix]
    else:
        value = num * DECIMAL[suffix] if suffix else num
    if value != value or value in (float("inf"), float("-inf")):
        raise UnitError(f"{_q(text)} is not a finite number")
    if unit in ("count", "tokens", "context") and float(value).is_integer() and abs(value) < 1e18:
        return int(value)
    return value


#: hours in one of each unit a duration may be written in (a month is the memo's 730 h)
HOURS = {"min": 1 / 60, "mins": 1 / 60, "minute": 1 / 60, "minutes": 1 / 60,
         "h": 1, "hr": 1, "hrs": 1, "hour": 1, "hours": 1, "d": 24, "day": 24, "days": 24,
         "w": 168, "wk": 168, "week": 168, "weeks": 168, "month": 730, "months": 730}


def _hours(s: str, text: str) -> float:
    """A duration in hours: a bare number is hours (the schema's unit), `90 min`, `2 days`, `1.5 weeks`."""
    m = re.fullmatch(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([a-z]*)", s)
    if not m:
        raise UnitError(f"{_q(text)} is not a duration (e.g. 48, 48h, 2 days, 90 min)")
    if m.group(2) and m.group(2) not in HOURS:
        raise UnitError(f"{_q(text)}: unknown unit '{m.group(2)}' (use min, h, days or weeks)")
    value = float(m.group(1)) * HOURS.get(m.group(2) or "h")
    if value != value or value in (float("inf"), float("-inf")):
        raise UnitError(f"{_q(text)} is not a finite number")
    return value


#: the schema's unit of a field (Spec.unit) -> how a number written for it as text is read
SPEC_UNITS = {"B": "billions", "tokens": "tokens", "USD/h": "usd_per_hour", "kW": "kw", "h": "hours",
              "USD/kWh": "usd", "USD/kW-month": "usd"}


def unit_of(spec) -> str:
    """How a number written for a field is read: the Spec's own `reads`, else by its unit."""
    return getattr(spec, "reads", "") or SPEC_UNITS.get(spec.unit, "count")


def _share(s: str, text: str) -> float:
    s = s.replace(" ", "")
    week = re.fullmatch(r"(\d+(?:\.\d+)?)[x*](\d+(?:\.\d+)?)", s)           # 24x7, 8x5: hours a day x days a week
    if week or s == "24/7":
        hours, days = (24.0, 7.0) if s == "24/7" else (float(week.group(1)), float(week.group(2)))
        if hours > 24 or days > 7:
            raise UnitError(f"{_q(text)}: at most 24 hours a day, 7 days a week")
        return hours * days / 168
    daily = re.fullmatch(r"(\d+(?:\.\d+)?)(?:h|hrs?|hours?)(?:/|per|a|an)?(?:day|d)", s)
    if daily:
        if float(daily.group(1)) > 24:
            raise UnitError(f"{_q(text)}: at most 24 hours a day")
        return float(daily.group(1)) / 24
    value = _plain(s[:-1]) / 100 if s.endswith("%") else _plain(s)
    value = value / 100 if not s.endswith("%") and 1 < value <= 100 else value
    if not 0 <= value <= 1:
        # a share of the month: "150%" is more hours than the month has, not a figure to pass on
        raise UnitError(f"{_q(text)}: a share of the month is from 0 to 100% (24x7)")
    return value


def _plain(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise UnitError(f"{_q(s)} is not a number") from None
