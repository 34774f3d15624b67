"""The common-terms cutoff both lexical legs share (Lucene's common-terms query).

Scoring a memory costs time on either backend, and an OR over the query's terms makes every
memory holding any of them a candidate: at a million memories a speaker's name or a year can
be in most of them. Above a budget of postings, only the rarer terms select the candidates;
the common ones still add to the scores of the memories a rarer term found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def candidate_terms(
    terms: Sequence[str], dfs: Mapping[str, int], limit: int, budget: int
) -> list[str]:
    """The terms whose memories are scored: all of them while their document frequencies add
    up to at most ``budget``. Above that, the rarest first, for as long as fewer than
    ``limit`` memories are covered or the next term still fits the budget: the common terms
    then only add to the score of memories that a rarer term found (the cutoff frequency of
    Lucene's common-terms query). Every term still counts in every score."""
    if sum(dfs[term] for term in terms) <= budget:
        return list(terms)
    chosen: list[str] = []
    covered = 0
    for term in sorted(terms, key=lambda t: (dfs[t], t)):
        if chosen and covered >= limit and covered + dfs[term] > budget:
            break
        chosen.append(term)
        covered += dfs[term]
    return chosen
