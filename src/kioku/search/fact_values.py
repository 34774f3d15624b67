"""The values a text states, each in one canonical form: identifiers, versions, dates, times,
amounts and numbers (read by ``facts.py``, Sleep's guard against merging two facts).

Two wordings of one value compare equal and two values never do: ＩＮＶ−１００１ and INV-1001
are ``INV1001``; ２０２６年３月 and March 2026 are ``2026-03``; 3月3日, March 3rd and the 3rd of
March are ``--03-03`` (ISO 8601's form for a date without its year); ¥30,000, 30,000円 and
3万円 are ``30000 JPY``; 3pm, 15:00 and 午後3時 are ``15:00``; v2.3.0 and version 2.3 are
``2.3``. The text is NFKC-normalised first (full-width digits, letters and signs), every dash
and minus sign becomes ``-``, kanji numerals before a counter become digits (三月三日 = 3月3日,
三万円 = 30000円) and the eras 令和, 平成 and 昭和 become western years.

The rules run in order and each masks what it read, so a later rule never reads a value
twice: the 3 of "March 3" is a date, not also a number, and the 1001 of INV-1001 is part of
an identifier. What no rule reads is not a value. Boundaries are ASCII ones (a Japanese
character touching a digit is a boundary: Python's ``\\b`` would not see one in 1001は).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

IDENTIFIER, VERSION, DATE, TIME, AMOUNT, NUMBER = (
    "identifier", "version", "date", "time", "amount", "number",
)  # fmt: skip
VALUE_KINDS = (IDENTIFIER, VERSION, DATE, TIME, AMOUNT, NUMBER)

_DASHES = {ord(c): "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"}
_LONG_MARK_DASH = re.compile(r"(?<=[A-Za-z0-9])ー(?=[A-Za-z0-9])")

_KANJI_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_KANJI_SMALL = {"十": 10, "百": 100, "千": 1000}
_KANJI_BIG = {"万": 10**4, "億": 10**8}
# A kanji numeral is read only before a counter or unit: 三月, 五人, 三万円 (not 一緒, 千葉).
# 時 followed by 的/期/点/代/停 is 一時的 (temporary), not one o'clock.
_KANJI_NUMBER = re.compile(
    r"(?<![〇一二三四五六七八九十百千万億])"
    r"([〇一二三四五六七八九十百千][〇一二三四五六七八九十百千万億]*)"
    r"(?=[年月日分秒人名個件回台枚本冊匹歳才つヶか箇カケ円週度割%]|時(?![的期点代停]))"
)
_ERAS = {"令和": 2018, "平成": 1988, "昭和": 1925}
_ERA_YEAR = re.compile(r"(令和|平成|昭和)\s*(元|\d{1,2})\s*年")

B0 = r"(?<![A-Za-z0-9])"
B1 = r"(?![A-Za-z0-9])"
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_MULT = r"(?:\s?(?i:thousand|million|billion)(?![A-Za-z])|(?:k|bn)(?![A-Za-z])|[万億千百]+)"
_MULTIPLIERS = {"thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "billion": 10**9}
_MULTIPLIERS |= {"bn": 10**9, "百": 100, "千": 1000, "万": 10**4, "億": 10**8}
_MULTIPLIER_PARTS = re.compile(r"thousand|million|billion|bn|k|m|[万億千百]")
_CURRENCIES = {
    "$": "USD", "us$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "ドル": "USD",
    "buck": "USD", "bucks": "USD", "¥": "JPY", "jpy": "JPY", "yen": "JPY", "円": "JPY",
    "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR", "ユーロ": "EUR",
    "£": "GBP", "gbp": "GBP", "ポンド": "GBP",
}  # fmt: skip
# Units that change what a number means (5 GB is not 5 MB; 3 days are not 3 weeks). Counters
# that only count (人, 台, replicas) are left out: the value alone is the fact.
_UNITS = {
    "%": "%", "percent": "%", "per cent": "%", "パーセント": "%",
    "kb": "KB", "mb": "MB", "gb": "GB", "tb": "TB", "kg": "kg", "km": "km", "cm": "cm",
    "mm": "mm", "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "sec": "s", "secs": "s", "second": "s", "seconds": "s", "秒": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min", "分": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "時間": "h",
    "day": "day", "days": "day", "日間": "day", "week": "week", "weeks": "week", "週間": "week",
    "month": "month", "months": "month", "ヶ月": "month", "か月": "month", "カ月": "month",
    "ケ月": "month", "箇月": "month", "year": "year", "years": "year", "年間": "year",
}  # fmt: skip
_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = (
    r"(?P<month>(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
    r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?))\.?"
)
_FULL_MONTH = (
    r"(?P<month>January|February|March|April|May|June|July|August|September|October|"
    r"November|December)"
)
_ORDINAL_SUFFIX = r"(?i:st|nd|rd|th)?"
_WEEKDAYS = {
    "mon": "Monday", "tues": "Tuesday", "wednes": "Wednesday", "thurs": "Thursday",
    "fri": "Friday", "satur": "Saturday", "sun": "Sunday", "月": "Monday", "火": "Tuesday",
    "水": "Wednesday", "木": "Thursday", "金": "Friday", "土": "Saturday", "日": "Sunday",
}  # fmt: skip
_RELATIVE = {
    "today": "today", "tonight": "today", "this morning": "today", "今日": "today",
    "本日": "today", "今朝": "today", "今夜": "today", "yesterday": "yesterday",
    "昨日": "yesterday", "昨夜": "yesterday", "tomorrow": "tomorrow", "明日": "tomorrow",
    "一昨日": "two days ago", "明後日": "in two days",
    "last week": "last week", "先週": "last week", "this week": "this week",
    "今週": "this week", "next week": "next week", "来週": "next week",
    "last month": "last month", "先月": "last month", "this month": "this month",
    "今月": "this month", "next month": "next month", "来月": "next month",
    "last year": "last year", "昨年": "last year", "去年": "last year",
    "this year": "this year", "今年": "this year", "next year": "next year", "来年": "next year",
}  # fmt: skip
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_ORDINAL_WORDS = {
    "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10, "eleventh": 11, "twelfth": 12,
}  # fmt: skip
# "one" and "first" alone are pronouns and adverbs as often as numbers ("the one I liked",
# "at first"); "second" is also a unit of time. Leaving them out costs nothing: "one invoice"
# against "two invoices" still differs by the 2.
_SCALE_WORDS = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
_NUMBER_WORD = "|".join(sorted([*_NUMBER_WORDS, *_SCALE_WORDS], key=len, reverse=True))


def normalise(text: str) -> str:
    """NFKC, one dash, kanji numerals before counters as digits, era years as western ones."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    text = _LONG_MARK_DASH.sub("-", text)
    text = _KANJI_NUMBER.sub(lambda m: str(kanji_number(m.group(1))), text)
    return _ERA_YEAR.sub(_era_year, text)


def kanji_number(numeral: str) -> int:
    """二〇二六 → 2026, 三十一 → 31, 十五万 → 150000, 千 → 1000."""
    if all(c in _KANJI_DIGITS for c in numeral):
        return int("".join(str(_KANJI_DIGITS[c]) for c in numeral))
    total = section = current = 0
    for c in numeral:
        if c in _KANJI_DIGITS:
            current = current * 10 + _KANJI_DIGITS[c]
        elif c in _KANJI_SMALL:
            section += (current or 1) * _KANJI_SMALL[c]
            current = 0
        else:
            total += (section + current or 1) * _KANJI_BIG[c]
            section = current = 0
    return total + section + current


def _era_year(match: re.Match[str]) -> str:
    year = 1 if match.group(2) == "元" else int(match.group(2))
    return f"{_ERAS[match.group(1)] + year}年"


def decimal_text(number: str, multiplier: str | None = None) -> str | None:
    """``"1,200"`` → ``"1200"``; ``"1.5", "万"`` → ``"15000"``; ``None`` if not a number."""
    try:
        value = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return None
    for part in _MULTIPLIER_PARTS.findall((multiplier or "").lower()):
        value *= _MULTIPLIERS[part]
    return format(value.normalize(), "f")


Canon = Callable[[re.Match[str], str], str | None]
"""The canonical value of a match (given the whole text), or ``None``: not a value here."""


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    canon: Canon


def at_sentence_start(text: str, index: int) -> bool:
    """Whether ``text[index]`` opens a sentence (capitals there say nothing of a name).
    Looks back a bounded stretch, so a long text costs no more per word than a short one."""
    before = text[max(0, index - 80) : index].rstrip(" \t\"'“‘([「『【")
    return not before or before[-1] in ".!?。！？\n:;"


def _date(year: str | None, month: int, day: str | None) -> str | None:
    """ISO 8601: ``2026-03-03``, ``2026-03``, and without a year ``--03-03``, ``--03``."""
    if not 1 <= month <= 12 or (day is not None and not 1 <= int(day) <= 31):
        return None
    head = f"{year or '-'}-{month:02d}"
    return head if day is None else f"{head}-{int(day):02d}"


def _month(name: str) -> int:
    return _MONTHS[name[:3].lower()]


def _date_of(m: re.Match[str], _: str) -> str | None:
    return _date(m["y"], int(m["mo"]), m.groupdict().get("d"))


def _en_date(m: re.Match[str], _: str) -> str | None:
    return _date(m["y"], _month(m["month"]), m.groupdict().get("d"))


def _day_alone(m: re.Match[str], _: str) -> str | None:
    return f"---{int(m['d']):02d}" if 1 <= int(m["d"]) <= 31 else None


def _month_alone(m: re.Match[str], text: str) -> str | None:
    if m["month"] == "May" and at_sentence_start(text, m.start()):
        return None  # "May I ..."
    return f"--{_month(m['month']):02d}"


def _slashed(m: re.Match[str], _: str) -> str | None:
    return m.group(0)  # 3/4/2026: March 4 or 3 April; kept as written


def _weekday(m: re.Match[str], _: str) -> str | None:
    return _WEEKDAYS[m["w"].lower()]


def _relative(m: re.Match[str], _: str) -> str | None:
    return _RELATIVE[re.sub(r"\s+", " ", m.group(0).lower())]


def _clock(hour: int, minute: int, half: str | None) -> str | None:
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.lower() in ("p", "午後") else 0)
    if not (0 <= hour <= 24 and 0 <= minute <= 59):
        return None
    return f"{hour:02d}:{minute:02d}"


def _en_time(m: re.Match[str], _: str) -> str | None:
    return _clock(int(m["h"]), int(m["mi"] or 0), m["half"])


def _ja_time(m: re.Match[str], _: str) -> str | None:
    minute = 30 if m["han"] else int(m["mi"] or 0)
    return _clock(int(m["h"]), minute, m["half"])


def _named_time(m: re.Match[str], _: str) -> str | None:
    return "12:00" if m.group(0).lower() == "noon" else "00:00"


def _version(m: re.Match[str], _: str) -> str | None:
    core, _, suffix = m["v"].partition("-")
    parts = core.split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts) + (f"-{suffix.lower()}" if suffix else "")


def _amount(m: re.Match[str], _: str) -> str | None:
    value = decimal_text(m["num"], m["mult"])
    currency = _CURRENCIES.get(m["cur"].lower())
    return f"{value} {currency}" if value is not None and currency else None


def _measure(m: re.Match[str], _: str) -> str | None:
    value = decimal_text(m["num"], m["mult"])
    unit = _UNITS.get(re.sub(r"\s+", " ", m["unit"].lower()))
    return f"{value} {unit}" if value is not None and unit else None


def _ordinal(m: re.Match[str], _: str) -> str | None:
    n = int(m["n"]) if m["n"] else _ORDINAL_WORDS[m["w"].lower()]
    return f"#{n} (ordinal)"


def _hash_ref(m: re.Match[str], _: str) -> str | None:
    return "#" + m.group(1).upper()


def _caps_number(m: re.Match[str], _: str) -> str | None:
    return f"{m.group(1)}{m.group(2)}"


def _token(m: re.Match[str], _: str) -> str | None:
    token = m.group(0)
    if not (re.search(r"[0-9]", token) and re.search(r"[A-Za-z]", token)):
        return None  # only digits: a number; only letters: a word (or a name)
    return re.sub(r"[-_]", "", token.upper())


def _as_is(m: re.Match[str], _: str) -> str | None:
    return m.group(0).rstrip(".,;:!?)").lower()


def _label(m: re.Match[str], text: str) -> str | None:
    letter = m.group(0)
    if letter == "I" or (letter == "A" and at_sentence_start(text, m.start())):
        return None  # the pronoun; the article opening a sentence
    return letter


def _number(m: re.Match[str], _: str) -> str | None:
    return decimal_text(m["num"], m["mult"])


def _number_words(m: re.Match[str], _: str) -> str | None:
    unit = _UNITS.get(re.sub(r"\s+", " ", m["unit"].lower())) if m["unit"] else None
    said = m.string[m.start() : m.start("unit") if m["unit"] else m.end()]
    words = re.findall(r"[a-z]+", said.lower())
    if words == ["one"] and unit is None:
        return None
    total = current = 0
    for word in words:
        if word == "and":
            continue
        if word in _NUMBER_WORDS:
            current += _NUMBER_WORDS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        else:
            total += (current or 1) * _SCALE_WORDS[word]
            current = 0
    return f"{total + current} {unit}" if unit else str(total + current)


def _rule(kind: str, pattern: str, canon: Canon) -> Rule:
    return Rule(kind, re.compile(pattern), canon)


_NUMBER_AT = rf"(?<![A-Za-z0-9.,])(?P<num>{_NUM})(?P<mult>{_MULT})?"
_UNIT_WORDS = "|".join(
    re.escape(u) + ("" if re.match(r"[^\x00-\x7f]", u) else r"(?![A-Za-z])")
    for u in sorted(_UNITS, key=len, reverse=True)
    if u != "%"
)

RULES: tuple[Rule, ...] = (
    _rule(IDENTIFIER, r"(?i)\bhttps?://[^\s<>\"'、。]+", _as_is),
    # Anchored at the start of a run: unanchored, a long run of letters (a Japanese
    # paragraph) is re-scanned from each of its characters in turn.
    _rule(IDENTIFIER, r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", _as_is),
    _rule(DATE, rf"{B0}(?P<y>\d{{4}})[-/.](?P<mo>\d{{1,2}})[-/.](?P<d>\d{{1,2}}){B1}", _date_of),
    _rule(DATE, rf"{B0}(?P<y>\d{{4}})[-/](?P<mo>\d{{1,2}})(?![0-9A-Za-z]|[-/.]\d)", _date_of),
    _rule(
        DATE,
        r"(?:(?P<y>\d{4})\s*年\s*)?(?<![0-9.])(?P<mo>\d{1,2})\s*月\s*(?:(?P<d>\d{1,2})\s*日)?",
        _date_of,
    ),
    _rule(DATE, r"(?<![0-9])(?P<y>\d{4})\s*年(?!間)", lambda m, _: m["y"]),
    _rule(DATE, r"(?<![0-9.])(?P<d>\d{1,2})\s*日(?![間目後前])", _day_alone),
    _rule(
        DATE,
        rf"{B0}{_MONTH}\s+(?P<d>\d{{1,2}}){_ORDINAL_SUFFIX}(?:,?\s+(?P<y>\d{{4}}))?{B1}"
        r"(?!\s*(?::\d|(?i:[ap]\.?\s?m)\b))",
        _en_date,
    ),
    _rule(
        DATE,
        rf"{B0}(?:the\s+)?(?P<d>\d{{1,2}}){_ORDINAL_SUFFIX}\s+(?:of\s+)?{_MONTH}"
        rf"(?:,?\s+(?P<y>\d{{4}}))?{B1}",
        _en_date,
    ),
    _rule(DATE, rf"{B0}{_MONTH},?\s+(?P<y>\d{{4}}){B1}", _en_date),
    _rule(DATE, rf"{B0}{_FULL_MONTH}{B1}", _month_alone),
    _rule(DATE, rf"{B0}\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?{B1}", _slashed),
    _rule(DATE, r"(?i)\b(?P<w>mon|tues|wednes|thurs|fri|satur|sun)day\b", _weekday),
    _rule(DATE, r"(?P<w>[月火水木金土日])曜日?", _weekday),
    _rule(
        DATE,
        r"(?i)\b(?:(?:last|this|next)\s+(?:week|month|year)|this\s+morning|today|tonight|"
        r"yesterday|tomorrow)\b|一昨日|明後日|今日|本日|今朝|今夜|昨日|昨夜|明日|先週|今週|来週"
        r"|先月|今月|来月|昨年|去年|今年|来年",
        _relative,
    ),
    _rule(
        TIME,
        rf"{B0}(?P<h>\d{{1,2}}):(?P<mi>\d{{2}})(?::\d{{2}})?(?:\s?(?P<half>[AaPp])\.?\s?[Mm]\.?)?{B1}",
        _en_time,
    ),
    _rule(TIME, rf"{B0}(?P<h>\d{{1,2}})(?P<mi>)\s?(?P<half>[AaPp])\.?\s?[Mm]\b\.?", _en_time),
    _rule(TIME, rf"{B0}(?P<h>\d{{1,2}})(?P<mi>)(?P<half>)\s?o['’]clock\b", _en_time),
    _rule(TIME, r"(?i)\b(?:noon|midnight)\b", _named_time),
    _rule(
        TIME,
        r"(?:(?P<half>午前|午後)\s*)?(?<![0-9])(?P<h>\d{1,2})\s*時(?![間的期点代停])"
        r"\s*(?:(?P<mi>\d{1,2})\s*分|(?P<han>半))?",
        _ja_time,
    ),
    _rule(VERSION, rf"{B0}[vV](?P<v>\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?){B1}", _version),
    _rule(VERSION, r"(?i)(?:\bversion|\bver\.?|バージョン)\s*(?P<v>\d+(?:\.\d+)*)", _version),
    _rule(VERSION, rf"{B0}(?P<v>\d+\.\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?){B1}", _version),
    _rule(
        AMOUNT,
        rf"(?P<cur>{B0}(?i:us\$|usd|jpy|eur|gbp)|[$¥€£])\s?(?P<num>{_NUM})"
        rf"(?P<mult>{_MULT}|M(?![A-Za-z]))?",
        _amount,
    ),
    _rule(
        AMOUNT,
        rf"{_NUMBER_AT}\s?(?P<cur>円|ドル|ユーロ|ポンド|"
        r"(?i:yen|dollars?|euros?|bucks?|usd|jpy|eur|gbp)(?![A-Za-z]))",
        _amount,
    ),
    _rule(NUMBER, rf"{_NUMBER_AT}\s?(?P<unit>%|(?i:{_UNIT_WORDS}))", _measure),
    _rule(NUMBER, rf"{B0}(?P<n>\d+)(?i:st|nd|rd|th){B1}(?P<w>)", _ordinal),
    _rule(NUMBER, r"(?i)\b(?P<n>)(?P<w>" + "|".join(_ORDINAL_WORDS) + r")\b", _ordinal),
    _rule(NUMBER, r"第\s*(?P<n>\d+)(?P<w>)", _ordinal),
    _rule(NUMBER, r"(?<![0-9])(?P<n>\d+)\s*(?:番目|回目)(?P<w>)", _ordinal),
    _rule(IDENTIFIER, r"#([0-9]+|[A-Za-z][\w-]*)", _hash_ref),
    _rule(IDENTIFIER, rf"{B0}([A-Z]{{2,}})[ _-]?([0-9]+){B1}", _caps_number),
    _rule(IDENTIFIER, rf"{B0}[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)*{B1}", _token),
    _rule(IDENTIFIER, r"(?<![A-Za-z0-9'’.-])[A-Z](?![A-Za-z0-9'’])", _label),
    _rule(NUMBER, rf"{_NUMBER_AT}(?![0-9])", _number),
    _rule(
        NUMBER,
        rf"(?i)\b(?:{_NUMBER_WORD})(?:[\s-]+(?:and[\s-]+)?(?:{_NUMBER_WORD}))*\b"
        rf"(?:\s?(?P<unit>%|{_UNIT_WORDS}))?",
        _number_words,
    ),
)


def scan(text: str) -> tuple[dict[str, dict[str, str]], str]:
    """The values of a normalised text by kind, each canonical value with the words that
    said it first, and the text with every value masked out (blanks, so that what is left,
    words and names, keeps its places)."""
    found: dict[str, dict[str, str]] = {kind: {} for kind in VALUE_KINDS}
    for rule in RULES:
        spans: list[tuple[int, int]] = []
        for match in rule.pattern.finditer(text):
            if match.end() == match.start():
                continue
            value = rule.canon(match, text)
            if value is not None:
                found[rule.kind].setdefault(value, match.group(0).strip())
                spans.append(match.span())
        if spans:
            text = _masked(text, spans)
    return found, text


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (in order, not overlapping) blanked, in one pass."""
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], " " * (end - start)]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)
