"""Embedders: the protocol, the bundled local model, an OpenAI-compatible client, a test fake."""

from kioku.embeddings.base import Embedder, normalize_rows
from kioku.embeddings.factory import make_embedder

__all__ = ["Embedder", "make_embedder", "normalize_rows"]
