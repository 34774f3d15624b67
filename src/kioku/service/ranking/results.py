"""A ranking's head as recall results: each row loaded in full, each score's breakdown built
from what the stages recorded (``pipeline.STAGES``' ``adds``)."""

from __future__ import annotations

from kioku.models import RecallHit, ScoreBreakdown
from kioku.service.ranking.pipeline import STAGES
from kioku.service.ranking.state import Ranking
from kioku.service.views import memory_view
from kioku.storage.ports import MemoryReads

_FILLED = {stage.adds.field: stage.adds for stage in STAGES if stage.adds is not None}


LegRanks = dict[str, tuple[int, float]]


def breakdown(
    ranking: Ranking, memory_id: str, lexical_ranks: LegRanks, vector_ranks: LegRanks
) -> ScoreBreakdown:
    """How ``memory_id``'s score was made: each leg's raw score and rank (``Ranking.leg_rank``),
    then what each stage that touched it recorded."""
    lexical = lexical_ranks.get(memory_id)
    vector = vector_ranks.get(memory_id)
    fields: dict[str, float | None] = {}
    for name, spec in _FILLED.items():
        value = ranking.effects.get(name, {}).get(memory_id)
        if value is None:
            fields[name] = spec.default
        else:
            fields[name] = value if spec.places is None else round(value, spec.places)
    return ScoreBreakdown(
        lexical=None if lexical is None else round(lexical[1], 6),
        lexical_rank=None if lexical is None else lexical[0],
        vector=None if vector is None else round(vector[1], 6),
        vector_rank=None if vector is None else vector[0],
        **fields,  # type: ignore[arg-type]
    )


def hits(ranking: Ranking, store: MemoryReads, ranked: list[tuple[float, str]]) -> list[RecallHit]:
    """``ranked`` as results; only these rows are loaded in full (content can be up to 1 MiB
    each). A memory purged since the legs ran is skipped."""
    rows = store.get_memories(ranking.ws, [memory_id for _, memory_id in ranked])
    lexical_ranks, vector_ranks = ranking.leg_rank("lexical"), ranking.leg_rank("vector")
    found: list[RecallHit] = []
    for score, memory_id in ranked:
        row = rows.get(memory_id)
        if row is None:
            continue
        found.append(
            RecallHit(
                **memory_view(row).model_dump(),
                score=round(score, 8),
                score_breakdown=breakdown(ranking, memory_id, lexical_ranks, vector_ranks),
            )
        )
    return found
