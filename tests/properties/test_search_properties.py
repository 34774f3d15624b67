"""Properties of the pure search parts: tokenizer, fusion, re-rank bound, TTL clamping."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.models import MAX_STATE_TTL
from kioku.search.fusion import fuse_rrf, fuse_weighted, leg_ranks
from kioku.search.rerank import rerank_factor
from kioku.search.tokenize import has_cjk, normalize, tokenize
from kioku.service.state import clamp_ttl
from kioku.storage.records import RankingSignals, ScoredId

# Text with Latin, kana, kanji, full-width forms, punctuation and whitespace mixed in.
_ALPHABET = st.sampled_from(
    [*"abcXYZ019 ,.'!?-_\t\n", *"東京都カタカナｶﾀｶﾅひらがな。、ＡＢ１", "ß", "é", "İ", "ﬁ"]
)
TEXT = st.text(_ALPHABET, max_size=80) | st.text(max_size=40)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_tokenize_is_total_and_canonical(text: str) -> None:
    tokens = tokenize(text)
    assert tokens == tokenize(text)  # deterministic
    assert all(token and not any(c.isspace() for c in token) for token in tokens)
    # NFKC and case folding come first: equivalent spellings give the same tokens.
    assert tokenize(unicodedata.normalize("NFKC", text)) == tokens
    assert tokenize(unicodedata.normalize("NFKC", text).casefold()) == tokens


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_tokens_of_two_latin_texts_joined_by_a_space_are_their_tokens_joined(
    a: str, b: str
) -> None:
    # Without CJK the tokenizer is word by word, so a space never merges or splits words.
    # (Half-width kana such as ｶ are CJK too, though not East Asian "wide".)
    if has_cjk(normalize(a) + normalize(b)):
        return
    assert tokenize(f"{a} {b}") == tokenize(a) + tokenize(b)


def _leg(ids: list[str], scores: list[float]) -> list[ScoredId]:
    hits = [ScoredId(i, s) for i, s in zip(ids, scores, strict=False)]
    return sorted(hits, key=lambda h: -h.score)


LEG = st.lists(st.sampled_from([f"m{i}" for i in range(12)]), unique=True, max_size=12).flatmap(
    lambda ids: st.lists(
        st.floats(-50, 50, allow_nan=False), min_size=len(ids), max_size=len(ids)
    ).map(lambda scores: _leg(ids, scores))
)
WEIGHT = st.floats(0.0, 3.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(LEG, LEG, WEIGHT, WEIGHT)
def test_fusion_scores_exactly_the_union_and_is_bounded(
    lexical: list[ScoredId], vector: list[ScoredId], wl: float, wv: float
) -> None:
    legs, weights = {"lexical": lexical, "vector": vector}, {"lexical": wl, "vector": wv}
    union = {h.memory_id for h in lexical} | {h.memory_id for h in vector}
    for fused in (fuse_rrf(legs, weights), fuse_weighted(legs, weights)):
        assert set(fused) == union
        assert all(0.0 <= score <= wl + wv + 1e-9 for score in fused.values())
    # Order of the legs in the mapping does not matter.
    swapped = {"vector": vector, "lexical": lexical}
    assert fuse_rrf(swapped, weights) == fuse_rrf(legs, weights)


@settings(max_examples=300, deadline=None)
@given(LEG)
def test_leg_ranks_share_a_rank_exactly_when_scores_tie(hits: list[ScoredId]) -> None:
    ranks = leg_ranks(hits)
    for a in hits:
        for b in hits:
            assert (ranks[a.memory_id] == ranks[b.memory_id]) == (a.score == b.score)
            if a.score > b.score:
                assert ranks[a.memory_id] < ranks[b.memory_id]


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0, 1),
    st.integers(0, 10_000),
    st.integers(0, 500),
    st.integers(0, 500),
    st.integers(0, 10_000),
)
def test_the_rerank_factor_stays_within_ten_percent(
    importance: float, access: int, helpful: int, unhelpful: int, age_days: int
) -> None:
    newest = datetime(2026, 6, 1, tzinfo=UTC)
    signals = RankingSignals(
        importance=importance,
        access_count=access,
        created_at=newest - timedelta(days=age_days),
        helpful=helpful,
        unhelpful=unhelpful,
    )
    assert 0.9 - 1e-9 <= rerank_factor(signals, newest) <= 1.1 + 1e-9


@given(st.one_of(st.none(), st.integers(-(10**12), 10**12)))
def test_ttl_is_clamped_to_one_second_to_thirty_days_and_says_so(ttl: int | None) -> None:
    clamped, moved = clamp_ttl(ttl)
    if ttl is None:
        assert (clamped, moved) == (None, False)
        return
    assert clamped is not None and 1 <= clamped <= MAX_STATE_TTL
    assert moved == (clamped != ttl)
    if 1 <= ttl <= MAX_STATE_TTL:
        assert clamped == ttl
