"""Each language's mean direction in an embedder's space, measured once per model.

``kioku.search.language_means`` puts the vector leg's scores across languages on one scale
(pure maths over vectors); the means it takes are measured here, with the embedder, because
search imports no embedder (tests/test_structure.py). ``μ_L`` (``language_means``) is the mean
memory vector of language ``L``, ``ν_L`` (``query_means``) the mean query vector, both over the
built-in parallel sentences (``kioku.search.parallel``): what the sentences say cancels out
between the two sides, the language does not. Measured once per process and embedder model,
the first time a recall meets more than one language, and kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from kioku.embeddings.base import Embedder
from kioku.search.language import Language
from kioku.search.parallel import PARALLEL

_MEANS: dict[tuple[str, str], dict[Language, np.ndarray]] = {}
_LOCK = threading.Lock()


def language_means(embedder: Embedder) -> dict[Language, np.ndarray]:
    """The mean memory vector of each language the parallel sentences cover (English stands
    for ``other``), measured once per embedder model and kept."""
    return _measured(embedder, "passage", embedder.embed_documents)


def query_means(embedder: Embedder) -> dict[Language, np.ndarray]:
    """The same for the sentences embedded as queries (``ν_L``): a query-side model such as
    multilingual-e5 places queries and passages of one language in different directions."""

    def embed_queries(texts: Sequence[str]) -> np.ndarray:
        return np.stack([embedder.embed_query(text) for text in texts])

    return _measured(embedder, "query", embed_queries)


def _measured(
    embedder: Embedder, side: str, embed: Callable[[Sequence[str]], np.ndarray]
) -> dict[Language, np.ndarray]:
    cached = _MEANS.get((embedder.name, side))
    if cached is not None:
        return cached
    with _LOCK:
        cached = _MEANS.get((embedder.name, side))
        if cached is None:
            english = embed([english for english, _ in PARALLEL])
            japanese = embed([japanese for _, japanese in PARALLEL])
            measured: dict[Language, np.ndarray] = {
                "other": english.mean(axis=0),
                "ja": japanese.mean(axis=0),
            }
            _MEANS[(embedder.name, side)] = cached = measured
    return cached
