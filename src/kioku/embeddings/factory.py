"""Build the configured embedder (the only place that reads embedder settings)."""

from __future__ import annotations

from kioku.embeddings.base import Embedder
from kioku.settings import Settings


def make_embedder(settings: Settings) -> Embedder | None:
    """``bundled`` (default, offline), ``openai`` (any compatible API) or ``none`` (BM25 only)."""
    if settings.embedder == "none":
        return None
    if settings.embedder == "openai":
        from kioku.embeddings.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(
            settings.openai_base_url,
            settings.openai_model,
            settings.openai_api_key,
            settings.openai_dimensions,
        )
    from kioku.embeddings.bundled import BundledEmbedder

    return BundledEmbedder()
