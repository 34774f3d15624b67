"""Moving a workspace on PostgreSQL (``shared/transfer.py``): how its vectors travel.

Vectors leave as pgvector's binary form (exact float32) and come back as its text form, which
``encode_vector`` writes with enough digits to round-trip every float32.
"""

from __future__ import annotations

import numpy as np

from kioku.storage.postgres.codec import encode_vector
from kioku.storage.shared.transfer import VectorForm


def _decode_vector(sent: bytes) -> np.ndarray:
    # vector_send: int16 dimension, int16 unused, then big-endian float4s.
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)


VECTOR_FORM = VectorForm(
    "vector_send(embedding) AS vector", "%s::vector", _decode_vector, encode_vector
)
