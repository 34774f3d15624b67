"""``lexical_cutoff.term_bound``: a term's largest BM25 share, from its largest tf and least
length per tf (issue 21). The certificate is only sound if the bound is never below any
memory's real share: checked over random corpora."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.storage.lexical_cutoff import term_bound

K1, B = 1.2, 0.75


def share(idf: float, tf: int, dl: int, avgdl: float) -> float:
    """A memory's BM25 share for one term, as the lexical legs score it."""
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


# A memory: (tf of the term, other tokens); its length is tf + others.
memories = st.lists(st.tuples(st.integers(1, 300), st.integers(0, 2000)), min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(memories, st.floats(0.01, 20.0), st.floats(0.5, 500.0))
def test_the_bound_is_never_below_a_memory_share(
    corpus: list[tuple[int, int]], idf: float, avgdl: float
) -> None:
    max_tf = max(tf for tf, _ in corpus)
    least = min((tf + other) / tf for tf, other in corpus)
    bound = term_bound(idf, max_tf, least, avgdl, K1, B)
    top = max(share(idf, tf, tf + other, avgdl) for tf, other in corpus)
    assert bound >= top * (1 - 1e-12)
    assert bound <= idf * (K1 + 1)  # never looser than the saturation limit


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2000), st.floats(0.01, 20.0), st.floats(0.5, 500.0))
def test_one_memory_bound_is_its_share(tf: int, other: int, idf: float, avgdl: float) -> None:
    """With one memory (or the extremes in the same memory) the bound is attained: tight."""
    dl = tf + other
    assert math.isclose(term_bound(idf, tf, dl / tf, avgdl, K1, B), share(idf, tf, dl, avgdl))


def test_a_term_once_in_an_average_memory_is_far_below_saturation() -> None:
    idf = 5.0
    assert term_bound(idf, 1, 20.0, 20.0, K1, B) == pytest.approx(idf)  # tf 1, dl = avgdl
    assert term_bound(idf, 1, 20.0, 20.0, K1, B) < idf * (K1 + 1) / 2


def test_no_memory_holds_the_term() -> None:
    assert term_bound(3.0, 0, math.inf, 10.0, K1, B) == 0.0
