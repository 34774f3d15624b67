"""The golden store is the same on every run (seeded ids) and complete before any question."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.eval.corpus import EvalInfraError, golden_runtime
from kioku.eval.golden import load_golden


def test_two_runs_name_every_document_alike() -> None:
    golden = load_golden()
    with golden_runtime(golden, FakeEmbedder()) as first:
        ids = dict(first.memory_ids)
    with golden_runtime(golden, FakeEmbedder()) as second:
        assert second.memory_ids == ids
    assert len(set(ids.values())) == len(golden.documents)


class _StarvedEmbedder(FakeEmbedder):
    """Fails one document, as the worker's time budget does on a starved machine."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if any("staging" in text.lower() for text in texts):
            raise TimeoutError("over its time budget")
        return super().embed_documents(texts)


def test_a_document_without_its_vector_is_no_measurement() -> None:
    with (
        pytest.raises(EvalInfraError, match="not fully embedded"),
        golden_runtime(load_golden(), _StarvedEmbedder()),
    ):
        pass
