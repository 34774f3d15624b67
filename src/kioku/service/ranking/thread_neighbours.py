"""Stage ``thread_neighbours`` (knob ``thread_weight``): a memory next to a strong hit of its
thread (the nearest turn before and after it) gains that share of the hit's score, and a
neighbour no leg found enters the ranking with it (``search/threads.py``); added to the
``thread`` breakdown. The lexical candidates' neighbours may have been read already
(``read_ahead``, by ``legs`` while the query embedding ran); then only the others' are read."""

from __future__ import annotations

from kioku.search.threads import thread_bonus, with_bonus
from kioku.service.ranking.state import Ranking, Tools


def read_ahead(ranking: Ranking, tools: Tools, memory_ids: list[str]) -> None:
    """Read the neighbours of those of ``memory_ids`` not read yet into ``ranking.neighbours``."""
    missing = [memory_id for memory_id in memory_ids if memory_id not in ranking.neighbours]
    if not missing:
        return
    pairs = tools.store.thread_neighbours(ranking.ws, ranking.context_ids, missing, ranking.flt)
    found = ranking.neighbours
    for memory_id in missing:
        found[memory_id] = []
    for memory_id, neighbour in pairs:
        found[memory_id].append(neighbour)


def run(ranking: Ranking, tools: Tools) -> None:
    candidates = [memory_id for _, memory_id in ranking.ranked]
    read_ahead(ranking, tools, candidates)
    pairs = [(m, other) for m in candidates for other in ranking.neighbours[m]]
    bonus = thread_bonus(ranking.ranked, pairs, ranking.config.thread_weight)
    if bonus:
        ranking.record("thread", bonus, add=True)
        ranking.ranked = with_bonus(ranking.ranked, bonus)
