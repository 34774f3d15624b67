"""The side-by-side embedder arms of `kioku bench` (figures and the parity columns)."""

from __future__ import annotations

from kioku.benchmark.embedders import compare_embedders
from kioku.benchmark.report import embedders_section
from kioku.embeddings.fake import FakeEmbedder


def test_every_arm_is_measured_on_the_same_texts_against_the_first() -> None:
    arms = {
        "first": lambda: FakeEmbedder(name="fake-a"),
        "same": lambda: FakeEmbedder(name="fake-b"),
        "other": lambda: FakeEmbedder(dim=64, name="fake-c-seeded"),
    }
    queries = ["where is the office", "東京のオフィス"]
    docs = ["the office is in Shibuya", "we met at the cafe", "本社は渋谷区"]
    results = compare_embedders(arms, queries, docs, docs[2:])
    assert list(results) == ["first", "same", "other"]
    first = results["first"]
    assert first["model"] == "fake-a"
    assert first["query_embedding_ms"]["p50"] >= 0
    assert first["locomo_docs_per_s"] > 0 and first["jsquad_docs_per_s"] > 0
    assert results["same"]["locomo_cosine_vs_first"]["min"] > 0.999  # same vectors
    section = embedders_section(results)
    assert "Embedding runtimes, side by side" in section and "fake-b" in section
