"""The avgdl-independent bounds of impact-ordered postings (``lab/lexical_impact.py``, the maths
of ``lab/pg_postings_study.py``), against brute force. Not part of ``make test``: run it with
``.venv/bin/python -m pytest lab/test_lexical_impact.py -q``."""

from __future__ import annotations

import random

import pytest
from lexical_impact import length_floor, share, unread_bound


def _cases(count: int) -> list[tuple[float, int, float, float]]:
    rng = random.Random(21)
    cases = []
    for _ in range(count):
        weight = rng.uniform(0.01, 14.0)
        tf = rng.randint(1, 8)
        avgdl = rng.uniform(1.0, 300.0)
        tau = rng.uniform(0.0, weight * 2.3)
        cases.append((weight, tf, avgdl, tau))
    return cases


@pytest.mark.parametrize(("weight", "tf", "avgdl", "tau"), _cases(300))
def test_length_floor_is_the_least_safe_length(
    weight: float, tf: int, avgdl: float, tau: float
) -> None:
    floor = length_floor(weight, tf, avgdl, tau)
    # Safe: every length from the floor on shares at most tau (the share falls with length).
    for dl in range(floor, floor + 400):
        assert share(weight, tf, dl, avgdl) <= tau
    # Least: one length shorter would leave a posting above tau unread.
    if floor > 0:
        assert share(weight, tf, floor - 1, avgdl) > tau


@pytest.mark.parametrize(("weight", "tf", "avgdl", "tau"), _cases(100))
def test_unread_bound_holds_for_any_avgdl_order(
    weight: float, tf: int, avgdl: float, tau: float
) -> None:
    # The stream's order (length ascending) is the share's order at every avgdl: the share at
    # the first unread length bounds every later posting of the stream.
    floor = length_floor(weight, tf, avgdl, tau) % 500
    bound = unread_bound(weight, tf, avgdl, floor)
    for other_avgdl in (avgdl, avgdl / 7, avgdl * 7):
        shares = [share(weight, tf, dl, other_avgdl) for dl in range(floor, floor + 300)]
        assert shares == sorted(shares, reverse=True)
    assert max(share(weight, tf, dl, avgdl) for dl in range(floor, floor + 300)) <= bound


def test_an_order_by_a_nominal_avgdl_would_not_be_safe() -> None:
    # Mixing tf in one order key computed at a nominal avgdl breaks at another avgdl: here a
    # posting after another at avgdl 20 shares more than it at avgdl 200. The streams per tf
    # exist for this reason.
    first, later = (1, 1), (2, 49)  # (tf, dl)
    assert share(1.0, *first, 20.0) > share(1.0, *later, 20.0)
    assert share(1.0, *first, 200.0) < share(1.0, *later, 200.0)


def test_nothing_is_left_unread_below_a_zero_tau() -> None:
    assert length_floor(3.0, 1, 20.0, 0.0) >= 2**31 - 1
    assert length_floor(3.0, 1, 20.0, -1.0) >= 2**31 - 1
