"""Running the questions through ``recall`` once per arm: rankings for the metrics, wall times."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kioku.benchmark.data import Question
from kioku.models import RecallRequest
from kioku.runtime import Runtime
from kioku.service.principal import Principal

ARMS: dict[str, tuple[str, ...]] = {
    "hybrid": ("lexical", "vector"),
    "bm25": ("lexical",),
    "vector": ("vector",),
}
WARMUP = 5


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def available_arms(runtime: Runtime) -> list[str]:
    """The arms this runtime can run: without an embedder only ``bm25`` means anything."""
    if runtime.embedder is None:
        return ["bm25"]
    return list(ARMS)


@dataclass
class ArmRun:
    """One arm over one or more contexts: a ranking of doc keys per question, and wall times."""

    rankings: dict[str, list[str]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)


def timed_recall(
    runtime: Runtime, principal: Principal, context: str, query: str, k: int, legs: Sequence[str]
) -> tuple[list[str], float]:
    """One ``recall`` (query embedding included); returns (memory ids best first, milliseconds)."""
    request = RecallRequest(query=query, k=k)
    began = time.perf_counter()
    result = runtime.recall.recall(principal, context, request, legs=tuple(legs))
    elapsed = (time.perf_counter() - began) * 1000.0
    return [hit.id for hit in result.results], elapsed


def run_arm(
    runtime: Runtime,
    principal: Principal,
    context: str,
    questions: Sequence[Question],
    keys: Mapping[str, str],
    legs: Sequence[str],
    *,
    k: int,
    into: ArmRun,
    advance: Callable[[int], None] | None = None,
) -> None:
    """Ask every question of one context: ``WARMUP`` untimed queries first, then all, timed.

    ``keys`` maps memory ids to document keys; rankings are stored as keys.
    """
    if not questions:
        return
    for i in range(WARMUP):
        timed_recall(runtime, principal, context, questions[i % len(questions)].text, k, legs)
    for question in questions:
        ids, elapsed = timed_recall(runtime, principal, context, question.text, k, legs)
        into.rankings[question.qid] = [keys.get(memory_id, "?") for memory_id in ids]
        into.latencies_ms.append(elapsed)
        if advance is not None:
            advance(1)
