"""The bundled embedder's setup error (importable without loading ONNX)."""


class ModelCacheError(RuntimeError):
    """The converted model cannot be built or written (the message says what to do)."""
