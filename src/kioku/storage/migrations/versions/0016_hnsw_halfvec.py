"""The HNSW indexes over half-precision vectors (PostgreSQL; SQLite: nothing to do).

Each ``ix_memories_hnsw_<dim>`` (one partial expression index per dimension in use, made at
run time: ``kioku/storage/postgres/embeddings.py``) indexed ``embedding::vector(<dim>)``. At a
million memories in one context the graph walk read ~1.5 GB of float32 index pages; over
``l2_normalize(embedding)::halfvec(<dim>)`` (``halfvec_cosine_ops``) the index is half the size
and the walk reads half as much, for the same recall@10 against exact search
(docs/benchmarks-postgres-scale.md, issue 21). Normalised first: cosine does not change, and
every component then fits a half float (a raw cast refuses components beyond 65,504, and
would refuse to store such a vector). The column stays float32: the search leg orders
the walk by the half-precision distance and returns the float32 one, so scores do not change.

Upgrade rebuilds every existing ``ix_memories_hnsw_<dim>`` over ``halfvec`` under the same
name (a long statement on a big table: it holds a SHARE lock, writes wait); downgrade
rebuilds them over ``vector`` (dimensions up to 2,000, pgvector's limit for that type).

Revision ID: 0016_hnsw_halfvec
Revises: 0015_lexical_term_bounds
"""

from __future__ import annotations

import re

from alembic import op
from sqlalchemy import text

revision = "0016_hnsw_halfvec"
down_revision = "0015_lexical_term_bounds"
branch_labels = None
depends_on = None

_NAME = re.compile(r"^ix_memories_hnsw_(\d+)$")
VECTOR_MAX_DIMS = 2000
"""The most dimensions pgvector's HNSW indexes for ``vector`` (``halfvec``: 4,000)."""


def _dims() -> list[int]:
    """The dimensions that have an HNSW index in the current schema."""
    rows = op.get_bind().execute(
        text(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories' "
            "AND schemaname = current_schema()"
        )
    )
    return sorted(int(m.group(1)) for (name,) in rows if (m := _NAME.match(str(name))))


def _rebuild(kind: str, dims: list[int]) -> None:
    operand = "l2_normalize(embedding)" if kind == "halfvec" else "embedding"
    for dim in dims:
        # Parameters of the index as embeddings.py makes it (m 16, ef_construction 64).
        op.execute(f"DROP INDEX IF EXISTS ix_memories_hnsw_{dim}")
        op.execute(
            f"CREATE INDEX ix_memories_hnsw_{dim} ON memories USING hnsw "
            f"(({operand}::{kind}({dim})) {kind}_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE vector_dims(embedding) = {dim}"
        )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _rebuild("halfvec", _dims())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    dims = _dims()
    too_wide = [dim for dim in dims if dim > VECTOR_MAX_DIMS]
    for dim in too_wide:  # vector cannot index them: search stays exact for that dimension
        op.execute(f"DROP INDEX IF EXISTS ix_memories_hnsw_{dim}")
    _rebuild("vector", [dim for dim in dims if dim <= VECTOR_MAX_DIMS])
