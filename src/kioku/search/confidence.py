"""How much the result set of a recall deserves to be trusted, in four words, each a promise.

- ``high``: the first result is relevant;
- ``moderate``: something relevant is probably among the results, not surely first;
- ``low``: probably nothing relevant: a hint at most;
- ``none``: nothing in the results is relevant (or there are none).

Each level is read from a few signals of the set (``ConfidenceEvidence``): how close the
nearest memory is in meaning (the vector leg's best raw cosine), how much of the query the
first result holds (its share of the query's terms), how sharply the lexical leg's best match
stands out (``leg_trust.sharpness``) and how far the first result leads the second. Two
logistic models turn them into probabilities, one that the first result is relevant
(``high``) and one that a relevant memory is among the results (``moderate`` / ``low`` /
``none``); their weights and the probability each level needs were fitted on development
data only (LoCoMo conversations 26, 41, 43 with questions asked of their own and of another
conversation; half the JSQuAD articles, asked of their own and of other articles) and checked
on data they never saw (docs/benchmarks.md, *Calibrated confidence*; the study is
``lab/confidence_study.py``).

A cosine means something only on the scale it was fitted on: with another embedder (or
none), the levels come from the lexical signals alone (``WITHOUT_VECTOR``, fitted on the same
data without the cosine). When the legs disagree across languages (``crossed``), the set is
never ``high``: the lexical leg's vote says nothing about a memory it cannot read.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kioku.ranking_records import ScoredId
from kioku.search.leg_trust import sharpness
from kioku.vocabulary import Confidence

CALIBRATED_MODEL = "multilingual-e5-small"
"""The embedder family whose cosines the constants were fitted on (the bundled model, on
either runtime): a vector score from any other model is not read."""
COVERAGE_CHARS = 4000
"""How much of the first result's text is searched for the query's terms."""


@dataclass(frozen=True)
class ConfidenceEvidence:
    """What a recall's confidence is judged from, read once from the ranking and its results."""

    found: bool
    """Recall returned at least one result."""
    closest: float | None
    """The vector leg's best raw cosine (before ``languages`` puts scores on one scale), or
    ``None`` when it did not run, found nothing, or its model is not ``CALIBRATED_MODEL``."""
    coverage: float
    """The share of the query's distinct terms that occur in the first result's text, when
    the lexical leg found it (0 otherwise: its words are not what found it; a dead lexical
    leg must not leave recall sure of an exact quote)."""
    sharpness: float | None
    """How many standard deviations the lexical leg's best score stands above its others."""
    margin: float
    """How far the first score leads the second, as a share of the first (0 without a
    second)."""
    crossed: bool = False
    """The legs disagree across languages: never ``high``."""


@dataclass(frozen=True)
class Model:
    """A logistic model of the evidence: ``intercept + Σ weight × signal``."""

    intercept: float
    closest: float
    coverage: float
    sharpness: float
    margin: float

    def probability(self, evidence: ConfidenceEvidence) -> float:
        """The modelled probability for ``evidence`` (a missing signal counts 0)."""
        z = (
            self.intercept
            + self.closest * (evidence.closest or 0.0)
            + self.coverage * evidence.coverage
            + self.sharpness * (evidence.sharpness or 0.0)
            + self.margin * evidence.margin
        )
        return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class Calibration:
    """The two models and the probability each level needs."""

    first_relevant: Model
    """P(the first result is relevant)."""
    any_relevant: Model
    """P(a relevant memory is among the results)."""
    high: float
    """``first_relevant`` at least this: ``high``."""
    moderate: float
    """``any_relevant`` at least this: ``moderate``..."""
    low: float
    """...at least this: ``low``; below it, ``none``."""


WITH_VECTOR = Calibration(
    first_relevant=Model(
        intercept=-45.5033, closest=46.2264, coverage=3.5787, sharpness=0.4851, margin=5.0606
    ),
    any_relevant=Model(
        intercept=-57.0063, closest=62.2908, coverage=6.1411, sharpness=0.2685, margin=1.2654
    ),
    high=0.9,
    moderate=0.37,
    low=0.0031,
)
"""Fitted with the bundled model's cosines (``lab/confidence_study.py fit``)."""
WITHOUT_VECTOR = Calibration(
    first_relevant=Model(
        intercept=-7.3099, closest=0.0, coverage=6.5201, sharpness=0.5424, margin=4.1023
    ),
    any_relevant=Model(
        intercept=-6.3319, closest=0.0, coverage=9.6734, sharpness=0.3952, margin=1.0022
    ),
    high=0.99,
    moderate=0.66,
    low=0.0027,
)
"""Fitted on the same questions with the cosine left out: any other embedder, or none."""


class Named(Protocol):
    """An embedder, as far as confidence cares: its name."""

    @property
    def name(self) -> str: ...


LEVELS: tuple[Confidence, ...] = ("none", "low", "moderate", "high")
"""The levels, least sure first."""


def meets(confidence: Confidence, minimum: Confidence | None) -> bool:
    """Whether ``confidence`` is at least ``minimum`` (no minimum: always)."""
    return minimum is None or LEVELS.index(confidence) >= LEVELS.index(minimum)


def is_calibrated(embedder: Named | None) -> bool:
    """Whether ``embedder``'s cosines are on the scale ``WITH_VECTOR`` was fitted on."""
    return embedder is not None and CALIBRATED_MODEL in embedder.name


def term_coverage(terms: Sequence[str], text: str) -> float:
    """The share of the distinct query ``terms`` (the lexical leg's tokens) that occur in
    ``text`` (its first ``COVERAGE_CHARS``, NFKC and case-folded like the tokens): a
    substring test, not a second tokenisation, so a long Japanese memory costs no Sudachi
    pass."""
    distinct = set(terms)
    if not distinct:
        return 0.0
    folded = unicodedata.normalize("NFKC", text[:COVERAGE_CHARS]).casefold()
    return sum(term in folded for term in distinct) / len(distinct)


def gather_evidence(
    terms: Sequence[str],
    top: tuple[str, str] | None,
    scores: Sequence[float],
    lexical: Sequence[ScoredId] | None,
    closest: float | None,
    *,
    crossed: bool = False,
) -> ConfidenceEvidence:
    """The evidence of one recall: the query's ``terms``, the first result's id and text
    (``None``: no result), the final scores best first (only the first two are read), the
    lexical leg's hits and the vector leg's best raw cosine (``None`` when not to be read)."""
    margin = 0.0
    if len(scores) >= 2 and scores[0] > 0:
        margin = max(0.0, (scores[0] - scores[1]) / scores[0])
    matched = top is not None and any(hit.memory_id == top[0] for hit in lexical or ())
    return ConfidenceEvidence(
        found=top is not None,
        closest=closest,
        coverage=term_coverage(terms, top[1]) if top is not None and matched else 0.0,
        sharpness=sharpness(lexical) if lexical else None,
        margin=margin,
        crossed=crossed,
    )


def judge_confidence(evidence: ConfidenceEvidence) -> Confidence:
    """The level ``evidence`` earns (see the module docstring for what each promises)."""
    if not evidence.found:
        return "none"
    calibration = WITH_VECTOR if evidence.closest is not None else WITHOUT_VECTOR
    if not evidence.crossed and calibration.first_relevant.probability(evidence) >= (
        calibration.high
    ):
        return "high"
    found = calibration.any_relevant.probability(evidence)
    if found >= calibration.moderate:
        return "moderate"
    return "low" if found >= calibration.low else "none"
