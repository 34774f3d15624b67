"""The graph-boost study runs end to end on a tiny corpus (the real one: docs/graph.md)."""

from __future__ import annotations

from graph_study import BOOSTS, STAGES, markdown, run_graph_study

from kioku.benchmark.data import Corpus, Doc, Question
from kioku.runtime import Runtime


def test_the_study_reports_every_stage_and_boost(runtime: Runtime) -> None:
    docs = [Doc(f"D1:{i}", f"turn {i} about kiwi number {i % 3}", f"t:{i}") for i in range(12)]
    questions = [
        Question(f"q{i}", f"kiwi number {i % 3}", (f"D1:{i}", f"D1:{i + 3}"), 1 + (i // 2) % 2)
        for i in range(8)
    ]
    results = run_graph_study(runtime, [Corpus("locomo-tiny", docs, questions)])
    assert results["held_out_questions"] == 4 and results["warm_up_questions"] == 4
    assert list(results["stages"]) == list(STAGES)
    for entry in results["stages"].values():
        assert list(entry["boost"]) == [str(beta) for beta in BOOSTS]
    assert results["stages"]["recall"]["edges"]["hebbian"] > 0
    assert results["baseline"]["all"]["n"] == 4 and "cat1" in results["baseline"]
    assert markdown(results).count("\n") == 2 + len(STAGES) * len(BOOSTS)
