"""Threads through both SDK clients: remember and remember_batch place memories in a thread,
the answer turn comes along in recall, a bad position is a typed error naming the field."""

from __future__ import annotations

import pytest

from kioku import Client, InvalidInputError


def test_threads_through_the_sdk(kioku: Client) -> None:
    first = kioku.remember("default", "Ken: which restaurant for the anniversary dinner?",
                           thread="chat", position=0)  # fmt: skip
    assert (first.thread, first.position) == ("chat", 0)
    batch = kioku.remember_batch(
        "default",
        [{"summary": "Aiko: Sakura Tei, by the river.", "thread": "chat"},
         *({"summary": f"the {w} was fine", "thread": w} for w in ("train", "film", "bus"))],
        wait=True,
    )  # fmt: skip
    answer = kioku.get_memory("default", str(batch.results[0].memory_id))
    assert (answer.thread, answer.position) == ("chat", 1)
    found = kioku.recall("default", "anniversary dinner restaurant", k=2)
    assert [hit.id for hit in found.results] == [first.id, answer.id]
    assert (found.results[1].score_breakdown.thread or 0) > 0
    with pytest.raises(InvalidInputError) as raised:
        kioku.remember("default", "x", position=3)
    assert raised.value.field == "position"
