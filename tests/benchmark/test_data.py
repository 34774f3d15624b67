"""The data loaders: evidence normalisation, memory text, summary/content split, JSQuAD dedupe,
LoCoMo sessions declared as threads."""

from __future__ import annotations

from typing import Any

import pytest

from kioku.benchmark.data import (
    jsquad_corpus,
    locomo_corpus,
    normalise_dia_id,
    normalise_evidence,
    split_text,
)
from kioku.benchmark.ingest import memory_item
from kioku.search.tokenize import tokenize
from kioku.service.memories import lexical_text
from kioku.storage.records import embedding_text

KNOWN = {"D1:1", "D1:2", "D8:6", "D9:17", "D30:5", "D11:26"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("D30:05", "D30:5"), ("D:11:26", "D11:26"), ("D1:1", "D1:1"), ("D", "D"), ("x", "x")],
)
def test_normalise_dia_id(raw: str, expected: str) -> None:
    assert normalise_dia_id(raw) == expected


def test_evidence_split_on_semicolon_comma_and_space() -> None:
    kept, repaired, dropped = normalise_evidence(["D8:6; D9:17", "D1:1,D1:2"], KNOWN)
    assert kept == ["D8:6", "D9:17", "D1:1", "D1:2"]
    assert repaired == ["D8:6; D9:17", "D1:1,D1:2"]
    assert dropped == []


def test_evidence_zero_padding_and_colon_typo_are_repaired() -> None:
    kept, repaired, dropped = normalise_evidence(["D30:05", "D:11:26"], KNOWN)
    assert kept == ["D30:5", "D11:26"]
    assert repaired == ["D30:05", "D:11:26"]
    assert dropped == []


def test_nonexistent_ids_are_dropped_and_duplicates_kept_once() -> None:
    kept, _, dropped = normalise_evidence(["D1:1", "D10:19", "D", "D1:01"], KNOWN)
    assert kept == ["D1:1"]
    assert dropped == ["D10:19", "D"]


def _conversation() -> dict[str, Any]:
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_2_date_time": "2 pm on 2 May, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Second session."}],
        "session_1_date_time": "1 pm on 1 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo"},
        ],
        "session_3_date_time": "a session without turns",
        "qa": [
            {"question": "What pet?", "answer": "cat", "evidence": ["D1:01"], "category": 4},
            {"question": "When?", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 2},
            {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:1"],
             "category": 5},
            {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
            {"question": "Bad evidence", "answer": "x", "evidence": ["D9:9"], "category": 1},
        ],
    }  # fmt: skip


def test_locomo_corpus_turn_text_order_and_questions() -> None:
    corpus = locomo_corpus("conv-7", _conversation())
    assert corpus.context == "locomo-conv-7"
    assert [(d.key, d.text) for d in corpus.docs] == [
        ("D1:1", "Ann (1 pm on 1 May, 2023): I adopted a cat."),
        ("D1:2", "Bob (1 pm on 1 May, 2023): Look! [image: a photo]"),
        ("D2:1", "Bob (2 pm on 2 May, 2023): Second session."),
    ]
    assert corpus.docs[0].source_uri == "locomo:conv-7:D1:1"
    assert [(q.qid, q.gold, q.category) for q in corpus.questions] == [
        ("conv-7:q0", ("D1:1",), 4),
        ("conv-7:q1", ("D1:1", "D2:1"), 2),
    ]
    stats = corpus.evidence
    assert stats is not None
    assert (stats.questions_seen, stats.questions_kept) == (4, 2)
    assert stats.questions_dropped == ["conv-7:q3", "conv-7:q4"]
    assert stats.ids_dropped == ["conv-7:D9:9"]
    assert stats.ids_repaired == ["conv-7:D1:01", "conv-7:D1:1; D2:1"]


def test_the_locomo_loader_declares_sessions_as_threads() -> None:
    conversation = {
        "speaker_a": "A",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "hello"}],
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "again"}],
    }  # fmt: skip
    corpus = locomo_corpus("conv-0", conversation)
    assert [(d.thread, d.position) for d in corpus.docs] == [
        ("session_1", 0), ("session_1", 1), ("session_2", 0)
    ]  # fmt: skip
    item = memory_item(corpus.docs[1])
    assert (item["thread"], item["position"]) == ("session_1", 1)


def test_split_keeps_short_text_whole() -> None:
    assert split_text("short text") == ("short text", "")


@pytest.mark.parametrize(
    ("text", "at_boundary"),
    [
        (" ".join(f"word{i}" for i in range(200)), True),  # English: cut at a space
        ("梅雨は日本の気象現象である。" * 60, True),  # Japanese: cut after a full stop
        ("x" * 1234, False),  # no boundary at all: hard cut at 500
    ],
)
def test_split_indexes_exactly_the_original_text(text: str, at_boundary: bool) -> None:
    summary, content = split_text(text)
    assert 0 < len(summary) <= 500 and content
    rejoined = embedding_text(summary, content)
    # The cut loses nothing and repeats nothing: at most one space became the newline.
    assert rejoined in {text, text[: len(summary)] + "\n" + text[len(summary) :]} or (
        rejoined.replace("\n", " ") == text
    )
    if at_boundary:  # the lexical index sees exactly the tokens of the original text
        assert lexical_text(summary, content, []).split() == tokenize(text)
    else:
        assert (summary, content) == (text[:500], text[500:])


def _squad() -> dict[str, Any]:
    def para(context: str, *qids: str) -> dict[str, Any]:
        return {"context": context, "qas": [{"id": q, "question": f"q {q}?"} for q in qids]}

    return {
        "data": [
            {"title": "A", "paragraphs": [para("alpha text", "a1", "a2"), para("beta", "b1")]},
            {"title": "B", "paragraphs": [para("alpha text", "a3"), para("gamma", "c1")]},
        ]
    }


def test_jsquad_dedupes_identical_paragraphs() -> None:
    corpus = jsquad_corpus(_squad())
    assert [d.text for d in corpus.docs] == ["alpha text", "beta", "gamma"]
    gold = {q.qid: q.gold for q in corpus.questions}
    assert gold["a1"] == gold["a3"] == (corpus.docs[0].key,)
    assert gold["c1"] == (corpus.docs[2].key,)


def test_jsquad_subset_keeps_needed_paragraphs_and_some_distractors() -> None:
    corpus = jsquad_corpus(_squad(), max_questions=2, extra_paragraphs=1)
    assert [q.qid for q in corpus.questions] == ["a1", "a2"]
    assert len(corpus.docs) == 2 and corpus.docs[0].text == "alpha text"
