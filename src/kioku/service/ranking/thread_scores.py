"""Stage ``thread_scores`` (knob ``thread_score_weight``): each candidate moves that share of
the way up to the best score among its thread's candidates (``search/thread_scores.py``);
what it gained is its ``thread`` breakdown."""

from __future__ import annotations

from kioku.search.thread_scores import thread_lift
from kioku.search.threads import with_bonus
from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    threads = {m: signal.thread for m, signal in ranking.signals.items() if signal.thread}
    lift = thread_lift(ranking.ranked, threads, ranking.config.thread_score_weight)
    if lift:
        ranking.record("thread", lift, add=True)
        ranking.ranked = with_bonus(ranking.ranked, lift)
