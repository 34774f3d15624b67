"""Stage ``signals``: one read of what the later stages need about every candidate the legs
found: re-ranking inputs (importance, age, accesses, feedback, thread, the tripwire's verdict),
whether it still waits for its vector (``pending``), and the head of its text (its language,
``languages``): no whole text.

A candidate purged between the legs and now has no signals: fusion leaves it out.
"""

from __future__ import annotations

from kioku.search.language import HEAD_CHARS
from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    found = dict.fromkeys(hit.memory_id for hits in ranking.ran.values() for hit in hits)
    if found:
        ranking.signals = tools.store.ranking_signals(ranking.ws, list(found), HEAD_CHARS)
