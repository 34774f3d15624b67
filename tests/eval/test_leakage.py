"""Query/answer leakage: the committed set is clean, and a planted copy is caught."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from kioku.eval.golden import DEFAULT_GOLDEN, GoldenSet, load_golden, parse_golden
from kioku.eval.leakage import find_leaks, ngrams, overlap


def with_query(**query: Any) -> GoldenSet:
    data = copy.deepcopy(yaml.safe_load(DEFAULT_GOLDEN.read_text(encoding="utf-8")))
    data["queries"].append({"id": "planted", "rationale": "planted by the test", **query})
    return parse_golden(data)


def test_the_committed_golden_set_leaks_nothing() -> None:
    assert find_leaks(load_golden()) == []


def test_a_query_copying_its_answer_is_caught_by_both_detectors() -> None:
    golden = with_query(
        bucket="paraphrase",
        query="The staging Postgres listens on port 5433, not 5432",
        relevant=["infra-staging-port"],
    )
    leaks = [leak for leak in find_leaks(golden) if leak.query_id == "planted"]
    assert {leak.kind for leak in leaks} == {"token_overlap", "rare_ngram"}
    assert all(leak.doc_id == "infra-staging-port" for leak in leaks)


def test_a_lifted_phrase_inside_a_longer_question_is_a_rare_ngram() -> None:
    golden = with_query(
        bucket="japanese",
        query="前に誰かが言っていたけど、WireGuardのVPNが必要で設定はどこから来るの？",
        relevant=["ja-vpn"],
    )
    kinds = {leak.kind for leak in find_leaks(golden) if leak.query_id == "planted"}
    assert "rare_ngram" in kinds


def test_the_exact_bucket_may_copy() -> None:
    golden = with_query(
        bucket="exact",
        query="The staging Postgres listens on port 5433, not 5432",
        relevant=["infra-staging-port"],
    )
    assert find_leaks(golden) == []


def test_a_short_question_sharing_two_words_is_not_a_leak() -> None:
    golden = with_query(bucket="paraphrase", query="staging port?", relevant=["infra-staging-port"])
    assert find_leaks(golden) == []


def test_overlap_and_ngrams_by_hand() -> None:
    assert overlap(["a", "b", "c", "d"], ["a", "b", "c", "x"]) == (0.75, 3)
    assert overlap([], ["a"]) == (0.0, 0)
    assert ngrams(["a", "b", "c", "d"]) == {("a", "b", "c"), ("b", "c", "d")}
