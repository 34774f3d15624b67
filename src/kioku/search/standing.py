"""Which results the ranking stands behind: the top result and those scoring at least
``FLOOR`` of its score.

With the default weighted fusion a result both legs rank first scores about 2, and one that a
single leg found scores at most 1, so at 0.5 a result that merely completes the top k (found
by one leg, far below the top) does not stand. Co-recall learning and ``include_related``
(``service/graph.py``) use the results that stand; the newer-fact-first stage
(``versions.py``) acts on a group of versions only when one of them stands.
"""

from __future__ import annotations

FLOOR = 0.5


def stands(score: float, top: float, floor: float = FLOOR) -> bool:
    """Whether a result scoring ``score`` stands beside a top result scoring ``top``."""
    return top > 0 and score > 0 and score >= floor * top
