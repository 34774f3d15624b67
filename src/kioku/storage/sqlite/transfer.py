"""Moving a workspace on SQLite (``shared/transfer.py``): how its vectors travel.

The vectors' source of truth is ``memories.embedding``; the file cache beside the database is
keyed by context and ``vector_generation``. A restore bumps the generation of every context it
writes and drops their cache files, so recall rebuilds the index from the restored rows.
"""

from __future__ import annotations

from kioku.storage.shared.transfer import VectorForm
from kioku.storage.sqlite.codec import decode_vector, encode_vector

VECTOR_FORM = VectorForm("embedding AS vector", "%s", decode_vector, encode_vector)
"""Vectors travel as stored: little-endian float32 bytes."""
