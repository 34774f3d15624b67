"""Stage ``graph_boost`` (knob ``graph_boost``, off by default): candidates associated with the
top results in the Hebbian graph move up, by at most ``1 + graph_boost`` (docs/graph.md);
only edges between trusted memories count when the recall asks for trusted memories only."""

from __future__ import annotations

from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    ranking.ranked, factors = tools.graph.boost(
        ranking.ws, ranking.ranked, ranking.config.graph_boost,
        trusted_only=ranking.flt.trust_tier == "trusted",
    )  # fmt: skip
    ranking.record("graph", factors)
