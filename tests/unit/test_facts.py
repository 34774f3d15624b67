"""Sleep's merge guard as pure text logic (``search/facts.py``, ``search/fact_values.py``):
one value written two ways reads as one, two values never do, and each kind of difference
the guard claims to see (identifier, version, date, time, amount, number, negation, name) is
seen, in English and Japanese. The merge corpus is read here without any model: every pair
labelled ``different`` differs in the labelled kind."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.search.fact_values import normalise, scan
from kioku.search.facts import describe, differing_facts, facts_of
from tests.unit.merge_pairs import load_pairs

PAIRS = load_pairs()


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("ＩＮＶ−１００１", "INV-1001"),
        ("INV\u22121001", "INV-1001"),  # U+2212 minus sign
        ("INV\u20131001", "INV-1001"),  # en dash
        ("ＡＢＣーＸ１", "ABC-X1"),  # the long vowel mark typed between letters
        ("２０２６年３月", "2026年3月"),
        ("三月三日", "3月3日"),
        ("三万円", "30000円"),
        ("十五万円", "150000円"),
        ("二〇二六年", "2026年"),
        ("令和8年4月1日", "2026年4月1日"),
        ("平成元年", "1989年"),
        ("一緒に", "一緒に"),  # not before a counter: not a number
        ("一時的に停止", "一時的に停止"),  # temporary, not one o'clock
        ("千葉", "千葉"),
    ],
)
def test_normalise_makes_one_spelling_of_each_value(written: str, normal: str) -> None:
    assert normalise(written) == normal


@pytest.mark.parametrize(
    ("kind", "writings"),
    [
        ("identifier", ["ＩＮＶ−１００１", "INV-1001", "inv-1001", "INV 1001", "INV1001"]),
        ("date", ["２０２６年３月", "2026年3月", "March 2026", "2026-03", "Mar. 2026"]),
        ("date", ["3月3日", "３月３日", "三月三日", "March 3", "March 3rd", "the 3rd of March"]),
        ("date", ["2026-03-14", "2026/3/14", "March 14, 2026", "14 March 2026", "2026年3月14日"]),
        ("date", ["Tuesday", "火曜日", "火曜"]),
        ("date", ["yesterday", "昨日"]),
        ("time", ["3pm", "3 p.m.", "15:00", "3:00 PM", "午後3時", "15時"]),
        ("time", ["午前9時半", "9:30am", "09:30"]),
        ("amount", ["¥30,000", "30,000円", "3万円", "30000 yen", "JPY 30,000", "￥３０，０００"]),
        ("amount", ["$1,200", "1200 dollars", "$1.2k", "USD 1200"]),
        ("amount", ["€3,000", "3000 euros", "3,000ユーロ"]),
        ("version", ["v2.3.0", "version 2.3", "バージョン2.3", "V2.3"]),
        ("number", ["three", "3", "３"]),
        ("number", ["ten thousand", "10,000", "10000", "一万件"]),
        ("number", ["99.9%", "99.9 percent", "９９．９％", "99.9パーセント"]),
        ("number", ["30 days", "30日間", "thirty days"]),
    ],
)
def test_one_value_written_many_ways_reads_as_one(kind: str, writings: list[str]) -> None:
    read = [set(scan(normalise(text))[0][kind]) for text in writings]
    assert all(values == read[0] and len(values) == 1 for values in read), dict(
        zip(writings, read, strict=True)
    )


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("Invoice INV-1001 was paid", "Invoice INV-1002 was paid", "identifier"),
        ("Ticket #4812 is open", "Ticket #4813 is open", "identifier"),
        ("Fixed in commit 3f9a2c1", "Fixed in commit 3f9a2d7", "identifier"),
        ("Alerts go to ops@example.com", "Alerts go to sre@example.com", "identifier"),
        ("The workshop is in room B", "The workshop is in room C", "identifier"),
        ("Upgraded to 2.3.1", "Upgraded to 2.3.2", "version"),
        ("Only app v14 crashes", "Only app v15 crashes", "version"),
        ("Paid on March 3", "Paid on March 4", "date"),
        ("Paid on 2026-03-14", "Paid on 2026-03-15", "date"),
        ("Ends in March 2027", "Ends in April 2027", "date"),
        ("The sync is on Tuesday", "The sync is on Wednesday", "date"),
        ("Renewed yesterday", "Renewed today", "date"),
        ("Paid on March 3", "Paid on March 3, 2026", "date"),  # a year added: kept apart
        ("3月3日に支払い", "3月4日に支払い", "date"),
        ("契約は２０２６年３月に終了", "契約は2026年4月に終了", "date"),
        ("The sync is at 3pm", "The sync is at 4pm", "time"),
        ("会議は15時から", "会議は16時から", "time"),
        ("The license costs $1,200", "The license costs $1,500", "amount"),
        ("The fee is $3,000", "The fee is €3,000", "amount"),
        ("ライセンスは12万円", "ライセンスは15万円", "amount"),
        ("We run 3 replicas", "We run 4 replicas", "number"),
        ("We run three replicas", "We run four replicas", "number"),
        ("5 GB of storage", "5 MB of storage", "number"),
        ("Kept for 30 days", "Kept for 30 weeks", "number"),
        ("レプリカを3台", "レプリカを5台", "number"),
        ("The backup restores one context", "The backup does not restore one context", "negation"),
        ("The backup restores one context", "The backup doesn't restore one context", "negation"),
        ("It has failed on weekends", "It has never failed on weekends", "negation"),
        ("The invoice is paid", "The invoice is unpaid", "negation"),
        ("The request was approved", "The request was rejected", "negation"),
        ("支払われました", "支払われていません", "negation"),
        ("支払った", "支払わなかった", "negation"),
        ("復元できる", "復元できない", "negation"),
        ("支払い済み", "未払い", "negation"),
        ("問題なし", "問題あり", "negation"),
        ("承認されました", "却下されました", "negation"),
        ("Alice owns the rotation", "Bob owns the rotation", "name"),
        ("Answered by Priya Raman", "Answered by Priya Natarajan", "name"),
        ("Delivered to the Berlin office", "Delivered to the Munich office", "name"),
        ("当番は田中さんです", "当番は佐藤さんです", "name"),
        ("回答はワタナベさんが作成中", "回答はヤマモトさんが作成中", "name"),
        ("講師は山田太郎さん", "講師は山田次郎さん", "name"),
    ],
)
def test_each_kind_of_difference_is_seen(a: str, b: str, kind: str) -> None:
    kinds = [difference.kind for difference in differing_facts(a, b)]
    assert kind in kinds, (a, b, kinds)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Acme: invoice INV-1001 was paid on March 3.", "Acme's invoice ＩＮＶ−１００１, 3 March"),
        ("Yesterday I went to the support group.", "I went to the support group yesterday."),
        ("The sync is at 3pm.", "Please note: the sync is at 15:00."),
        ("Alice drinks green tea every morning", "Every morning, alice drinks green tea."),
        ("It does not restore one context", "It doesn't restore one context"),
        ("No. 5 is the build number", "The build number is No 5"),  # "No." before a number
        ("May I add: the freeze starts Friday", "The freeze starts Friday"),  # modal, not a month
        ("田中さんが資料を作成しました", "田中様が資料を作成してくださいました"),
        ("参加者は少ないです", "参加者は少ない"),  # 少ない is not a negation
        ("非常に重要な変更です", "非常に重要な変更"),  # 非常 is not a negation
        ("ライセンスは12万円です", "ライセンスは￥１２０，０００です"),
        ("新規則は令和8年4月1日から", "新規則は2026年4月1日から"),
    ],
)
def test_restatements_of_one_fact_do_not_differ(a: str, b: str) -> None:
    assert differing_facts(a, b) == [], describe(differing_facts(a, b))


def test_the_invoice_case_names_both_identifiers_as_written() -> None:
    first = "Invoice INV-1001 from Acme was paid on March 3"
    second = "Invoice ＩＮＶ−１００２ from Acme was paid on March 3"
    assert describe(differing_facts(first, second)) == "identifier INV-1001 vs INV-1002"
    assert differing_facts(facts_of(first), first) == []


@pytest.mark.parametrize("pair", [p for p in PAIRS if p.label == "different"], ids=lambda p: p.id)
def test_every_different_pair_of_the_corpus_differs_in_its_labelled_kind(pair) -> None:
    kinds = [difference.kind for difference in differing_facts(pair.a, pair.b)]
    assert pair.kind in kinds, kinds


def test_the_corpus_covers_every_kind_in_both_languages() -> None:
    different = [p for p in PAIRS if p.label == "different"]
    same = [p for p in PAIRS if p.label == "same"]
    assert len(PAIRS) >= 60 and len(same) >= 30 and len(different) >= 30
    for kind in ("identifier", "version", "date", "time", "amount", "number", "negation", "name"):
        for lang in ("en", "ja"):
            assert any(p.kind == kind and p.lang == lang for p in different), (kind, lang)
    assert {p.lang for p in same} == {"en", "ja"}


_PIECES = st.sampled_from(
    [
        "INV-1001", "ＩＮＶ−１００２", "March", "May", "3", "３", "三", "十五", "万", "円", "月",
        "日", "時", "半", "午後", "$", "¥", "%", ",", ".", ":", "-", "/", "#", "v2.3", "version",
        "not", "n't", "ない", "ません", "未払い", "さん", "田中", "Alice", "alice", "the", "of",
        " ", "\n", "3rd", "pm", "令和", "元", "年", "thirty", "days", "ー", "@", "example.com",
    ]
)  # fmt: skip
_TEXTS = st.lists(_PIECES | st.text(max_size=3), max_size=25).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXTS, _TEXTS)
def test_the_guard_never_fails_never_parts_a_text_from_itself_and_is_symmetric(
    a: str, b: str
) -> None:
    assert differing_facts(facts_of(a), facts_of(a)) == []
    there = {(d.kind, d.first, d.second) for d in differing_facts(a, b)}
    back = {(d.kind, d.second, d.first) for d in differing_facts(b, a)}
    assert there == back


@pytest.mark.parametrize(
    "text",
    [
        "あ" * 50_000,  # one long run of letters (the e-mail rule once re-scanned it per char)
        "May " * 12_500,  # masked values leave long runs of blanks (the 時 rule crawled them)
        "Alice paid invoice INV-1001 on March 3 for $1,200. " * 1_000,
        "1-" * 25_000,
        "一二三四五六七八九十" * 5_000,
    ],
    ids=["letters", "blanks", "prose", "digits", "kanji"],
)
def test_reading_a_long_text_takes_time_in_proportion(text: str) -> None:
    """A memory's content may hold 1 MiB: every rule must stay linear. Quadratic rules took
    5 s on 20,000 characters; linear ones read 50,000 in well under a second."""
    started = time.perf_counter()
    facts_of(text)
    assert time.perf_counter() - started < 5.0
