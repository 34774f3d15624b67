"""Thread neighbours in the ranking: a memory next to a strong hit of its thread gains part of
that hit's score (docs/concepts.md, *Threads*).

The evidence for a question often sits in consecutive turns of one conversation (a question
and its answer, a statement and its follow-up), and the turn that holds the answer may share
no word with the question because it only makes sense after the turn before it. Each
candidate's score becomes ``score + weight * (sum of its thread neighbours' scores)``; a
neighbour that no leg found enters the ranking with what its neighbours give it.
"""

from __future__ import annotations

from collections.abc import Sequence


def thread_bonus(
    ranked: Sequence[tuple[float, str]], pairs: Sequence[tuple[str, str]], weight: float
) -> dict[str, float]:
    """The score each memory gains from its neighbours: ``pairs`` are (candidate, neighbour)
    of ``ranked``'s candidates (the nearest before and after it in one thread)."""
    score = {memory_id: value for value, memory_id in ranked}
    bonus: dict[str, float] = {}
    for candidate, neighbour in pairs:
        gain = weight * score.get(candidate, 0.0)
        if gain > 0:
            bonus[neighbour] = bonus.get(neighbour, 0.0) + gain
    return bonus


def with_bonus(
    ranked: Sequence[tuple[float, str]], bonus: dict[str, float]
) -> list[tuple[float, str]]:
    """``ranked`` with each bonus added, best first. Equal scores keep their old order; the
    memories only the bonus brought in follow, by id."""
    known = {memory_id for _, memory_id in ranked}
    scored = [(value + bonus.get(memory_id, 0.0), memory_id) for value, memory_id in ranked]
    newcomers = sorted(memory_id for memory_id in bonus if memory_id not in known)
    scored += [(bonus[memory_id], memory_id) for memory_id in newcomers]
    order = {memory_id: index for index, (_, memory_id) in enumerate(scored)}
    return sorted(scored, key=lambda pair: (-pair[0], order[pair[1]]))
