"""Putting vector scores across languages on one scale: each language's mean direction.

Two ways, chosen per context by ``search_config.language_calibration`` (docs/concepts.md):
``centered`` (the default, ``centre``) and ``shifted`` (``calibrate``, the first one).

A multilingual embedder places every memory of one language near that language's mean
direction, so the cosine between a query and a memory carries a term that depends only on the
memory's language, whatever it says: with multilingual-e5, any Japanese memory scores higher
against any query than an English one. In a context that holds both, a Japanese distractor
then beats the English answer on language alone.

The remedy is to measure each memory against its own language's baseline: a memory ``d`` of
language ``L`` scores ``q·d − q·μ_L`` (``μ_L`` the mean vector of ``L``), the cosine with
``L``'s mean direction removed from the memory, plus ``q·μ_Q`` of the query's own language so
that scores stay on the scale of a same-language match. Within one language this is a constant
shift: a context in a single language ranks exactly as before.

``centered`` goes further: it removes the language's mean direction from the memory *and*
the query language's mean query direction from the query, and scores their dot product
``(q − ν_Q)·(d − μ_L)`` (``ν_Q`` the mean query vector of the query's language): the memory's
own pull towards "any text of the query's language", ``ν_Q·d``, is taken away too, which the
shift cannot do since it depends on the memory. Within one language this is no longer a
constant shift, so it only runs where the candidates span languages (as the shift does).

``μ_L`` and ``ν_L`` are measured per embedder on built-in parallel sentences
(``kioku.search.parallel``), once per process, the first time a recall meets more than one
language: by ``kioku.embeddings.language_means``, since measuring takes the embedder and this
module, like all of search, is pure maths (it imports no embedder, tests/test_structure.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kioku.ranking_records import ScoredId
from kioku.search.language import Language

SHIFT = 0.75
"""How much of the gap between language baselines is taken away. All of it over-corrects
where one language's memories far outnumber the other's (the best of many shifted scores
wins); three quarters was chosen on a development probe and the golden set's japanese and
cross-lingual buckets, with both bundled runtimes (docs/embedders.md)."""


def centre(
    hits: Sequence[ScoredId],
    vectors: Mapping[str, np.ndarray | None],
    languages: Mapping[str, Language],
    query_vector: np.ndarray,
    query_language: Language,
    means: Mapping[Language, np.ndarray],
    query_means: Mapping[Language, np.ndarray],
) -> list[ScoredId]:
    """The vector leg's hits rescored ``(q − ν_Q)·(d − μ_L)`` and re-sorted; unchanged when
    every hit is in one language or a language involved has no mean. A hit whose vector is
    gone (purged since the search) keeps ``q·d − q·μ_L``, its expected centred score."""
    involved = {languages.get(hit.memory_id, query_language) for hit in hits}
    if len(involved) < 2 or not (involved | {query_language}) <= (
        means.keys() & query_means.keys()
    ):
        return list(hits)
    query = query_vector - query_means[query_language]
    rescored = []
    for hit in hits:
        mean = means[languages.get(hit.memory_id, query_language)]
        vector = vectors.get(hit.memory_id)
        if vector is None:
            score = hit.score - float(query_vector @ mean)
        else:
            score = float(query @ (vector - mean))
        rescored.append(ScoredId(hit.memory_id, score))
    return sorted(rescored, key=lambda hit: -hit.score)


def calibrate(
    hits: Sequence[ScoredId],
    languages: Mapping[str, Language],
    query_language: Language,
    offsets: Mapping[Language, float],
) -> list[ScoredId]:
    """The vector leg's hits rescored ``score − SHIFT · (offsets[L] − offsets[query language])``
    and re-sorted; unchanged when a language involved has no offset (nothing to calibrate with)
    or when every hit is in one language (the shift would be the same for all)."""
    involved = {languages.get(hit.memory_id, query_language) for hit in hits}
    if len(involved) < 2 or not (involved | {query_language}) <= offsets.keys():
        return list(hits)
    base = offsets[query_language]
    rescored = [
        ScoredId(
            hit.memory_id,
            hit.score - SHIFT * (offsets[languages.get(hit.memory_id, query_language)] - base),
        )
        for hit in hits
    ]
    return sorted(rescored, key=lambda hit: -hit.score)


def offsets_for(
    query_vector: np.ndarray, means: Mapping[Language, np.ndarray]
) -> dict[Language, float]:
    """``q·μ_L`` for each language with a mean."""
    return {language: float(query_vector @ mean) for language, mean in means.items()}
