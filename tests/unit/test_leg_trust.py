"""Query-dependent leg weights (``kioku.search.leg_trust``): pure functions."""

from __future__ import annotations

import pytest

from kioku.search.leg_trust import FULL_TRUST, MAX_TRUST, WINDOW, sharpness, trusted_weights
from kioku.storage.records import ScoredId


def hits(*scores: float) -> list[ScoredId]:
    return [ScoredId(f"m{i}", score) for i, score in enumerate(scores)]


def test_sharpness_is_how_many_deviations_the_best_stands_out() -> None:
    assert sharpness(hits(1.0, 1.0)) is None  # nothing stands out
    assert sharpness(hits(3.0)) is None  # nothing to compare with
    assert sharpness(hits(2.0, 1.0)) == pytest.approx(1.0)  # two hits: always one deviation
    flat = sharpness(hits(5.0, 4.9, 4.8, 4.7, 4.6, 4.5))
    sharp = sharpness(hits(9.0, *([1.0] * 30)))
    assert flat is not None and sharp is not None and sharp > FULL_TRUST > flat


def test_only_the_window_counts() -> None:
    head = [9.0] + [1.0] * (WINDOW - 1)
    assert sharpness(hits(*head, *([0.0] * 50))) == sharpness(hits(*head))


def test_a_flat_lexical_leg_gives_way_and_a_sharp_one_speaks_louder() -> None:
    vector = hits(0.9, 0.8)
    flat = trusted_weights({"lexical": hits(2.0, 1.9, 1.8), "vector": vector}, {"lexical": 1.0})
    assert 0.0 < flat["lexical"] < 0.5
    sharp = trusted_weights(
        {"lexical": hits(9.0, *([1.0] * 30)), "vector": vector}, {"lexical": 1.0, "vector": 1.0}
    )
    assert sharp == {"lexical": MAX_TRUST, "vector": 1.0}  # capped: 5.5 deviations


def test_weights_stand_when_there_is_nothing_to_judge() -> None:
    weights = {"lexical": 0.7, "vector": 1.0}
    alone = {"lexical": hits(2.0, 1.0)}  # no vector leg: nothing to give way to
    assert trusted_weights(alone, weights) == weights
    one = {"lexical": hits(2.0), "vector": hits(0.9)}
    assert trusted_weights(one, weights) == weights
