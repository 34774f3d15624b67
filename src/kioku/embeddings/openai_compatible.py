"""An embedder over any OpenAI-compatible ``/embeddings`` API (OpenAI, Ollama, vLLM, TEI)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from kioku.embeddings.base import normalize_rows

_BATCH = 64


class OpenAICompatibleEmbedder:
    """POSTs ``{"model", "input"}`` to ``{base_url}/embeddings``; probes ``dim`` on first use."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        dimensions: int | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self._model = model
        self._dimensions = dimensions
        self.name = f"openai:{model}" + (f":{dimensions}" if dimensions else "")
        self._dim = dimensions

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        body: dict[str, object] = {"model": self._model, "input": list(texts)}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        response = self._client.post("/embeddings", json=body)
        response.raise_for_status()
        data = sorted(response.json()["data"], key=lambda item: item["index"])
        if len(data) != len(texts):
            raise ValueError(f"embedding API returned {len(data)} vectors for {len(texts)} texts")
        return normalize_rows(np.array([item["embedding"] for item in data], dtype=np.float32))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(texts[i : i + _BATCH]) for i in range(0, len(texts), _BATCH)]
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([text])[0]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
