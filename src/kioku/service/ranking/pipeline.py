"""The stages of recall's ranking, in the order they run: the one place that declares them.

Adding a stage (docs/architecture.md, *Adding a recall stage*): write a module in this
package with ``run(ranking, tools)``; declare it below with what it reads, the breakdown field
it fills (a field of ``models.ScoreBreakdown``) and its knob (a ``SearchConfig`` field that
turns it off at 0 or ``off``), if any; measure its cost and its held-out gain with
``scripts/ablation.py`` (each stage off in turn) and put both in docs/benchmarks.md's
ablation table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kioku.service import telemetry
from kioku.service.ranking import (
    fusion,
    graph_boost,
    languages,
    legs,
    pending,
    rerank,
    signals,
    suspicion,
    thread_neighbours,
    thread_scores,
    versions,
)
from kioku.service.ranking.state import Ranking, ReadAhead, Tools


@dataclass(frozen=True)
class Breakdown:
    """A ``ScoreBreakdown`` field a stage fills: how it is rounded and its value on a result
    the stage did not touch (or did not run for)."""

    field: str
    places: int | None
    default: float | None = None


@dataclass(frozen=True)
class Stage:
    name: str
    """Its name in ``Server-Timing``, on ``/metrics`` and in ``kioku bench``."""
    run: Callable[[Ranking, Tools], None]
    reads: str
    """What it reads besides the ranking so far (docs/architecture.md's table)."""
    adds: Breakdown | None = None
    knob: str | None = None
    """The ``SearchConfig`` field that turns it off (0 or ``off``), if any."""
    reranking: bool = False
    """Part of the re-ranking: off for ``recall(rerank=False)`` (the fused order)."""
    ablatable: bool = True
    """``False`` for the stages the ranking cannot do without, and for safety rules."""
    fills: str = ""
    """What it fills, said in words, when that is not one breakdown field (the legs)."""
    applies: Callable[[Ranking], bool] | None = None
    """Whether this recall needs it at all (e.g. the query's tense); not run, not timed."""
    read_ahead: ReadAhead | None = None
    """Its read of what it needs about some candidates, which ``legs`` does for the lexical
    candidates while the query embedding runs (idle time at LoCoMo scale); the stage then
    reads only the others."""

    def enabled(self, ranking: Ranking) -> bool:
        if self.name in ranking.disabled:
            return False
        if self.applies is not None and not self.applies(ranking):
            return False
        if self.knob is None:
            return True
        value = getattr(ranking.config, self.knob)
        return value != "off" if isinstance(value, str) else value > 0


THREAD = Breakdown("thread", 8)
"""Both thread stages add to one field: what a memory's thread gave it."""

STAGES: tuple[Stage, ...] = (
    Stage("legs", legs.run, "the lexical index; the query's embedding and the vector index",
          ablatable=False, fills="`lexical`, `vector` (score, rank)"),
    Stage("signals", signals.run, "each candidate's ranking signals, pending flag and text "
          "head (one read; the lexical candidates' ahead, while the query is embedded)",
          ablatable=False, read_ahead=signals.read_ahead),
    Stage("pending", pending.run, "the text of lexical candidates still waiting for a vector; "
          "the embedder", ablatable=False),
    Stage("languages", languages.run, "the stored vectors of the vector leg's candidates "
          "(`centered`, when they are in more than one language)", knob="language_calibration"),
    Stage("fusion", fusion.run, "-", adds=Breakdown("fused", 8, 0.0), ablatable=False),
    Stage("rerank", rerank.run, "-", adds=Breakdown("rerank", 6, 1.0), reranking=True),
    Stage("suspicion", suspicion.run, "-", adds=Breakdown("suspicious", None), reranking=True,
          ablatable=False),
    Stage("thread_scores", thread_scores.run, "-", adds=THREAD, knob="thread_score_weight",
          reranking=True),
    Stage("thread_neighbours", thread_neighbours.run, "the thread neighbours of the candidates "
          "(the lexical candidates' ahead, while the query is embedded)",
          adds=THREAD, knob="thread_weight", reranking=True,
          read_ahead=thread_neighbours.read_ahead),
    Stage("graph_boost", graph_boost.run, "the graph edges of the top candidates",
          adds=Breakdown("graph", 6), knob="graph_boost"),
    Stage("versions", versions.run, "summary, time and stored vector of the top candidates",
          adds=Breakdown("newer_first", 6), reranking=True, applies=versions.applies),
)  # fmt: skip

STAGE_NAMES = tuple(stage.name for stage in STAGES)
RERANKING = frozenset(stage.name for stage in STAGES if stage.reranking)
ABLATABLE = tuple(stage.name for stage in STAGES if stage.ablatable)
_NEED_CANDIDATES = STAGE_NAMES.index("rerank")
"""From here on, a stage with no candidate to work on is not run."""


def rank(ranking: Ranking, tools: Tools) -> Ranking:
    """Run every enabled stage in order, timing each (``ranking.timings``, ``/metrics``)."""
    ranking.read_ahead = tuple(
        stage.read_ahead
        for stage in STAGES
        if stage.read_ahead is not None and stage.enabled(ranking)
    )
    for index, stage in enumerate(STAGES):
        if index >= _NEED_CANDIDATES and not ranking.ranked:
            break
        if not stage.enabled(ranking):
            continue
        began = time.perf_counter()
        stage.run(ranking, tools)
        took = time.perf_counter() - began
        ranking.timings[stage.name] = took
        telemetry.recall_stage(stage.name, took)
    return ranking


def markdown_table() -> str:
    """The stage table of docs/architecture.md (between its ``recall-stages`` markers)."""
    lines = [
        "| stage | reads | fills | knob | off with `rerank=False` |",
        "|---|---|---|---|---|",
    ]
    for stage in STAGES:
        fills = stage.fills or (f"`{stage.adds.field}`" if stage.adds else "")
        knob = f"`{stage.knob}`" if stage.knob else ""
        off = "yes" if stage.reranking else ""
        lines.append(f"| `{stage.name}` | {stage.reads} | {fills} | {knob} | {off} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
