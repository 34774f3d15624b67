"""The synthetic fill (text + vectors) and the recording embedder the scale run relies on."""

from __future__ import annotations

import numpy as np
import pytest

from kioku.benchmark.data import Doc
from kioku.benchmark.ingest import RecordingEmbedder
from kioku.benchmark.scale import SyntheticText, synthetic_vectors
from kioku.embeddings.fake import FakeEmbedder

DOCS = [
    Doc("D1:1", "Ann (1 May, 2023): I adopted a cat named Milo.", "u"),
    Doc("D1:2", "Bob (2 May, 2023): My guitar lessons start on Monday.", "u"),
]


def test_synthetic_text_is_seeded_and_uses_real_speakers_and_words() -> None:
    first = SyntheticText(DOCS, seed=3).texts(20)
    assert first == SyntheticText(DOCS, seed=3).texts(20)
    assert first != SyntheticText(DOCS, seed=4).texts(20)
    words = {"I", "adopted", "a", "cat", "named", "Milo", "My", "guitar", "lessons", "start",
             "on", "Monday"}  # fmt: skip
    for text in first:
        speaker, rest = text.split(" (", 1)
        assert speaker in {"Ann", "Bob"}
        body = rest.split("): ", 1)[1].rstrip(".")
        assert set(body.split()) <= words


def test_synthetic_vectors_are_unit_length_near_their_source() -> None:
    rng = np.random.default_rng(0)
    sources = FakeEmbedder(dim=384).embed_documents([d.text for d in DOCS])
    vectors = synthetic_vectors(rng, sources, 500, cosine=0.8)
    assert vectors.shape == (500, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    best = (vectors @ sources.T).max(axis=1)
    assert best.mean() == pytest.approx(0.8, abs=0.05)


def test_recording_embedder_serves_only_when_asked() -> None:
    inner = FakeEmbedder()
    recorder = RecordingEmbedder(inner)
    texts = ["one", "two", "one"]
    first = recorder.embed_documents(texts)
    assert inner.calls == 3  # while timed: exactly the real work, duplicates included
    recorder.serve = True
    again = recorder.embed_documents([*texts, "three"])
    assert inner.calls == 4  # only the new text was embedded
    assert np.array_equal(again[:3], first)
    assert np.array_equal(recorder.embed_query("one"), inner.embed_query("one"))
