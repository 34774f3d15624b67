"""What the graph, the cache and the embedder agree on (importable without loading onnx)."""

RECIPE = 2
"""Bump when the graph or the quantisation changes: it is part of the model's identity."""
INPUT = "embeddings"
OUTPUT = "pooled"
