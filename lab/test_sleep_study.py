"""The Sleep study runs end to end on a tiny corpus (the real one: docs/benchmarks.md)."""

from __future__ import annotations

from sleep_study import SCENARIOS, markdown, run_sleep_study, with_copies

from kioku.benchmark.data import Corpus, Doc, Question
from kioku.runtime import Runtime


def test_copies_repeat_every_fifth_turn_under_its_own_key() -> None:
    docs = [Doc(f"D1:{i}", f"turn {i}", f"t:{i}") for i in range(12)]
    copies = with_copies(Corpus("c", docs, []))[len(docs) :]
    assert [d.key for d in copies] == ["D1:4", "D1:9"]
    assert all(d.source_uri.endswith(":copy") for d in copies)


def test_the_study_merges_the_copies_and_scores_both_scenarios(runtime: Runtime) -> None:
    docs = [
        Doc(f"D1:{i}", f"turn {i}: {animal} likes {food}", f"t:{i}")
        for i, (animal, food) in enumerate(
            (a, f) for a in ("kiwi", "owl", "fox", "eel") for f in ("rice", "figs", "tea")
        )
    ]
    questions = [
        Question(f"q{i}", docs[i].text.split(": ")[1], (docs[i].key,), 1) for i in range(6)
    ]
    results = run_sleep_study(runtime, [Corpus("locomo-tiny", docs, questions)])
    assert list(results["scenarios"]) == list(SCENARIOS)
    plain, copied = (results["scenarios"][name] for name in SCENARIOS)
    assert plain["memories"] == 12 and copied["memories"] == 14
    # Exact copies are near-duplicates whatever the embedder: both pairs merge, under one key.
    assert copied["sleep"]["merges_of_copies"] == 2
    assert copied["sleep"]["gold_turns_absorbed_by_another_turn"] == []
    assert plain["before"]["all"]["n"] == 6 and "cat1" in plain["after"]
    assert markdown(results).count("\n") == 1 + 2 * len(SCENARIOS)
