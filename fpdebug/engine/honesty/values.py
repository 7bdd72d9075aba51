"""The values a text states (numbers, amounts, dates, ids, quoted strings) and the keys that match them.

The honesty layers (docs/honesty.md §12) ask one question many times: does this source hold this value?
This module answers the lexical half of it, deterministically and without a model.

Extraction
    :func:`extract_values` scans a text with a fixed list of matchers in priority order; a matcher
    never takes characters an earlier one claimed, so the values found never overlap and come back
    sorted by position, each with its ``kind``, its ``text`` (exactly ``text[start:end]``) and span.

    1. **quoted** strings: ``"…"``, ``“…”``, ``‘…’``, backticks, and ``'…'`` when the quote
       marks are not apostrophes (no word character outside them). One line, at most 200 characters. A quote
       whose content is exactly one value of another kind (``"ORD-1234"``) is that value.
       Otherwise the quote is opaque: the values inside it are not listed separately.
    2. **uuids** (``id``), compared case-insensitively.
    3. **e-mail addresses** (``id``).
    4. **dates** (``date``): ISO ``2024-05-01`` (also ``/`` and ``.``), ISO date-times
       ``2024-05-01T10:30[:00][Z|±hh:mm]``, written ``May 1, 2024`` / ``1st May 2024`` /
       ``1 of May, 2024``, ``May 2024`` (a month), ``May 1`` / ``1 May`` (a day without a year),
       numeric ``05/01/2024`` (``05/01/24``), ``01.05.2024``, ``05-01-2024``. Month names must be
       capitalised (``may`` is a verb). A numeric date whose first two parts are both ≤ 12 is
       ambiguous (US or day-first) and means either reading. Impossible dates are not dates.
    5. **times** of day (``date``): ``10:30``, ``10:30:15``, ``3pm``, ``3:30 p.m.``; kept as a
       ``date`` because the five kinds are closed and a time is a temporal value.
    6. **ids** (``id``): versions and dotted numbers of three or more parts (``v2``, ``1.2.3``,
       ``192.168.0.1``); ``#`` tokens (``#1234``, ``#A12``); tokens that start with a letter, join
       parts with ``-`` or ``_`` and hold a digit (``ORD-1234``, ``INV_88``, ``gpt-4o``); glued
       letter/digit tokens of four or more characters that start with a letter and hold two
       digits (``SKU12345``), or start with a digit and interleave (``4f3a2b``). Numbers inside an
       id are never numbers of their own.
    7. **amounts** (``amount``): a currency symbol or code before or after a number (``$1,250.00``,
       ``-$5``, ``USD 1250``, ``1.250,00 €``, ``€3k``, ``5 million dollars``). A bare ``$`` is read
       as US dollars; ``CA$``, ``A$``… are their own currencies.
    8. **percentages** (``number``): ``12.5%``, ``12.5 percent``.
    9. **numbers** (``number``): integers and decimals with optional ``,`` thousands groups and a
       sign (``-3``, ``−3``, ``1,250.5``), optionally scaled by ``thousand``/``million``/``billion``.
       A number glued to letters (``5kg``, ``3rd``, ``10x``) or written as a fraction or ratio
       (``1/2``, ``3:2``) is not a value. Only ASCII digits are read.

Keys
    Each value carries ``keys`` (what it means when a text *states* it) and ``holds`` (what a
    source that contains it can vouch for). A stated value is held by a source when its ``keys``
    meet the source's ``holds``. The namespaces:

    - ``n:<decimal>`` a magnitude (``1250``, ``12.5``; trailing zeros and separators dropped);
    - ``b:<decimal>`` a bare magnitude with no currency: a stated amount (``$1,250.00``) is held by
      a bare number (``1250`` in a JSON result) but not by another currency (``€1,250``);
    - ``a:<CUR>:<decimal>`` an amount in a currency;
    - ``d:YYYY-MM-DD``, ``m:YYYY-MM``, ``md:MM-DD``, ``dt:YYYY-MM-DDTHH:MM:SS``, ``t:HH:MM:SS`` —
      a source holding a date also holds its month and its day-of-year, and a date-time also holds
      its date and its time (time zones are not compared);
    - ``i:<id>`` ids, case-insensitive (a version's leading ``v`` dropped; ``#1234`` also holds
      ``n:1234``);
    - ``q:<text>`` quoted strings, held by a source whose text contains them (see
      :func:`text_contains`), not by key.

    So ``$1,250.00``, ``1250``, ``1250.0`` and ``USD 1,250`` match, as do ``2024-05-01``,
    ``May 1st, 2024`` and ``05/01/2024``. A percentage ``p%`` means ``n:p`` or ``n:p/100``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Literal, TypeAlias

__all__ = [
    "FoundValue",
    "ValueKind",
    "extract_values",
    "held_keys",
    "normalize_text",
    "number_holds",
    "number_keys",
    "text_contains",
]

ValueKind: TypeAlias = Literal["number", "amount", "date", "id", "quoted"]
"""The five kinds of value a text can state (``StatedValue.kind``)."""


@dataclass(frozen=True, slots=True)
class FoundValue:
    """One value found in a text.

    Attributes:
        kind: What kind of value it is.
        text: The value as written, exactly ``source[start:end]``.
        start: Offset of its first character.
        end: Offset just past its last character.
        keys: What it means when a text states it.
        holds: What a source containing it vouches for.
    """

    kind: ValueKind
    text: str
    start: int
    end: int
    keys: frozenset[str]
    holds: frozenset[str]


# ----------------------------------------------------------------------------------------------
# Numbers and their keys


def _dec_text(value: Decimal) -> str:
    """The canonical text of a magnitude: no exponent, no trailing zeros, ``0`` never negative."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def number_keys(value: Decimal) -> frozenset[str]:
    """The keys a stated number means: its magnitude.

    Args:
        value: The number.

    Returns:
        ``{"n:<decimal>"}``.
    """
    return frozenset({f"n:{_dec_text(value)}"})


def number_holds(value: Decimal) -> frozenset[str]:
    """The keys a source holding a plain number (no currency) vouches for.

    Args:
        value: The number.

    Returns:
        Its magnitude and its bare magnitude (so it also holds amounts of that size).
    """
    text = _dec_text(value)
    return frozenset({f"n:{text}", f"b:{text}"})


_MULTIPLIERS = {"k": 3, "K": 3, "thousand": 3, "M": 6, "million": 6, "B": 9, "bn": 9, "billion": 9}


def _parse_number(raw: str, *, european: bool = False) -> Decimal | None:
    """Parse ``1,250.50`` (or, when ``european``, ``1.250,50``) into a Decimal."""
    if european:
        raw = raw.replace(".", "").replace(",", ".")
    else:
        raw = raw.replace(",", "")
    try:
        return Decimal(raw)
    except InvalidOperation:
        return None


# ----------------------------------------------------------------------------------------------
# Currencies

_SYMBOLS = {
    "US$": "USD",
    "CA$": "CAD",
    "C$": "CAD",
    "AU$": "AUD",
    "A$": "AUD",
    "NZ$": "NZD",
    "HK$": "HKD",
    "S$": "SGD",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "₩": "KRW",
    "₽": "RUB",
    "₺": "TRY",
    "₪": "ILS",
    "₫": "VND",
    "฿": "THB",
    "₴": "UAH",
    "₦": "NGN",
    "₱": "PHP",
}
_CODES = [
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CNY",
    "RMB",
    "CHF",
    "CAD",
    "AUD",
    "NZD",
    "HKD",
    "SGD",
    "INR",
    "KRW",
    "RUB",
    "TRY",
    "ILS",
    "BRL",
    "MXN",
    "ZAR",
    "SEK",
    "NOK",
    "DKK",
    "PLN",
    "CZK",
    "HUF",
    "THB",
    "PHP",
    "IDR",
    "MYR",
    "VND",
    "UAH",
    "NGN",
    "AED",
    "SAR",
]
_WORDS = {
    "dollar": "USD",
    "dollars": "USD",
    "euro": "EUR",
    "euros": "EUR",
    "yen": "JPY",
    "rupee": "INR",
    "rupees": "INR",
}


def _currency(raw: str) -> str:
    """The ISO code of a currency as written."""
    if raw in _SYMBOLS:
        return _SYMBOLS[raw]
    if raw in _WORDS:
        return _WORDS[raw]
    return "CNY" if raw == "RMB" else raw


def _alternation(words: list[str]) -> str:
    # Longest first, so ``US$`` wins over ``$`` and ``euros`` over ``euro``.
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_SYM = _alternation(list(_SYMBOLS))
_CODE = _alternation(_CODES)
_WORD = _alternation(list(_WORDS))

# ----------------------------------------------------------------------------------------------
# The matchers' patterns

_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# Decimal-comma forms, read only beside a currency: ``1.250,00`` and ``1,5``.
_EU_NUM = r"(?:\d{1,3}(?:\.\d{3})+,\d{1,2}|\d+,\d{1,2})(?![\d,.])"
_MINUS = "-−"
_MULT = r"(?:thousand|million|billion|bn|[kKMB])"
_AFTER = r"(?![\w%]|[.,]\d)"

_QUOTED = re.compile(
    r"\"(?P<a>[^\"\n]{1,200})\""
    r"|“(?P<b>[^”\n]{1,200})”"
    r"|‘(?P<c>[^’\n]{1,200})’"
    r"|`(?P<d>[^`\n]{1,200})`"
    r"|(?<![\w'])'(?P<e>[^'\n]{1,200}?)'(?![\w'])"
)
_UUID = re.compile(
    r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])"
)
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?![\w-])")

_MONTH = (
    r"(?P<mon>(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?))\.?"
)
_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATE_EDGE_BEFORE = r"(?<![\w.\-/:])"
_DATE_EDGE_AFTER = r"(?![\w\-/]|[.:]\d)"

_ISO_DATETIME = re.compile(
    _DATE_EDGE_BEFORE + r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})[T ](?P<hh>[01]\d|2[0-3]):(?P<mi>[0-5]\d)"
    r"(?::(?P<ss>[0-5]\d)(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\w:]|\.\d)"
)
_ISO_DATE = re.compile(
    _DATE_EDGE_BEFORE + r"(?P<y>\d{4})(?P<sep>[-/.])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})" + _DATE_EDGE_AFTER
)
_WRITTEN_MDY = re.compile(r"(?<!\w)" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"(?!\w)")
_WRITTEN_DMY = re.compile(r"(?<!\w)" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"(?!\w)")
_WRITTEN_MY = re.compile(r"(?<!\w)" + _MONTH + r",?\s+" + _YEAR + r"(?!\w)")
_WRITTEN_MD = re.compile(r"(?<!\w)" + _MONTH + r"\s+" + _DAY + r"(?!\w|[.,:/]\d)")
_WRITTEN_DM = re.compile(r"(?<![\w.,])" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?!\w)")
_NUMERIC_DATE = re.compile(
    _DATE_EDGE_BEFORE + r"(?P<a>\d{1,2})(?:(?P<s1>/)(?P<b1>\d{1,2})/(?P<y1>\d{4}|\d{2})"
    r"|(?P<s2>[.\-])(?P<b2>\d{1,2})(?P=s2)(?P<y2>\d{4}))" + _DATE_EDGE_AFTER
)
# ``a.m.`` keeps its dots; ``am`` never takes the sentence's full stop.
_MERIDIEM = r"[AaPp]\.[Mm]\.|[AaPp][Mm]\b"
_TIME_HM = re.compile(
    r"(?<![\w:.])(?P<h>[01]?\d|2[0-3]):(?P<mi>[0-5]\d)(?::(?P<s>[0-5]\d))?"
    r"(?:\s?(?P<ap>" + _MERIDIEM + r"))?(?![\w:]|\.\d)"
)
_TIME_AP = re.compile(r"(?<![\w:.])(?P<h>1[0-2]|0?[1-9])\s?(?P<ap>" + _MERIDIEM + r")(?!\w)")

_VERSION = re.compile(r"(?<![\w.])(?:[vV]\d+(?:\.\d+)*|\d+(?:\.\d+){2,})(?![\w]|\.\d)")
_HASH_ID = re.compile(r"(?<![\w#])#(?P<body>[A-Za-z0-9][A-Za-z0-9_-]*)(?![\w-])")
_SEPARATED_ID = re.compile(r"(?<![\w#-])[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+(?![\w]|[-_][A-Za-z0-9])")
_GLUED_ID = re.compile(r"(?<![\w#-])[A-Za-z0-9]{4,}(?![\w-])")

_AMOUNT_BEFORE = re.compile(
    r"(?<![\w.,])(?P<sign1>["
    + _MINUS
    + r"]\s?)?(?P<cur>"
    + _SYM
    + r"|(?:"
    + _CODE
    + r")(?=\s?["
    + _MINUS
    + r"]?\d))\s?(?P<sign2>["
    + _MINUS
    + r"])?(?:(?P<eu>"
    + _EU_NUM
    + r")|(?P<num>"
    + _NUM
    + r"))"
    r"(?:\s?(?P<mult>" + _MULT + r")(?!\w))?" + _AFTER
)
_AMOUNT_AFTER = re.compile(
    r"(?<![\w.,$€£¥₹])(?P<sign>[" + _MINUS + r"](?=\d))?"
    r"(?:(?P<eu>" + _EU_NUM + r")|(?P<num>" + _NUM + r"))"
    r"(?:\s?(?P<mult>" + _MULT + r"))?\s?(?P<cur>" + _SYM + r"|(?:" + _CODE + "|" + _WORD + r")(?!\w))"
)
_PERCENT = re.compile(
    r"(?<![\w.,])(?P<sign>[" + _MINUS + r"+](?=\d))?(?P<num>" + _NUM + r")\s?(?:%|percent\b|per\s?cent\b)"
)
_NUMBER = re.compile(
    r"(?<![\w.,$€£¥₹#/:])(?P<sign>[" + _MINUS + r"+](?=\d))?(?P<num>" + _NUM + r")"
    r"(?:\s(?P<mult>thousand|million|billion)\b)?(?![\w%]|[.,/:]\d)"
)


# ----------------------------------------------------------------------------------------------
# Builders: one match → a FoundValue, or None when the match is not really that kind


def _date_keys(year: int, month: int, day: int) -> tuple[str, frozenset[str]] | None:
    try:
        when = date(year, month, day)
    except ValueError:
        return None
    iso = when.isoformat()
    return f"d:{iso}", frozenset({f"d:{iso}", f"m:{iso[:7]}", f"md:{iso[5:]}"})


def _month_of(name: str) -> int | None:
    # A capital letter is required: lower-case ``may``/``march`` are words, not months.
    if not name[0].isupper():
        return None
    return _MONTHS[name[:3].lower()]


def _value(kind: ValueKind, m: re.Match[str], keys: frozenset[str], holds: frozenset[str]) -> FoundValue:
    return FoundValue(kind, m.group(0), m.start(), m.end(), keys, keys | holds)


def _build_date(m: re.Match[str], year: int, month: int | None, day: int) -> FoundValue | None:
    if month is None:
        return None
    found = _date_keys(year, month, day)
    if found is None:
        return None
    key, holds = found
    return _value("date", m, frozenset({key}), holds)


def _iso_datetime(m: re.Match[str]) -> FoundValue | None:
    found = _date_keys(int(m["y"]), int(m["m"]), int(m["d"]))
    if found is None:
        return None
    day_key, day_holds = found
    clock = f"{m['hh']}:{m['mi']}:{m['ss'] or '00'}"
    key = f"dt:{day_key[2:]}T{clock}"
    return _value("date", m, frozenset({key}), day_holds | {day_key, f"t:{clock}"})


def _iso_date(m: re.Match[str]) -> FoundValue | None:
    return _build_date(m, int(m["y"]), int(m["m"]), int(m["d"]))


def _written_mdy(m: re.Match[str]) -> FoundValue | None:
    return _build_date(m, int(m["year"]), _month_of(m["mon"]), int(m["day"]))


def _written_my(m: re.Match[str]) -> FoundValue | None:
    month = _month_of(m["mon"])
    if month is None:
        return None
    key = f"m:{int(m['year']):04d}-{month:02d}"
    return _value("date", m, frozenset({key}), frozenset())


def _written_md(m: re.Match[str]) -> FoundValue | None:
    month = _month_of(m["mon"])
    if month is None:
        return None
    # Checked against a leap year so that ``Feb 29`` is a day.
    if _date_keys(2000, month, int(m["day"])) is None:
        return None
    key = f"md:{month:02d}-{int(m['day']):02d}"
    return _value("date", m, frozenset({key}), frozenset())


def _numeric_date(m: re.Match[str]) -> FoundValue | None:
    first = int(m["a"])
    if m["s1"]:
        second, year_text = int(m["b1"]), m["y1"]
    else:
        second, year_text = int(m["b2"]), m["y2"]
    year = int(year_text) + (2000 if len(year_text) == 2 else 0)
    if m["s2"] == ".":
        readings = [(first, second)]  # 01.05.2024 is day-first everywhere it is used
    else:
        readings = [(second, first), (first, second)]  # US month-first, then day-first
    keys: set[str] = set()
    holds: set[str] = set()
    for day, month in readings:
        found = _date_keys(year, month, day)
        if found is not None:
            keys.add(found[0])
            holds |= found[1]
    if not keys:
        return None
    return _value("date", m, frozenset(keys), frozenset(holds))


def _clock(hour: int, minute: int, second: int, meridiem: str | None) -> str | None:
    if meridiem:
        if not 1 <= hour <= 12:
            return None
        pm = meridiem[0] in "pP"
        hour = hour % 12 + (12 if pm else 0)
    return f"t:{hour:02d}:{minute:02d}:{second:02d}"


def _time_hm(m: re.Match[str]) -> FoundValue | None:
    key = _clock(int(m["h"]), int(m["mi"]), int(m["s"] or 0), m["ap"])
    return None if key is None else _value("date", m, frozenset({key}), frozenset())


def _time_ap(m: re.Match[str]) -> FoundValue | None:
    key = _clock(int(m["h"]), 0, 0, m["ap"])
    return None if key is None else _value("date", m, frozenset({key}), frozenset())


def _id_of(m: re.Match[str], key_text: str, *, extra: frozenset[str] = frozenset()) -> FoundValue:
    keys = frozenset({f"i:{key_text.casefold()}"}) | extra
    return _value("id", m, keys, frozenset())


def _uuid(m: re.Match[str]) -> FoundValue | None:
    return _id_of(m, m.group(0))


def _version(m: re.Match[str]) -> FoundValue | None:
    text = m.group(0)
    return _id_of(m, text[1:] if text[0] in "vV" else text)


def _hash_id(m: re.Match[str]) -> FoundValue | None:
    body = m["body"]
    if not any(c.isdigit() for c in body):
        return None  # ``#general`` is a tag, not an id
    extra = number_keys(Decimal(body)) if body.isdigit() else frozenset()
    return _id_of(m, body, extra=extra)


def _separated_id(m: re.Match[str]) -> FoundValue | None:
    text = m.group(0)
    return _id_of(m, text) if any(c.isdigit() for c in text) else None


_INTERLEAVED = re.compile(r"\d+[A-Za-z]+\d")


def _glued_id(m: re.Match[str]) -> FoundValue | None:
    text = m.group(0)
    digits = sum(c.isdigit() for c in text)
    if text[0].isalpha():
        ok = digits >= 2
    else:
        # Digit-led tokens must interleave (``4f3a2b``), so ``100mg`` or ``2024s`` stay words.
        ok = _INTERLEAVED.match(text) is not None and sum(c.isalpha() for c in text) >= 2
    return _id_of(m, text) if ok else None


def _signed(m: re.Match[str], *names: str) -> int:
    return -1 if any(m.group(n) and m.group(n).strip() for n in names) else 1


def _scaled(value: Decimal, mult: str | None) -> Decimal:
    return value.scaleb(_MULTIPLIERS[mult]) if mult else value


def _amount(m: re.Match[str], *signs: str) -> FoundValue | None:
    raw = m["eu"] or m["num"]
    value = _parse_number(raw, european=bool(m["eu"]))
    if value is None:
        return None
    value = _scaled(value, m["mult"]) * _signed(m, *signs)
    magnitude = _dec_text(value)
    cur = _currency(m["cur"])
    keys = frozenset({f"a:{cur}:{magnitude}", f"b:{magnitude}"})
    holds = frozenset({f"a:{cur}:{magnitude}", f"n:{magnitude}"})
    # An amount is held as its currency and magnitude, never as a bare number: ``€5`` must not
    # vouch for ``$5``.
    return FoundValue("amount", m.group(0), m.start(), m.end(), keys, holds)


def _amount_before(m: re.Match[str]) -> FoundValue | None:
    return _amount(m, "sign1", "sign2")


def _amount_after(m: re.Match[str]) -> FoundValue | None:
    return _amount(m, "sign")


def _percent(m: re.Match[str]) -> FoundValue | None:
    value = _parse_number(m["num"])
    if value is None:
        return None
    if m["sign"] and m["sign"] in _MINUS:
        value = -value
    keys = number_keys(value) | number_keys(value.scaleb(-2))
    return _value("number", m, keys, frozenset())


def _number(m: re.Match[str]) -> FoundValue | None:
    value = _parse_number(m["num"])
    if value is None:
        return None
    value = _scaled(value, m["mult"])
    if m["sign"] and m["sign"] in _MINUS:
        value = -value
    return _value("number", m, number_keys(value), number_holds(value))


_Builder: TypeAlias = Callable[[re.Match[str]], FoundValue | None]

# Priority order (the module docstring explains each); quoted strings are handled first, apart.
_MATCHERS: tuple[tuple[re.Pattern[str], _Builder], ...] = (
    (_UUID, _uuid),
    (_EMAIL, lambda m: _id_of(m, m.group(0))),
    (_ISO_DATETIME, _iso_datetime),
    (_ISO_DATE, _iso_date),
    (_WRITTEN_MDY, _written_mdy),
    (_WRITTEN_DMY, _written_mdy),
    (_NUMERIC_DATE, _numeric_date),
    (_WRITTEN_MY, _written_my),
    (_WRITTEN_MD, _written_md),
    (_WRITTEN_DM, _written_md),
    (_TIME_HM, _time_hm),
    (_TIME_AP, _time_ap),
    (_VERSION, _version),
    (_HASH_ID, _hash_id),
    (_SEPARATED_ID, _separated_id),
    (_GLUED_ID, _glued_id),
    (_AMOUNT_BEFORE, _amount_before),
    (_AMOUNT_AFTER, _amount_after),
    (_PERCENT, _percent),
    (_NUMBER, _number),
)


def normalize_text(text: str) -> str:
    """Case-fold and collapse whitespace: the form quoted strings are compared in."""
    return " ".join(text.split()).casefold()


def _overlaps(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    return any(start < t_end and t_start < end for t_start, t_end in taken)


def _scan(text: str, offset: int, taken: list[tuple[int, int]]) -> Iterator[FoundValue]:
    for pattern, build in _MATCHERS:
        for m in pattern.finditer(text):
            start, end = m.start() + offset, m.end() + offset
            if _overlaps(start, end, taken):
                continue
            found = build(m)
            if found is None:
                continue
            taken.append((start, end))
            yield FoundValue(found.kind, found.text, start, end, found.keys, found.holds)


def _quoted(text: str, taken: list[tuple[int, int]]) -> Iterator[FoundValue]:
    for m in _QUOTED.finditer(text):
        group = next(g for g in "abcde" if m.group(g) is not None)
        content = m.group(group)
        stripped = content.strip()
        if not stripped:
            continue
        start = m.start(group) + (len(content) - len(content.lstrip()))
        end = start + len(stripped)
        inner = list(_scan(stripped, start, []))
        if len(inner) == 1 and inner[0].start == start and inner[0].end == end:
            found = inner[0]  # ``"ORD-1234"`` is the id, not a quote
        else:
            key = frozenset({f"q:{normalize_text(stripped)}"})
            found = FoundValue("quoted", stripped, start, end, key, key)
        # The quote marks are claimed too, so no later matcher starts inside a quotation.
        taken.append((m.start(), m.end()))
        yield found


@lru_cache(maxsize=4096)
def _extract(text: str, quotes: bool) -> tuple[FoundValue, ...]:
    taken: list[tuple[int, int]] = []
    found = list(_quoted(text, taken)) if quotes else []
    found.extend(_scan(text, 0, taken))
    return tuple(sorted(found, key=lambda v: v.start))


def extract_values(text: str, *, quotes: bool = True) -> list[FoundValue]:
    """Every value a text states, in order of position, never overlapping.

    Args:
        text: Any text (an answer, a user message, a tool result as the model read it).
        quotes: Read quoted strings as values of their own (answers). Sources pass ``False`` so
            that values inside a quotation are found one by one.

    Returns:
        The values, sorted by ``start``; ``text[v.start:v.end] == v.text`` for each.
    """
    return list(_extract(text, quotes))


@lru_cache(maxsize=4096)
def held_keys(text: str) -> frozenset[str]:
    """Every key a source text vouches for: the union of its values' ``holds``.

    Args:
        text: The source text (quotations are not opaque in a source).

    Returns:
        The keys.
    """
    keys: set[str] = set()
    for value in _extract(text, False):
        keys |= value.holds
    return frozenset(keys)


def _boundary_pattern(needle: str) -> re.Pattern[str] | None:
    words = needle.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(w) for w in words)
    # A value never matches inside a longer token: ``ORD-12`` is not in ``ORD-1234``, ``1234`` is
    # not in ``ORD-1234`` and ``3`` is not in ``3.5``.
    return re.compile(
        r"(?<![A-Za-z0-9_])(?<![A-Za-z0-9][-.])" + body + r"(?![A-Za-z0-9_]|[-.][A-Za-z0-9])",
        re.IGNORECASE,
    )


@lru_cache(maxsize=4096)
def _compiled(needle: str) -> re.Pattern[str] | None:
    return _boundary_pattern(needle)


def text_contains(haystack: str, needle: str) -> re.Match[str] | None:
    """Where ``needle`` appears in ``haystack`` as whole tokens, ignoring case and spacing.

    Args:
        haystack: The source text.
        needle: The text looked for (an argument string, a quoted value).

    Returns:
        The match in ``haystack`` (its span is in the original text), or ``None``.
    """
    pattern = _compiled(needle)
    return None if pattern is None else pattern.search(haystack)
