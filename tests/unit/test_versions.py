"""The newer-fact-first stage, the tense reader and the standing rule, as pure functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kioku.search.past import query_tense
from kioku.search.standing import stands
from kioku.search.versions import order_versions
from kioku.storage.records import VersionSignals

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def signals(
    summary: str, vector: np.ndarray | None, days: float, context: str = "c"
) -> VersionSignals:
    return VersionSignals(context, T0 + timedelta(days=days), summary, vector)


# Two versions of the staging port (close vectors, shared words) and three other facts whose
# vectors are far from them: the reference the pair must stand out from.
OLD = signals("staging database port 5433", unit(1, 0.05, 0, 0, 0), 0)
NEW = signals("staging database port moved to 6543", unit(1, 0.08, 0, 0, 0), 30)
OTHERS = {
    "tea": signals("alice likes green tea", unit(0.2, 1, 0, 0, 0), 40),
    "wifi": signals("guest wifi password", unit(0.2, 0, 1, 0, 0), 40),
    "ci": signals("ci runs on github actions", unit(0.2, 0, 0, 1, 0), 40),
}


def rank(*ids: str, scores: tuple[float, ...] = (2.0, 1.8, 0.9, 0.8, 0.7)) -> list:
    return [(scores[i], memory_id) for i, memory_id in enumerate(ids)]


def test_the_newer_version_takes_the_older_ones_place_and_score() -> None:
    ranked = rank("old", "new", "tea", "wifi", "ci")
    found = {"old": OLD, "new": NEW, **OTHERS}
    reordered, factors = order_versions(ranked, found, past=False)
    assert reordered == [(2.0, "new"), (1.8, "old"), *ranked[2:]]
    assert factors == {"new": pytest.approx(2.0 / 1.8), "old": pytest.approx(1.8 / 2.0)}


def test_a_question_about_the_past_puts_the_older_first() -> None:
    ranked = rank("new", "old", "tea", "wifi", "ci")
    found = {"old": OLD, "new": NEW, **OTHERS}
    reordered, _ = order_versions(ranked, found, past=True)
    assert [memory_id for _, memory_id in reordered[:2]] == ["old", "new"]


@pytest.mark.parametrize(
    "change",
    [
        {"new": signals("staging database port moved to 6543", NEW.vector, 30, "other")},
        {"new": signals("staging database port moved to 6543", NEW.vector, 0.000001)},
        {"new": signals("quarterly offsite in kyoto", NEW.vector, 30)},  # no shared word
        {"new": signals("staging database port moved to 6543", unit(0.5, 0.5, 0.5, 0, 0), 30)},
        {"new": signals("staging database port moved to 6543", None, 30)},
    ],
    ids=["other context", "written together", "other subject", "far vector", "no vector"],
)
def test_only_versions_of_one_fact_move(change: dict) -> None:
    ranked = rank("old", "new", "tea", "wifi", "ci")
    found = {"old": OLD, "new": NEW, **OTHERS, **change}
    assert order_versions(ranked, found, past=False) == (ranked, {})


def test_a_memory_that_is_a_version_of_one_member_only_does_not_join_the_group() -> None:
    # "rooms" is close to both in vector and shares a word (5433) with the old version only:
    # a chain old-new, old-rooms used to make one group of three, and the newest ("rooms")
    # took first place. Every two members of a group must be versions of each other.
    rooms = signals("5433 rooms booked", unit(1, 0.06, 0, 0, 0), 60)
    ranked = rank("old", "new", "tea", "wifi", "rooms", scores=(2.0, 1.8, 0.9, 0.8, 0.7))
    found = {"old": OLD, "new": NEW, "rooms": rooms, **OTHERS}
    reordered, factors = order_versions(ranked, found, past=False)
    assert reordered == [(2.0, "new"), (1.8, "old"), *ranked[2:]]
    assert set(factors) == {"new", "old"}


def test_versions_the_ranking_does_not_stand_behind_are_left_alone() -> None:
    ranked = rank("tea", "wifi", "ci", "old", "new", scores=(2.0, 1.9, 1.8, 0.5, 0.4))
    found = {"old": OLD, "new": NEW, **OTHERS}
    assert order_versions(ranked, found, past=False) == (ranked, {})


@pytest.mark.parametrize(
    ("query", "tense"),
    [
        ("Which port does the staging database use?", "now"),
        ("What do I check before merging?", "now"),
        ("What tool is used to deploy?", "now"),
        ("Is the cluster still on 1.27?", "now"),
        ("What did we use before Stripe?", "past"),
        ("Who used to lead support?", "past"),
        ("Which tracker did we previously use?", "past"),
        ("When did Caroline move to Kyoto?", "either"),
        ("Which port did we pick?", "either"),
        ("社内チャットは何を使っている？", "now"),
        ("デプロイ前に確認することは？", "now"),
        ("名前の由来は？", "now"),
        ("以前の連絡先は誰？", "past"),
        ("前は何を使っていた？", "past"),
        ("移行前のリージョンは？", "past"),
        ("昨日どこに行った？", "either"),
    ],
)
def test_query_tense(query: str, tense: str) -> None:
    assert query_tense(query) == tense


def test_a_result_stands_at_half_the_top_score() -> None:
    assert stands(1.0, 2.0) and not stands(0.9, 2.0)
    assert stands(0.3, 2.0, floor=0.1)
    assert not stands(0.0, 2.0, floor=0.0)
    assert not stands(1.0, 0.0)
