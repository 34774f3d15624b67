"""Stage ``signals``: one read of what the later stages need about every candidate the legs
found: re-ranking inputs (importance, age, accesses, feedback, thread, the tripwire's verdict),
whether it still waits for its vector (``pending``), and the head of its text (its language,
``languages``): no whole text.

A candidate purged between the legs and now has no signals: fusion leaves it out. The
lexical leg's candidates may have been read already (``read_ahead``, by ``legs`` while the
query embedding ran); then only the others are read here.
"""

from __future__ import annotations

from kioku.search.language import HEAD_CHARS
from kioku.service.ranking.state import Ranking, Tools


def read_ahead(ranking: Ranking, tools: Tools, memory_ids: list[str]) -> None:
    ranking.signals = tools.store.ranking_signals(ranking.ws, memory_ids, HEAD_CHARS)


def run(ranking: Ranking, tools: Tools) -> None:
    known = ranking.signals  # the lexical candidates', when ``legs`` read them while waiting
    found = dict.fromkeys(hit.memory_id for hits in ranking.ran.values() for hit in hits)
    missing = [memory_id for memory_id in found if memory_id not in known]
    signals = tools.store.ranking_signals(ranking.ws, missing, HEAD_CHARS) if missing else {}
    read = {**known, **signals}
    ranking.signals = {memory_id: read[memory_id] for memory_id in found if memory_id in read}
