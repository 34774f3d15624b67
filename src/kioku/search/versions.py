"""Newer fact first: when two of the top results are two versions of one fact, the newer one
takes the better place, unless the query asks about the past (``past.query_tense``): then the
older. ``recall`` does not call this stage for a question whose tense says nothing.

Two candidates are **versions of one fact** when all of these hold:

- both are among the top ``WINDOW`` of the ranking, scored above 0 and have a stored vector;
- they belong to one context and were written at least ``MIN_GAP`` apart (the items of one
  batch or import are stamped microseconds apart: neither is an update of the other);
- their vectors are much closer to each other than to the rest of the window: cosine at least
  ``MIN_MARGIN`` above the median cosine between the two and the other window members (never
  below ``REFERENCE_FLOOR`` + ``MIN_MARGIN``). A bare cosine threshold cannot work: the bundled
  model's cosines are compressed, and in a chat log every turn is 0.9 from its neighbours;
- their summaries share words, Jaccard of their token sets ≥ ``MIN_OVERLAP`` (the same
  subject named: the vector alone puts "Alice likes tea" near "Bob likes coffee").

Versions form groups in which **every two members are versions of each other**, built from the
best-placed candidate down: a candidate joins the first group all of whose members it is a
version of. Linking by chains instead (connected components) let a memory close to only one
member join the whole group: a note on booking meeting rooms (会議室), a version of nothing
but the old weekly-meeting note, joined it and the current one and, being newest, took first
place for 毎週のチームミーティングはいつ？, pushing the current note from second to seventh
(docs/benchmarks.md, 2026-12-04 "Hybrid below its legs"). A group acts only when the
ranking stands behind its best member (``standing.stands``): the order of versions far below
the answer matters to nobody. It keeps the places its members hold and the scores of those
places; only who sits where changes: newest first (oldest first for a question about the
past). Nothing else moves, so a memory that conflicts with no other is never touched: this is
not a recency boost (the re-ranker's capped recency nudge, ``rerank.py``, is that). A moved
result's factor is the score of its new place over its own score, so ``score`` stays the
product of the breakdown.

The thresholds suit the bundled multilingual-e5-small and were chosen on half the LoCoMo
conversations (docs/benchmarks.md); another model needs its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property

import numpy as np

from kioku.ranking_records import VersionSignals
from kioku.search.standing import stands
from kioku.search.tokenize import tokenize

WINDOW = 20
MIN_GAP = timedelta(seconds=1)
MIN_MARGIN = 0.06
REFERENCE_FLOOR = 0.82
MIN_OVERLAP = 0.1


@dataclass
class _Candidate:
    memory_id: str
    place: int
    score: float
    signals: VersionSignals
    unit: np.ndarray

    @cached_property
    def tokens(self) -> frozenset[str]:
        """The summary's tokens, made only for a pair whose vectors already qualify."""
        return frozenset(tokenize(self.signals.summary))


def version_window(ranked: Sequence[tuple[float, str]]) -> list[str]:
    """The ids whose ``VersionSignals`` the stage needs: the top ``WINDOW``."""
    return [memory_id for _, memory_id in ranked[:WINDOW]]


def order_versions(
    ranked: Sequence[tuple[float, str]],
    signals: Mapping[str, VersionSignals],
    *,
    past: bool,
) -> tuple[list[tuple[float, str]], dict[str, float]]:
    """``ranked`` (best first) with each group of versions reordered; returns the new ranking
    and the factor of every memory that moved (new place's score over its own)."""
    candidates = _candidates(ranked, signals)
    groups = _groups(candidates)
    reordered = list(ranked)
    factors: dict[str, float] = {}
    top = ranked[0][0] if ranked else 0.0
    for group in groups:
        if not stands(max(c.score for c in group), top):
            continue  # versions the ranking does not stand behind: their order matters little
        places = sorted(c.place for c in group)
        by_age = sorted(group, key=lambda c: (c.signals.created_at, -c.place))
        order = by_age if past else by_age[::-1]
        for place, candidate in zip(places, order, strict=True):
            if place == candidate.place:
                continue
            score = ranked[place][0]
            reordered[place] = (score, candidate.memory_id)
            factors[candidate.memory_id] = score / candidate.score
    return reordered, factors


def _candidates(
    ranked: Sequence[tuple[float, str]], signals: Mapping[str, VersionSignals]
) -> list[_Candidate]:
    found: list[_Candidate] = []
    for place, (score, memory_id) in enumerate(ranked[:WINDOW]):
        row = signals.get(memory_id)
        if row is None or row.vector is None or score <= 0:
            continue
        norm = float(np.linalg.norm(row.vector))
        if norm == 0:
            continue
        found.append(_Candidate(memory_id, place, score, row, row.vector / norm))
    return found


def _groups(candidates: list[_Candidate]) -> list[list[_Candidate]]:
    """Groups of two or more candidates, every two of them versions of each other, taken
    best place first (see the module docstring)."""
    close: dict[int, set[int]] = {}
    for same_dim in _by_dimension(candidates):
        units = np.stack([candidates[i].unit for i in same_dim])
        for x, y in _close_pairs(units @ units.T):
            a, b = same_dim[x], same_dim[y]
            if _versions(candidates[a], candidates[b]):
                close.setdefault(a, set()).add(b)
                close.setdefault(b, set()).add(a)
    taken: set[int] = set()
    groups: list[list[_Candidate]] = []
    for first in sorted(close, key=lambda i: candidates[i].place):
        if first in taken:
            continue
        members = [first]
        for other in sorted(close[first] - taken, key=lambda i: candidates[i].place):
            if all(other in close[m] for m in members[1:]):
                members.append(other)
        if len(members) > 1:
            taken.update(members)
            groups.append([candidates[m] for m in members])
    return groups


def _by_dimension(candidates: list[_Candidate]) -> list[list[int]]:
    """Indexes of the candidates, split by vector dimension (contexts may use other models)."""
    groups: dict[int, list[int]] = {}
    for i, candidate in enumerate(candidates):
        groups.setdefault(candidate.unit.shape[0], []).append(i)
    return list(groups.values())


def _close_pairs(cosines: np.ndarray) -> list[tuple[int, int]]:
    """The pairs (row indexes) whose cosine stands out: at least ``MIN_MARGIN`` above the median
    cosine between the two and every other row (never below ``REFERENCE_FLOOR``)."""
    n = len(cosines)
    first, second = np.triu_indices(n, 1)
    if n > 2:
        columns = np.arange(n)
        others = (columns[None, :] != first[:, None]) & (columns[None, :] != second[:, None])
        shape = (len(first), n - 2)
        around = np.concatenate(
            [cosines[first][others].reshape(shape), cosines[second][others].reshape(shape)], axis=1
        )
        typical = np.maximum(np.median(around, axis=1), REFERENCE_FLOOR)
    else:
        typical = np.full(len(first), REFERENCE_FLOOR)
    close = cosines[first, second] >= typical + MIN_MARGIN
    return [(int(x), int(y)) for x, y in zip(first[close], second[close], strict=True)]


def _versions(a: _Candidate, b: _Candidate) -> bool:
    """Two candidates whose vectors stand out together are versions of one fact when they are
    of one context, written apart, and name the same subject (see the module docstring)."""
    if a.signals.context_id != b.signals.context_id:
        return False
    if abs(a.signals.created_at - b.signals.created_at) < MIN_GAP:
        return False  # written together (one batch, one import): neither is the update
    union = len(a.tokens | b.tokens)
    return union > 0 and len(a.tokens & b.tokens) / union >= MIN_OVERLAP
