"""Language-aware fusion: script detection, per-language calibration, the blind lexical leg."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.embeddings.language_means import language_means, query_means
from kioku.search.confidence import ConfidenceEvidence, judge_confidence
from kioku.search.fusion import fuse_weighted
from kioku.search.language import Language, language_of, readable_languages
from kioku.search.language_means import SHIFT, calibrate, centre, offsets_for
from kioku.search.language_overlap import SHARED_WORDS, discount_shared_words
from kioku.storage.records import ScoredId


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alice's favourite drink is jasmine tea.", "other"),
        ("田中さんは猫アレルギーです", "ja"),
        ("東京本社", "ja"),  # all kanji: still Japanese (see the module docstring)
        ("StorybookでUIコンポーネントを確認する", "ja"),  # a Japanese note naming tools
        ("We had ramen (ラーメン) in Sapporo last winter", "other"),  # English with one word
        (  # Japanese prose naming an Italian association at length (a JSQuAD paragraph)
            "イタリアでは、イタリア自動車部品工業会(ANFIA: Associazione Nazionale Fra Industrie "
            "Automobilistiche)がAVSQ(Associazione Nazionale dei Valutatori di Sistemi Qualita)を"
            "制定した",
            "ja",
        ),
        ("회의는 화요일입니다", "ko"),
        ("", "other"),
        ("12:30 / 5433", "other"),
    ],
)
def test_language_of_goes_by_script(text: str, expected: str) -> None:
    assert language_of(text) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("アリスの好きな飲み物", {"ja"}),
        ("What does Alice drink?", {"other"}),
        ("Oncorhynchus ketaを日本語で？", {"ja", "other"}),  # its words can match either
        ("オフィスのWi-Fiは？", {"ja", "other"}),
        ("회의 시간", {"ko"}),
    ],
)
def test_a_query_can_only_match_words_in_the_scripts_it_uses(query: str, expected: set) -> None:
    assert readable_languages(query) == expected


OFFSETS: dict[Language, float] = {"other": 0.70, "ja": 0.80}


def test_calibration_leaves_a_single_language_alone() -> None:
    hits = [ScoredId("a", 0.9), ScoredId("b", 0.8)]
    assert calibrate(hits, {"a": "ja", "b": "ja"}, "other", OFFSETS) == hits


def test_calibration_takes_the_language_gap_off_other_language_memories() -> None:
    # An English query: the Japanese memory "ja-1" scores higher on language alone.
    hits = [ScoredId("ja-1", 0.86), ScoredId("en-1", 0.84), ScoredId("en-2", 0.70)]
    languages: dict[str, Language] = {"ja-1": "ja", "en-1": "other", "en-2": "other"}
    out = calibrate(hits, languages, "other", OFFSETS)
    assert [hit.memory_id for hit in out] == ["en-1", "ja-1", "en-2"]
    scores = {hit.memory_id: hit.score for hit in out}
    assert scores["en-1"] == 0.84 and scores["en-2"] == 0.70  # the query's language: as is
    assert scores["ja-1"] == pytest.approx(0.86 - SHIFT * 0.10)


def test_calibration_needs_a_baseline_for_every_language_involved() -> None:
    hits = [ScoredId("ko-1", 0.9), ScoredId("en-1", 0.8)]
    assert calibrate(hits, {"ko-1": "ko", "en-1": "other"}, "other", OFFSETS) == hits


def test_offsets_are_the_query_against_each_language_mean() -> None:
    means: dict[Language, np.ndarray] = {"other": np.array([1.0, 0.0]), "ja": np.array([0.0, 0.5])}
    assert offsets_for(np.array([0.6, 0.8]), means) == pytest.approx({"other": 0.6, "ja": 0.4})


def test_language_means_are_measured_once_per_model() -> None:
    embedder = FakeEmbedder(name="fake-for-language-means")
    first = language_means(embedder)
    calls = embedder.calls
    assert calls > 0 and set(first) == {"other", "ja"}
    assert language_means(embedder) is first and embedder.calls == calls


MEANS: dict[Language, np.ndarray] = {
    "other": np.array([1.0, 0.0, 0.0]),
    "ja": np.array([0.0, 1.0, 0.0]),
}
QUERY_MEANS: dict[Language, np.ndarray] = {
    "other": np.array([0.5, 0.0, 0.0]),
    "ja": np.array([0.0, 0.5, 0.0]),
}


def test_centring_scores_the_centred_vectors_dot_product() -> None:
    query = np.array([0.9, 0.0, 0.4])  # English: the "other" mean direction, and a topic
    vectors = {
        "ja-1": np.array([0.0, 1.0, 0.5]),  # Japanese, on the topic
        "en-1": np.array([1.0, 0.0, 0.1]),  # English, barely on it
    }
    hits = [ScoredId("en-1", 0.94), ScoredId("ja-1", 0.20)]
    languages: dict[str, Language] = {"ja-1": "ja", "en-1": "other"}
    out = centre(hits, vectors, languages, query, "other", MEANS, QUERY_MEANS)
    assert [hit.memory_id for hit in out] == ["ja-1", "en-1"]
    scores = {hit.memory_id: hit.score for hit in out}
    assert scores["ja-1"] == pytest.approx(0.4 * 0.5)  # (q − ν)·(d − μ): only the topic is left
    assert scores["en-1"] == pytest.approx(0.4 * 0.1)


def test_centring_leaves_a_single_language_and_unknown_languages_alone() -> None:
    query = np.array([1.0, 0.0, 0.0])
    vectors = {"a": np.array([1.0, 0.0, 0.0]), "b": np.array([0.0, 1.0, 0.0])}
    hits = [ScoredId("a", 0.9), ScoredId("b", 0.8)]
    one: dict[str, Language] = {"a": "ja", "b": "ja"}
    assert centre(hits, vectors, one, query, "other", MEANS, QUERY_MEANS) == hits
    korean: dict[str, Language] = {"a": "ko", "b": "other"}
    assert centre(hits, vectors, korean, query, "other", MEANS, QUERY_MEANS) == hits


def test_a_memory_whose_vector_is_gone_keeps_its_expected_centred_score() -> None:
    query = np.array([0.6, 0.8, 0.0])
    hits = [ScoredId("en-1", 0.7), ScoredId("ja-1", 0.9)]
    languages: dict[str, Language] = {"ja-1": "ja", "en-1": "other"}
    vectors = {"en-1": np.array([1.0, 0.0, 0.0]), "ja-1": None}
    scores = {
        h.memory_id: h.score
        for h in centre(hits, vectors, languages, query, "other", MEANS, QUERY_MEANS)
    }
    assert scores["ja-1"] == pytest.approx(0.9 - 0.8)  # q·d − q·μ_ja


def test_query_means_are_measured_once_per_model_apart_from_passage_means() -> None:
    embedder = FakeEmbedder(name="fake-for-query-means")
    passages = language_means(embedder)
    queries = query_means(embedder)
    calls = embedder.calls
    assert queries is not passages and set(queries) == {"other", "ja"}
    assert query_means(embedder) is queries and embedder.calls == calls


def test_a_blind_leg_abstains_instead_of_voting_zero() -> None:
    legs = {
        "lexical": [ScoredId("ja-distractor", 8.0), ScoredId("ja-other", 2.0)],
        "vector": [ScoredId("en-answer", 0.9), ScoredId("ja-distractor", 0.7)],
    }
    weights = {"lexical": 1.0, "vector": 1.0}
    plain = fuse_weighted(legs, weights)
    assert max(plain, key=plain.__getitem__) == "ja-distractor"  # 1.0 + 0.0 beats 1.0
    fused = fuse_weighted(legs, weights, {"lexical": {"en-answer"}})
    assert fused["en-answer"] == pytest.approx(2.0)  # the vector leg carries both weights
    assert fused["ja-distractor"] == plain["ja-distractor"] == pytest.approx(1.0)
    assert max(fused, key=fused.__getitem__) == "en-answer"


def test_blindness_of_a_leg_that_did_not_run_changes_nothing() -> None:
    legs = {"vector": [ScoredId("a", 0.9), ScoredId("b", 0.5)]}
    weights = {"lexical": 1.0, "vector": 1.0}
    assert fuse_weighted(legs, weights, {"lexical": {"a"}}) == fuse_weighted(legs, weights)


def test_blind_weights_follow_the_configured_weights() -> None:
    legs = {"lexical": [ScoredId("x", 1.0)], "vector": [ScoredId("a", 1.0), ScoredId("b", 0.0)]}
    fused = fuse_weighted(legs, {"lexical": 0.5, "vector": 2.0}, {"lexical": {"a"}})
    assert fused["a"] == pytest.approx(2.5)  # scaled to the total weight, 0.5 + 2.0


def test_confidence_is_never_high_when_the_legs_disagree_across_languages() -> None:
    sure = ConfidenceEvidence(found=True, closest=0.9, coverage=1.0, sharpness=5.0, margin=0.5)
    assert judge_confidence(sure) == "high"
    assert judge_confidence(replace(sure, crossed=True)) == "moderate"


def test_shared_words_count_once_where_candidates_span_languages() -> None:
    # A Japanese query: the Japanese distractor shares words (the lexical leg's best match)
    # and edges out the English answer in the vector leg on them.
    vector = [ScoredId("ja-distractor", 0.30), ScoredId("en-answer", 0.28), ScoredId("ja-2", 0.10)]
    lexical = [ScoredId("ja-distractor", 9.0), ScoredId("ja-2", 1.0)]
    languages: dict[str, Language] = {"ja-distractor": "ja", "en-answer": "other", "ja-2": "ja"}
    out = discount_shared_words(vector, lexical, languages, "ja")
    assert [hit.memory_id for hit in out] == ["en-answer", "ja-distractor", "ja-2"]
    scores = {hit.memory_id: hit.score for hit in out}
    assert scores["ja-distractor"] == pytest.approx(0.30 - SHARED_WORDS * 0.20 * 1.0)
    assert scores["ja-2"] == pytest.approx(0.10)  # the weakest match: normalised to 0
    assert scores["en-answer"] == 0.28


def test_shared_words_are_left_alone_in_one_language_or_for_a_lone_match() -> None:
    vector = [ScoredId("a", 0.30), ScoredId("b", 0.28)]
    one: dict[str, Language] = {"a": "ja", "b": "ja"}
    lexical = [ScoredId("a", 9.0), ScoredId("b", 1.0)]
    assert discount_shared_words(vector, lexical, one, "ja") == vector
    two: dict[str, Language] = {"a": "other", "b": "ja"}
    assert discount_shared_words(vector, [ScoredId("a", 3.0)], two, "other") == vector
    assert discount_shared_words(vector, [], two, "other") == vector
