"""Each term's largest BM25 share, bounded from the statistics table (PostgreSQL only).

The lexical leg's cutoff proves its answer with max-score's certificate: a memory the cutoff
did not score holds only left-out terms, and can reach the top k only if their largest
possible shares add up to the k-th score. With df alone that share is idf x (k1 + 1), the
saturation limit, which no memory comes near (a term once in a memory of average length
scores idf x 1): at a million memories the certificate could rarely rule anything out
(docs/benchmarks-postgres-scale.md). Two columns on ``lexical_term_stats`` bound it tighter:

- ``max_tf``: the most occurrences of the term in one memory of the scope;
- ``min_length_per_tf``: the least ``lexical_length / tf`` over the memories holding it.

A term's share idf x tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)) equals
idf (k1 + 1) / (1 + k1 ((1 - b) / tf + (b / avgdl) (dl / tf))): it grows with tf and falls
with dl / tf, so no memory's share exceeds the same expression at ``max_tf`` and
``min_length_per_tf`` (``lexical_cutoff.term_bound``), whatever avgdl is at query time.

The statistics trigger keeps them in the writing transaction, like df: every memory that
enters the scope (insert, restore from soft delete, an update of its tokens or length, a move
between contexts) raises ``max_tf`` and lowers ``min_length_per_tf`` if it goes past them (an
update that leaves df as it was still writes the term's row when its new version holds the
term). A memory that leaves (delete, soft delete, the old version of an update) changes
neither: recomputing a maximum would mean reading every posting of the term. So the bounds
may stay loose (too high) after deletes and edits, never too low, and they are exact again
whenever the term's last memory leaves the scope (its row is deleted with df 0) or the
statistics are rebuilt. A loose bound only makes the certificate search a little more.

Revision ID: 0015_lexical_term_bounds
Revises: 0014_memory_tags_index
"""

from __future__ import annotations

import importlib

from alembic import op

revision = "0015_lexical_term_bounds"
down_revision = "0014_memory_tags_index"
branch_labels = None
depends_on = None

_CHANGED = (
    "o.lexical_tokens IS DISTINCT FROM n.lexical_tokens "
    "OR o.lexical_length IS DISTINCT FROM n.lexical_length "
    "OR (o.deleted_at IS NULL) <> (n.deleted_at IS NULL) "
    "OR o.context_id IS DISTINCT FROM n.context_id"
)
_TF = "greatest(cardinality(u.positions), 1)"
"""A term's occurrences in a memory, as the lexical leg's scoring counts them."""

FUNCTION = f"""
CREATE OR REPLACE FUNCTION memories_lexical_stats() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ws text[]; ctx text[]; toks tsvector[]; lens bigint[]; signs bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(workspace_id), array_agg(context_id), array_agg(lexical_tokens),
               array_agg(lexical_length::bigint), array_agg(1::bigint)
          INTO ws, ctx, toks, lens, signs
          FROM new_rows WHERE deleted_at IS NULL;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(workspace_id), array_agg(context_id), array_agg(lexical_tokens),
               array_agg(lexical_length::bigint), array_agg(-1::bigint)
          INTO ws, ctx, toks, lens, signs
          FROM old_rows WHERE deleted_at IS NULL;
    ELSE
        SELECT array_agg(c.workspace_id), array_agg(c.context_id), array_agg(c.lexical_tokens),
               array_agg(c.lexical_length::bigint), array_agg(c.sign)
          INTO ws, ctx, toks, lens, signs
          FROM (
            SELECT o.workspace_id, o.context_id, o.lexical_tokens, o.lexical_length,
                   -1::bigint AS sign
              FROM old_rows o JOIN new_rows n ON n.workspace_id = o.workspace_id AND n.id = o.id
             WHERE o.deleted_at IS NULL AND ({_CHANGED})
            UNION ALL
            SELECT n.workspace_id, n.context_id, n.lexical_tokens, n.lexical_length, 1
              FROM old_rows o JOIN new_rows n ON n.workspace_id = o.workspace_id AND n.id = o.id
             WHERE n.deleted_at IS NULL AND ({_CHANGED})
          ) c;
    END IF;
    IF ws IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO lexical_scope_stats AS s (workspace_id, context_id, n, total_length)
    SELECT x.w, x.c, sum(x.sg), sum(x.sg * x.l)
      FROM unnest(ws, ctx, lens, signs) AS x(w, c, l, sg)
     GROUP BY x.w, x.c
     ORDER BY x.w, x.c
    ON CONFLICT (workspace_id, context_id) DO UPDATE
       SET n = s.n + excluded.n, total_length = s.total_length + excluded.total_length;
    -- The bounds only see the memories entering the scope (sign 1): one leaving keeps them
    -- (loose, never too low). A term whose df nets to zero is still written when a memory
    -- entering holds it (an edit that raised its tf).
    INSERT INTO lexical_term_stats AS s
           (workspace_id, context_id, term, df, max_tf, min_length_per_tf)
    SELECT x.w, x.c, u.lexeme, sum(x.sg),
           coalesce(max({_TF}) FILTER (WHERE x.sg > 0), 0),
           coalesce(min(x.l::float8 / {_TF}) FILTER (WHERE x.sg > 0), 'Infinity')
      FROM unnest(ws, ctx, toks, lens, signs) AS x(w, c, t, l, sg), unnest(x.t) AS u
     GROUP BY x.w, x.c, u.lexeme HAVING sum(x.sg) <> 0 OR bool_or(x.sg > 0)
     ORDER BY x.w, x.c, u.lexeme
    ON CONFLICT (workspace_id, context_id, term) DO UPDATE
       SET df = s.df + excluded.df,
           max_tf = greatest(s.max_tf, excluded.max_tf),
           min_length_per_tf = least(s.min_length_per_tf, excluded.min_length_per_tf);
    IF -1 = ANY(signs) THEN
        DELETE FROM lexical_scope_stats s
         USING (SELECT DISTINCT x.w, x.c FROM unnest(ws, ctx, signs) AS x(w, c, sg)
                 WHERE x.sg < 0) d
         WHERE s.workspace_id = d.w AND s.context_id = d.c AND s.n <= 0;
        DELETE FROM lexical_term_stats s
         USING (SELECT DISTINCT x.w, x.c, u.lexeme
                  FROM unnest(ws, ctx, toks, signs) AS x(w, c, t, sg), unnest(x.t) AS u
                 WHERE x.sg < 0) d
         WHERE s.workspace_id = d.w AND s.context_id = d.c AND s.term = d.lexeme
           AND s.df <= 0;
    END IF;
    RETURN NULL;
END $$
"""

BACKFILL = f"""
UPDATE lexical_term_stats s SET max_tf = b.max_tf, min_length_per_tf = b.min_length_per_tf
  FROM (
    SELECT m.workspace_id, m.context_id, u.lexeme AS term, max({_TF}) AS max_tf,
           min(m.lexical_length::float8 / {_TF}) AS min_length_per_tf
      FROM memories m, unnest(m.lexical_tokens) AS u
     WHERE m.deleted_at IS NULL GROUP BY 1, 2, 3
  ) b
 WHERE s.workspace_id = b.workspace_id AND s.context_id = b.context_id AND s.term = b.term
"""

POSTGRES = [
    # Defaults that bound nothing (the saturation limit) until the backfill sets them.
    "ALTER TABLE lexical_term_stats ADD COLUMN max_tf bigint NOT NULL DEFAULT 1000000000, "
    "ADD COLUMN min_length_per_tf float8 NOT NULL DEFAULT 0",
    "SELECT set_config('kioku.workspace_id', '*', true)",
    BACKFILL,
    "ALTER TABLE lexical_term_stats ALTER COLUMN max_tf DROP DEFAULT, "
    "ALTER COLUMN min_length_per_tf DROP DEFAULT",
    FUNCTION,
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    previous = importlib.import_module("kioku.storage.migrations.versions.0013_lexical_stats")
    op.execute(previous.FUNCTION.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute("ALTER TABLE lexical_term_stats DROP COLUMN max_tf, DROP COLUMN min_length_per_tf")
