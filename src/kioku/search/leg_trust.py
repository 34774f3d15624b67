"""Query-dependent leg weights: the lexical leg speaks as loud as its best match stands out.

Weighted fusion min-max normalises each leg, so the lexical leg's best hit always counts 1.0,
whether it matched the question's rare words or only a stray common one. When the lexical
leg's best score stands well clear of the rest of what it matched (a name, a term only a few
memories hold), its ranking is worth trusting; when its scores are flat (a paraphrase sharing
only ordinary words with many memories, a question in another language), its first place is
an accident and the vector leg should decide.

``sharpness`` measures how far the lexical leg's best score stands above the rest of its
``WINDOW`` best, in standard deviations; the lexical weight is scaled by
``min(MAX_TRUST, sharpness / FULL_TRUST)``: below ``FULL_TRUST`` deviations the lexical leg
gives way, above it the lexical leg speaks louder than the vector leg (up to ``MAX_TRUST``
times its set weight). The vector leg keeps its weight. The constants were chosen on the LoCoMo
development half (conversations 26, 41, 43) and every other golden query of each bucket
(docs/benchmarks.md, *Hybrid never below its legs*).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kioku.ranking_records import ScoredId

WINDOW = 40
"""How many of the lexical leg's best hits the spread is measured on (recall's shallowest
leg depth, so a deeper ``k`` does not change the verdict)."""
FULL_TRUST = 3.0
"""Standard deviations above the rest at which the lexical leg keeps its set weight."""
MAX_TRUST = 1.5
"""The most the lexical weight is multiplied by, at ``FULL_TRUST × MAX_TRUST`` deviations."""


def sharpness(hits: Sequence[ScoredId], window: int = WINDOW) -> float | None:
    """How many standard deviations the best score stands above the mean of the ``window``
    best; ``None`` with fewer than two hits or equal scores (nothing to compare against)."""
    scores = np.fromiter((hit.score for hit in hits[:window]), dtype=np.float64)
    if scores.size < 2:
        return None
    spread = float(scores.std())
    if spread <= 0.0:
        return None
    return float((scores[0] - scores.mean()) / spread)


def trusted_weights(
    legs: Mapping[str, Sequence[ScoredId]], weights: Mapping[str, float]
) -> dict[str, float]:
    """``weights`` with the lexical leg's scaled by how sharply its best hit stands out
    (unchanged when either leg is missing or the lexical leg cannot be judged)."""
    scaled = dict(weights)
    lexical = legs.get("lexical")
    if not lexical or "vector" not in legs:
        return scaled
    sharp = sharpness(lexical)
    if sharp is not None:
        trust = min(MAX_TRUST, max(0.0, sharp) / FULL_TRUST)
        scaled["lexical"] = scaled.get("lexical", 1.0) * trust
    return scaled
