"""``search.thread_scores.thread_lift``: each candidate moves a share of the way up to its
thread's best score; a thread's best and memories in no thread gain nothing."""

from __future__ import annotations

import pytest

from kioku.search.thread_scores import thread_lift


def test_members_close_a_share_of_the_gap_to_their_threads_best() -> None:
    ranked = [(2.0, "a1"), (1.5, "x"), (1.0, "b1"), (0.5, "a2"), (0.2, "b2")]
    threads = {"a1": ("c", "a"), "a2": ("c", "a"), "b1": ("c", "b"), "b2": ("c", "b")}
    lift = thread_lift(ranked, threads, 0.25)
    assert lift == pytest.approx({"a2": 0.25 * 1.5, "b2": 0.25 * 0.8})


def test_the_same_thread_name_in_two_contexts_is_two_threads() -> None:
    ranked = [(2.0, "a"), (0.4, "b")]
    assert thread_lift(ranked, {"a": ("c1", "t"), "b": ("c2", "t")}, 0.5) == {}
    assert thread_lift(ranked, {"a": ("c1", "t"), "b": ("c1", "t")}, 0.5) == {"b": 0.8}


def test_weight_zero_lifts_nothing() -> None:
    assert thread_lift([(2.0, "a"), (1.0, "b")], {"a": ("c", "t"), "b": ("c", "t")}, 0.0) == {}
