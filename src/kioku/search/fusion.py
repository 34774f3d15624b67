"""Fusing the ranked lists of the search legs into one."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kioku.ranking_records import ScoredId
from kioku.search.language import Language


def leg_ranks(hits: Sequence[ScoredId]) -> dict[str, int]:
    """Competition ranks ("1224") of a leg's hits, best first: equal scores share a rank.

    Without this, memories with identical BM25 scores would be ranked by their (random) ids
    and fusion would depend on which uuid a memory happened to get.
    """
    ranks: dict[str, int] = {}
    previous: float | None = None
    rank = 0
    for position, hit in enumerate(hits, start=1):
        if hit.score != previous:
            rank, previous = position, hit.score
        ranks[hit.memory_id] = rank
    return ranks


def fuse_rrf(
    legs: Mapping[str, Sequence[ScoredId]], weights: Mapping[str, float], k: int = 60
) -> dict[str, float]:
    """Reciprocal-rank fusion: ``sum(weight / (k + rank))`` over the legs (tie-aware ranks)."""
    fused: dict[str, float] = {}
    for leg, hits in legs.items():
        weight = weights.get(leg, 1.0)
        for memory_id, rank in leg_ranks(hits).items():
            fused[memory_id] = fused.get(memory_id, 0.0) + weight / (k + rank)
    return fused


def fuse_weighted(
    legs: Mapping[str, Sequence[ScoredId]],
    weights: Mapping[str, float],
    blind: Mapping[str, Collection[str]] | None = None,
) -> dict[str, float]:
    """Weighted sum of min-max normalised scores (a missing leg contributes 0).

    ``blind`` names, per leg, memories that leg could not have found whatever they say (the
    lexical leg and a memory in another language than the query): such a leg abstains on
    them instead of voting 0, and the legs that could see the memory carry the whole weight.
    """
    fused: dict[str, float] = {}
    for leg, hits in legs.items():
        if not hits:
            continue
        weight = weights.get(leg, 1.0)
        high = max(hit.score for hit in hits)
        low = min(hit.score for hit in hits)
        span = high - low
        for hit in hits:
            normalised = (hit.score - low) / span if span > 0 else 1.0
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + weight * normalised
    total = sum(weights.get(leg, 1.0) for leg in legs)
    unseen = abstaining_weight(legs, weights, blind)
    for memory_id, weight in unseen.items():
        if memory_id in fused and weight < total:
            fused[memory_id] *= total / (total - weight)
    return fused


def abstaining_weight(
    legs: Mapping[str, Sequence[ScoredId]],
    weights: Mapping[str, float],
    blind: Mapping[str, Collection[str]] | None,
) -> dict[str, float]:
    """Per memory, the summed weight of the searched legs that are ``blind`` to it."""
    unseen: dict[str, float] = {}
    for leg, memory_ids in (blind or {}).items():
        if leg in legs:
            for memory_id in memory_ids:
                unseen[memory_id] = unseen.get(memory_id, 0.0) + weights.get(leg, 1.0)
    return unseen


def add_rank_term(
    fused: Mapping[str, float],
    legs: Mapping[str, Sequence[ScoredId]],
    weights: Mapping[str, float],
    rank_weights: Mapping[str, float],
    blind: Mapping[str, Collection[str]] | None = None,
) -> dict[str, float]:
    """``fused`` plus a term from each candidate's rank in each leg: ``Σ rank_weight(leg) ×
    weight(leg) / rank`` (tie-aware ranks: a leg's first gains ``rank_weight × weight``, its
    second half that, its tenth a tenth).

    Min-max scores say how far ahead of the rest each hit is, and how the two legs' scores
    happen to be spread can outvote their order: a memory the lexical leg ranks first and
    clear of the rest may end below one both legs ranked second or third. The rank term gives
    each leg's own order a say; ``weights`` are the leg weights fusion used (leg trust and
    the language view included), so a leg fusion trusts less also ranks less. A memory a leg
    is ``blind`` to has its other legs' terms scaled up as ``fuse_weighted`` scales its
    score, so a leg that abstains costs nothing here either. Legs absent from
    ``rank_weights`` (or at 0) add nothing: all at 0 returns ``fused`` unchanged, and so
    does a search where fewer than two legs found anything (one leg's order is its scores'
    order already: nothing to weigh, and single-leg recalls stay as they were).
    """
    if sum(1 for hits in legs.values() if hits) < 2:
        return dict(fused)
    total = sum(weights.get(leg, 1.0) for leg in legs)
    unseen = abstaining_weight(legs, weights, blind)
    out = dict(fused)
    for leg, hits in legs.items():
        share = rank_weights.get(leg, 0.0) * weights.get(leg, 1.0)
        if share <= 0:
            continue
        for memory_id, rank in leg_ranks(hits).items():
            missing = unseen.get(memory_id, 0.0)
            scale = total / (total - missing) if 0 < missing < total else 1.0
            out[memory_id] = out.get(memory_id, 0.0) + share * scale / rank
    return out


def rank_weights_for(query_language: Language, lexical: float, vector: float) -> dict[str, float]:
    """The rank weights a query in ``query_language`` (``language_of``) is fused with: the
    context's ``lexical`` / ``vector``, except for a query in Japanese, which gets none
    (fusion by scores alone).

    The term was chosen for a failure measured on English (a lexical first place, clear of the
    rest, lost to a short chat line in the two legs' score spread). A Japanese query reaches the
    lexical leg as Sudachi short units, compounds cut into pieces many memories share, and
    there the lexical leg's first place is what the term should not push: on JSQuAD, where
    scores alone already rank above both legs, the term only cost (recall@1 0.900 -> 0.891),
    and on the golden ``japanese`` bucket it put two wrong lexical firsts on top. Measured in
    docs/benchmarks.md (the rank term, 2026-12-04).
    """
    if query_language == "ja":
        return {}
    return {"lexical": lexical, "vector": vector}
