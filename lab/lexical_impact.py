"""Safe bounds for impact-ordered BM25 postings whose order does not depend on avgdl.

A posting of term t in memory d carries tf (t's occurrences in d) and dl (d's length). Its
BM25 share is

    share(tf, dl) = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)).

avgdl moves with every write, so an order written once must not depend on it. Within one tf,
the share falls strictly as dl grows, for every avgdl > 0 (dl only appears in the
denominator, with the positive factor k1 * b / avgdl). So postings kept in one stream per
(term, tf), ordered by dl ascending, are read best share first whatever avgdl is, and the
postings of a stream left unread from length ``D`` on share at most ``share(tf, D)``: the
bound is exact (reached by a memory of that length), not an estimate.

``length_floor`` inverts that: the least length ``D`` from which every posting of the
stream shares at most ``tau`` (read the lengths below ``D``, leave the rest). A search that
picks a ``tau_t`` per term with ``sum(tau_t) < theta`` (a score at least k memories reach)
and reads, for every term, the postings above its ``tau_t`` has every memory scoring
``theta`` or more among what it read: a memory whose every term shares at most ``tau_t``
scores at most ``sum(tau_t)``.

Not used by the product's search (so it left ``src/kioku/storage/``):
``lab/pg_postings_study.py`` measured postings read this way at 1M memories and found them
slower than the GIN leg (docs/benchmarks-postgres-scale.md, "Impact-ordered postings"); the
bounds stay here, tested by ``lab/test_lexical_impact.py``, for a block-max design that would
reuse them.
"""

from __future__ import annotations

import math

from kioku.storage.bm25_constants import K1, B


def share(weight: float, tf: int, dl: float, avgdl: float) -> float:
    """BM25's share of a term of idf ``weight`` held ``tf`` times by a memory of length
    ``dl`` (the scoring statement's arithmetic)."""
    return weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


def length_floor(weight: float, tf: int, avgdl: float, tau: float) -> int:
    """The least length ``D`` >= 0 such that every memory of length ``D`` or more holding the
    term ``tf`` times shares at most ``tau`` (its postings from ``D`` on may stay unread).
    ``tau`` below the share's infimum (0 or less) has no such length: returns a length no
    memory reaches (every posting is read)."""
    if tau <= 0:
        return 2**31 - 1
    # share <= tau  <=>  dl >= avgdl / (k1 b) * (tf * ((k1 + 1) weight / tau - 1) - k1 (1 - b))
    exact = avgdl / (K1 * B) * (tf * ((K1 + 1) * weight / tau - 1) - K1 * (1 - B))
    floor = max(0, math.ceil(exact)) if math.isfinite(exact) else 2**31 - 1
    floor = min(floor, 2**31 - 1)
    # The closed form rounds: settle on the integer boundary with the share itself.
    while floor < 2**31 - 1 and share(weight, tf, floor, avgdl) > tau:
        floor += 1
    while floor > 0 and share(weight, tf, floor - 1, avgdl) <= tau:
        floor -= 1
    return floor


def unread_bound(weight: float, tf: int, avgdl: float, floor: int) -> float:
    """The most a posting of the (term, ``tf``) stream at length ``floor`` or more shares:
    the share at ``floor`` itself, widened by a hair so that rounding never puts it below
    a share the database computes."""
    return share(weight, tf, floor, avgdl) * (1 + 1e-9)
