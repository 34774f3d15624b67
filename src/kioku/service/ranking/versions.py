"""Stage ``versions``: newer fact first. When two of the top results are versions of one fact,
the newer takes the better place (the older, for a question about the past); a question
whose tense says nothing, or a ranking of one, skips the stage (``applies``;
``search/versions.py``, ``search/past.py``)."""

from __future__ import annotations

from dataclasses import replace

from kioku.search.versions import order_versions, version_window
from kioku.service.ranking.state import Ranking, Tools


def applies(ranking: Ranking) -> bool:
    """Only a question that says whether it asks about now or about the past, and only when
    there are two candidates to put in order."""
    return ranking.query.tense != "either" and len(ranking.ranked) > 1


def run(ranking: Ranking, tools: Tools) -> None:
    tense = ranking.query.tense
    versions = tools.store.version_signals(ranking.ws, version_window(ranking.ranked))
    for memory_id, signal in versions.items():  # not stored yet: the ``pending`` stage's
        if signal.vector is None and memory_id in ranking.fresh_vectors:
            versions[memory_id] = replace(signal, vector=ranking.fresh_vectors[memory_id])
    ranking.ranked, factors = order_versions(ranking.ranked, versions, past=tense == "past")
    ranking.record("newer_first", factors)
