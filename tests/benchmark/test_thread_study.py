"""The thread study runs end to end on a tiny corpus (the real one: docs/benchmarks.md), and
the LoCoMo loader declares each session as a thread through the public remember fields."""

from __future__ import annotations

from pathlib import Path

from kioku.benchmark.data import Corpus, Doc, Question, locomo_corpus
from kioku.benchmark.ingest import memory_item
from kioku.benchmark.threads import WEIGHTS, markdown, run_thread_study
from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import open_runtime
from tests.conftest import make_settings


def test_the_locomo_loader_declares_sessions_as_threads() -> None:
    conversation = {
        "speaker_a": "A",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "hello"}],
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "again"}],
    }  # fmt: skip
    corpus = locomo_corpus("conv-0", conversation)
    assert [(d.thread, d.position) for d in corpus.docs] == [
        ("session_1", 0), ("session_1", 1), ("session_2", 0)
    ]  # fmt: skip
    item = memory_item(corpus.docs[1])
    assert (item["thread"], item["position"]) == ("session_1", 1)


def test_a_turn_after_the_matching_one_is_found_with_threads_only(tmp_path: Path) -> None:
    docs = [
        Doc("D1:0", "Ken: which restaurant for the anniversary dinner?", "t:0", "s1", 0),
        Doc("D1:1", "Aiko: Sakura Tei by the river.", "t:1", "s1", 1),
    ] + [Doc(f"D2:{i}", f"Ken: the {w} was fine", f"t:{i}", "s2", i) for i, w in
         enumerate(("weather", "train", "meeting", "film", "bus", "lunch"))]  # fmt: skip
    questions = [Question("q0", "anniversary dinner restaurant", ("D1:1",), 4)]
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        results = run_thread_study(runtime, [Corpus("locomo-conv-26", docs, questions)])
    finally:
        runtime.close()
    assert [float(w) for w in results["weights"]] == list(WEIGHTS)
    off = results["weights"]["0.0"]["arms"]["bm25"]["dev"]["all"]
    on = results["weights"]["0.2"]["arms"]["bm25"]["dev"]["all"]
    assert off["recall@10"] == 0.0 and on["recall@10"] == 1.0  # no shared word: only the thread
    assert results["weights"]["0.2"]["latency"]["n"] == 1
    assert markdown(results).count("| 0.2 | hybrid | all |") == 1
