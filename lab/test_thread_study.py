"""The thread study runs end to end on a tiny corpus (the real one: docs/benchmarks.md)."""

from __future__ import annotations

from thread_study import WEIGHTS, markdown, run_thread_study

from kioku.benchmark.data import Corpus, Doc, Question
from kioku.runtime import Runtime


def test_a_turn_after_the_matching_one_is_found_with_threads_only(runtime: Runtime) -> None:
    docs = [
        Doc("D1:0", "Ken: which restaurant for the anniversary dinner?", "t:0", "s1", 0),
        Doc("D1:1", "Aiko: Sakura Tei by the river.", "t:1", "s1", 1),
    ] + [Doc(f"D2:{i}", f"Ken: the {w} was fine", f"t:{i}", "s2", i) for i, w in
         enumerate(("weather", "train", "meeting", "film", "bus", "lunch"))]  # fmt: skip
    questions = [Question("q0", "anniversary dinner restaurant", ("D1:1",), 4)]
    results = run_thread_study(runtime, [Corpus("locomo-conv-26", docs, questions)])
    assert [float(w) for w in results["weights"]] == list(WEIGHTS)
    off = results["weights"]["0.0"]["arms"]["bm25"]["dev"]["all"]
    on = results["weights"]["0.2"]["arms"]["bm25"]["dev"]["all"]
    assert off["recall@10"] == 0.0 and on["recall@10"] == 1.0  # no shared word: only the thread
    assert results["weights"]["0.2"]["latency"]["n"] == 1
    assert markdown(results).count("| 0.2 | hybrid | all |") == 1
