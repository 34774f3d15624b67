"""Thread scores in the ranking: every candidate moves part of the way up to the best score
found in its thread (docs/concepts.md, *Threads*).

A thread whose best memory matches a query strongly is where the answer most likely is: the
question names its topic in one turn, and the turns that answer it, a few lines further on,
may share few words with it. The neighbour share (``search.threads``) reaches only the turns
right before and after a hit; this reaches the rest of the thread among the candidates the
legs found. Each candidate's score becomes ``score + weight * (best - score)``, ``best`` being
the highest score among the candidates of its thread. A thread's best memory and memories in
no thread keep their score, so memories outside threads keep their order among themselves
and are not pushed down merely for being alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def thread_lift(
    ranked: Sequence[tuple[float, str]],
    threads: Mapping[str, tuple[str, str]],
    weight: float,
) -> dict[str, float]:
    """What each candidate of ``ranked`` gains: ``weight`` × (its thread's best score − its
    own); only the candidates that gain anything are in the answer.

    ``threads`` maps a candidate to its (context id, thread): thread ids are scoped to their
    context. A candidate absent from it is in no thread and gains nothing.
    """
    best: dict[tuple[str, str], float] = {}
    for score, memory_id in ranked:
        thread = threads.get(memory_id)
        if thread is not None and score > best.get(thread, float("-inf")):
            best[thread] = score
    lift: dict[str, float] = {}
    for score, memory_id in ranked:
        thread = threads.get(memory_id)
        gain = 0.0 if thread is None else weight * (best[thread] - score)
        if gain > 0:
            lift[memory_id] = gain
    return lift
