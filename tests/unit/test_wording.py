"""``kioku.wording``: the small rules every human-facing line follows."""

from __future__ import annotations

import pytest

from kioku.wording import count, duration, listing, number, plain, quoted, times


@pytest.mark.parametrize(
    ("n", "said"), [(0, "0 memories"), (1, "1 memory"), (2, "2 memories"), (11, "11 memories")]
)
def test_count_puts_the_noun_in_the_right_form(n: int, said: str) -> None:
    assert count(n, "memory", "memories") == said


def test_count_makes_a_regular_plural_by_itself() -> None:
    assert (count(1, "edge"), count(3, "edge")) == ("1 edge", "3 edges")


@pytest.mark.parametrize(
    ("n", "said"), [(0, "never"), (1, "once"), (2, "twice"), (3, "3 times"), (21, "21 times")]
)
def test_times_says_how_often(n: int, said: str) -> None:
    assert times(n) == said


def test_number_rounds_floats_and_leaves_the_rest() -> None:
    assert number(0.18999956919658792) == "0.19"
    assert number(0.49999718865542964, 3) == "0.500"
    assert (number(7), number(True), number("x")) == ("7", "yes", "x")


def test_plain_never_prints_a_python_repr() -> None:
    said = plain({"weight": 0.18999956919658792, "origin": "declared", "tags": ["a", "b"],
                  "superseded_by": None, "pinned": False})  # fmt: skip
    assert said == "weight 0.19, origin declared, tags a, b, superseded by none, pinned no"
    assert plain([]) == "none" and plain({}) == "none"


def test_listing_joins_with_and() -> None:
    assert [listing([]), listing(["a"]), listing(["a", "b", "c"])] == ["none", "a", "a, b and c"]


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(5, "5 s"), (90, "1 min"), (3600, "1 h"), (3 * 3600 + 300, "3 h 5 min"),
     (86_400, "24 h"), (2 * 86_400, "2 days"), (30 * 86_400 + 7200, "30 days 2 h")],
)  # fmt: skip
def test_duration_reads_as_a_span(seconds: int, said: str) -> None:
    assert duration(seconds) == said


def test_quoted_is_not_a_python_repr() -> None:
    assert quoted("it's") == '"it\'s"'
