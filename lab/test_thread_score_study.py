"""The thread-score study runs end to end on a tiny corpus (the real one: docs/benchmarks.md):
every weight, the hybrid and bm25 arms, the setting named in its table."""

from __future__ import annotations

from thread_score_study import WEIGHTS, run_thread_score_study
from thread_study import markdown

from kioku.benchmark.data import Corpus, Doc, Question
from kioku.runtime import Runtime


def test_the_study_asks_every_weight_and_tells_them_apart(runtime: Runtime) -> None:
    docs = [
        Doc("D1:0", "Ken: dinner plans for the anniversary dinner dinner?", "t:0", "s1", 0),
        Doc("D1:1", "Aiko: let me think.", "t:1", "s1", 1),
        Doc("D1:2", "Aiko: still thinking.", "t:2", "s1", 2),
        Doc("D1:3", "Aiko: Sakura Tei for dinner.", "t:3", "s1", 3),
        Doc("D2:0", "Ken: the anniversary of the train line.", "t:4", "s2", 0),
    ] + [Doc(f"D3:{i}", f"Ken: the {w} was fine", f"t:{5 + i}", "s3", i) for i, w in
         enumerate(("weather", "meeting", "film", "bus", "lunch"))]  # fmt: skip
    questions = [Question("q0", "anniversary dinner", ("D1:3",), 4)]
    results = run_thread_score_study(runtime, [Corpus("locomo-conv-26", docs, questions)])
    assert [float(w) for w in results["weights"]] == list(WEIGHTS)
    assert set(results["weights"]["0.0"]["arms"]) == {"hybrid", "bm25"}
    assert markdown(results).startswith("| thread_score_weight |")
    assert results["weights"]["0.26"]["latency"]["n"] == 1
