"""A reranker behind an HTTP ``/rerank`` endpoint: a self-hosted TEI, or any service that
speaks the Cohere shape (Cohere, Jina, Voyage, Infinity, vLLM, LiteLLM...).

``tei``:    POST {"query", "texts", "truncate": true}            → [{"index", "score"}]
``cohere``: POST {"model", "query", "documents"}                  → {"results": [{"index",
            "relevance_score"}]} (Voyage answers the same list under ``data``)

The URL is the endpoint itself (``http://tei:8080/rerank``, ``https://api.cohere.com/v2/rerank``).
Every failure becomes a ``RerankError`` whose reason names what went wrong and never the URL
or the key: the reason is shown in recall responses and written to logs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import httpx

from kioku.rerankers.base import RerankError

RerankFormat = Literal["tei", "cohere"]


class HTTPReranker:
    """POSTs one request per recall to ``url`` and reads one score per text back."""

    def __init__(
        self,
        url: str,
        *,
        format: RerankFormat = "tei",
        model: str = "",
        api_key: str = "",
        timeout: float = 1.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._url = url
        self._format: RerankFormat = format
        self._model = model
        self._http = httpx.Client(
            headers=headers, timeout=timeout, transport=transport, follow_redirects=False
        )
        self.name = f"{format}:{model}" if model else format

    def score(self, query: str, texts: Sequence[str]) -> list[float | None]:
        if not texts:
            return []
        if self._format == "tei":
            body: dict[str, Any] = {"query": query, "texts": list(texts), "truncate": True}
        else:
            body = {"query": query, "documents": list(texts)}
            if self._model:
                body["model"] = self._model
        try:
            response = self._http.post(self._url, json=body)
        except httpx.TimeoutException:
            raise RerankError("timed out") from None
        except httpx.HTTPError as exc:  # the message may carry the URL: the type is enough
            raise RerankError(f"unreachable ({type(exc).__name__})") from None
        if response.status_code != 200:
            hint = " (check KIOKU_RERANKER_API_KEY)" if response.status_code in (401, 403) else ""
            raise RerankError(f"HTTP {response.status_code}{hint}")
        try:
            reply = response.json()
        except ValueError:
            raise RerankError("malformed reply: not JSON") from None
        return parse_scores(reply, len(texts), self._format)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()


def parse_scores(reply: object, count: int, format: RerankFormat) -> list[float | None]:
    """One score per text from a reply in ``format``; strict about shape, so that a reply
    from the wrong kind of service fails here rather than reordering recall at random."""
    if format == "tei":
        items, key = reply, "score"
    else:
        body = reply if isinstance(reply, dict) else {}
        items = body.get("results", body.get("data"))
        key = "relevance_score"
    if not isinstance(items, list) or not items:
        raise RerankError(f"malformed reply: expected a non-empty {format} result list")
    scores: list[float | None] = [None] * count
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get(key) if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < count or scores[index] is not None:
            raise RerankError("malformed reply: an index is missing, repeated or out of range")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise RerankError(f"malformed reply: {key} is not a number")
        if not math.isfinite(score):
            raise RerankError(f"malformed reply: {key} is not finite")
        scores[index] = float(score)
    return scores
