"""Stage ``thread_neighbours`` (knob ``thread_weight``): a memory next to a strong hit of its
thread (the nearest turn before and after it) gains that share of the hit's score, and a
neighbour no leg found enters the ranking with it (``search/threads.py``); added to the
``thread`` breakdown."""

from __future__ import annotations

from kioku.search.threads import thread_bonus, with_bonus
from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    pairs = tools.store.thread_neighbours(
        ranking.ws, ranking.context_ids, [memory_id for _, memory_id in ranking.ranked],
        ranking.flt,
    )  # fmt: skip
    bonus = thread_bonus(ranking.ranked, pairs, ranking.config.thread_weight)
    if bonus:
        ranking.record("thread", bonus, add=True)
        ranking.ranked = with_bonus(ranking.ranked, bonus)
