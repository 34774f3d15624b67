"""Shared words count once: the vector leg's score of a memory that shares words with the query.

A multilingual embedder scores two texts in one language closer when they share words, whatever
they mean: 「十月の合宿はどこで行う？」 sits near 「十月の定例会議はオンラインで行う」 for 十月 and
行う. In a context in one language that is harmless (every candidate gets the same kind of
help), but where the candidates span languages only the memories in the query's own language
can get it, so a same-language memory that shares words outscores an answer in the other
language that shares none. The lexical leg already votes for those shared words; counting them
again in the vector leg is what tips the balance.

So, only where the vector leg's candidates span languages, a memory in the query's language
that the lexical leg matched loses ``SHARED_WORDS`` × its normalised lexical score (0 … 1) ×
the spread of the vector leg's best ``SPREAD_DEPTH`` scores. The spread puts the discount on
the scale of the differences that decide the order there. A lexical leg whose matches all
score alike (one match, say "TSB-481") discounts nothing: a match that stands alone is an
identifier or a quote, what the lexical leg is for, not incidental overlap (the golden set's
`exact` bucket lost such a query to the discount).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kioku.ranking_records import ScoredId
from kioku.search.language import Language

SHARED_WORDS = 0.5
"""Chosen on the golden set (docs/benchmarks.md, "Centred cross-language scores"): 0.2, 0.5
and 1.0 tried; 0.5 lost no query in any bucket, 1.0 won one more mixed-language query and
lost a trusted-only and a temporal one."""
SPREAD_DEPTH = 10


def discount_shared_words(
    vector: Sequence[ScoredId],
    lexical: Sequence[ScoredId],
    languages: Mapping[str, Language],
    query_language: Language,
) -> list[ScoredId]:
    """``vector`` with the discount above applied and re-sorted; unchanged when the lexical
    leg's matches all score alike or every candidate is in one language."""
    involved = {languages.get(hit.memory_id, query_language) for hit in vector}
    if not lexical or len(involved) < 2:
        return list(vector)
    high = max(hit.score for hit in lexical)
    low = min(hit.score for hit in lexical)
    span = high - low
    if span <= 0:  # a lone match (or a tie of all): an identifier or a quote, not incidental
        return list(vector)
    matched = {hit.memory_id: (hit.score - low) / span for hit in lexical}
    best = [hit.score for hit in vector[:SPREAD_DEPTH]]
    scale = SHARED_WORDS * (max(best) - min(best))
    discounted = [
        ScoredId(hit.memory_id, hit.score - scale * matched[hit.memory_id])
        if hit.memory_id in matched
        and languages.get(hit.memory_id, query_language) == query_language
        else hit
        for hit in vector
    ]
    return sorted(discounted, key=lambda hit: -hit.score)
