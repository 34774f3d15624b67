"""The common-terms cutoff both lexical legs share (Lucene's common-terms query).

Scoring a memory costs time on either backend, and an OR over the query's terms makes every
memory holding any of them a candidate: at a million memories a speaker's name or a year can
be in most of them. Above a budget of postings, only the rarer terms select the candidates;
the common ones still add to the scores of the memories a rarer term found.
"""

from __future__ import annotations

import math
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


def completing_groups(
    bounds: Mapping[str, float], threshold: float, max_groups: int
) -> list[tuple[str, ...]] | None:
    """What the cutoff may have missed, as sets of left-out terms (max-score's certificate).

    ``bounds`` holds, for each term the cutoff left out of the selection, the most it can add
    to a score (BM25: ``term_bound``, or at worst idf x (k1 + 1), the saturation limit);
    ``threshold`` is the last score of the top k found. A memory holding none of the selected
    terms scores at most the sum of the bounds of the terms it holds, so it can reach the top
    k only if it holds every term of one of the returned sets (each a shortest prefix, in
    falling bound order, of such a term set whose bounds add up to ``threshold``). ``[]``:
    nothing left out can reach the top k, the cutoff's answer is exact. ``None``: more than
    ``max_groups`` sets."""
    ordered = sorted(bounds, key=lambda term: (-bounds[term], term))
    rest = [0.0] * (len(ordered) + 1)
    for i in range(len(ordered) - 1, -1, -1):
        rest[i] = rest[i + 1] + bounds[ordered[i]]
    groups: list[tuple[str, ...]] = []

    def walk(start: int, chosen: tuple[str, ...], total: float) -> bool:
        for j in range(start, len(ordered)):
            if total + rest[j] < threshold:
                return True  # not even every term left together reaches it
            term = ordered[j]
            if total + bounds[term] >= threshold:
                groups.append((*chosen, term))
                if len(groups) > max_groups:
                    return False
            elif not walk(j + 1, (*chosen, term), total + bounds[term]):
                return False
        return True

    return groups if walk(0, (), 0.0) else None


def expected_matches(groups: Sequence[Sequence[str]], dfs: Mapping[str, int], n: int) -> float:
    """How many memories hold every term of some group, were terms independent: the size of
    the extra search ``completing_groups`` asks for."""
    total = 0.0
    for group in groups:
        share = float(n)
        for term in group:
            share *= dfs[term] / max(n, 1)
        total += share
    return total


def term_bound(
    idf: float, max_tf: float, min_length_per_tf: float, avgdl: float, k1: float, b: float
) -> float:
    """The most a term can add to a BM25 score in a corpus where it occurs at most ``max_tf``
    times in one memory and every memory holding it has ``dl / tf >= min_length_per_tf``.

    The share idf x tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)) is
    idf (k1 + 1) / (1 + k1 ((1 - b) / tf + b (dl / tf) / avgdl)): it grows with tf and falls
    with dl / tf, so the expression at (``max_tf``, ``min_length_per_tf``) bounds every
    memory's share, even when no one memory has both. Never above idf x (k1 + 1); a term no
    memory holds (``max_tf`` 0) adds nothing."""
    if max_tf <= 0 or math.isinf(min_length_per_tf):
        return 0.0
    if avgdl <= 0:
        return idf * (k1 + 1)
    ratio = max(min_length_per_tf, 0.0)
    return idf * (k1 + 1) / (1 + k1 * ((1 - b) / max_tf + b * ratio / avgdl))
