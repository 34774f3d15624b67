"""Records that move a whole workspace between databases (``kioku export`` / ``kioku import``).

A dump is every row of one workspace, as stored: ids, timestamps, counters, provenance and
vectors, soft-deleted and superseded memories included. Policy (the file format, validation,
what may be imported where) lives in ``service/transfer.py``; a backend only reads and writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from kioku.storage.records import (
    ConnectorRow,
    ContextRow,
    EdgeRow,
    FeedbackRow,
    MemoryRow,
    StateRow,
)

IdKind = Literal["connector", "context", "memory", "feedback"]
"""The rows whose ids an import keeps: they must not exist anywhere in the target database."""


@dataclass(frozen=True)
class MemoryDump:
    """One memory with every column, and its vector (``None`` unless ``embedding_status`` is
    ``ready``). The vector's model is the memory's own: a soft-deleted memory keeps the vector
    of a model its context may since have dropped."""

    row: MemoryRow
    embedding_model: str | None
    vector: np.ndarray | None
    lexical_tokens: str = ""
    """Restore only: the tokenizer's output for the text (never dumped; recomputed on import)."""


TransferRow = ConnectorRow | ContextRow | MemoryDump | EdgeRow | FeedbackRow | StateRow
"""What a dump yields and a restore takes, in dependency order: connectors, contexts,
memories, edges, feedback, state. The rows' own ``workspace_id`` (and a feedback event's
``seq``) are ignored on restore: the target workspace is a parameter, and events get new
sequence numbers in file order."""
